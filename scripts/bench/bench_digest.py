"""Daily digests on LoCoMo: do they mention the annotated events, against a first-N-sentences baseline?

Each LoCoMo session's date is a day and its conversation that day's session (days shared by several
conversations hold several sessions). The daily digest of every day is built deterministically (no
LLM), exactly as the `daily-digest` job builds it, and its bullets are read without their citation
links and headings. An event of `events.jsonl` counts as mentioned when at least THRESHOLD of its
content words (stopwords and words under three letters removed) appear in the digest of its day.
The baseline keeps each day's transcripts' first sentences, session by session in turn, up to the
digest's word count. Also reported: compression (transcript tokens / digest file tokens) and the
time per day.

Dreaming quality on the same data: the daily-digest job runs for every day through the real job
runner on a fresh corpus holding the LoCoMo transcripts, then the dream job. Reported: proposals
created, the share whose statement is grounded in the session turn its source cites (at least
GROUNDED_CHECK of its content words in that turn, checked here independently of the job), and
duplicates (proposals with the same statement, plus what a forced second dream run creates: 0).

    python scripts/bench/bench_digest.py [--threshold 0.5] [--json]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import unpack
from _locomo import content_words, events, mentioned

from dory.config import DigestSettings
from dory.index.embedders import default_token_counter
from dory.jobs import digest_daily
from dory.jobs.digest import cited
from dory.models import ReindexRequest
from dory.sessions import extract
from dory.sessions.transcript import parse_session


def days(corpus: Path) -> dict[dt.date, digest_daily.Day]:
    """The LoCoMo sessions grouped into days, as the daily digest job groups them."""
    out: dict[dt.date, digest_daily.Day] = {}
    for file in sorted(corpus.glob("logs/sessions/locomo/*/session-*.md")):
        rel = file.relative_to(corpus).as_posix()
        session = parse_session(rel, file.read_bytes())
        day = digest_daily.local_day(session.updated or session.started)
        if day is None:
            continue
        out.setdefault(day, digest_daily.Day(day)).sessions.append(
            digest_daily.DaySession(rel, session, session.turns())
        )
    return out


def readable(page: str) -> str:
    """The digest's bullets without their citations (the text a reader gets)."""
    lines = []
    for line in page.split("---", 2)[-1].splitlines():
        bullet = cited(line)
        if bullet is not None:
            lines.append(re.sub(r"\*\*|`", "", bullet[0]))
    return "\n".join(lines)


def lead(day: digest_daily.Day, words: int) -> str:
    """The first sentences of the day's sessions, taken one session at a time in turn, up to `words`."""
    queues = [extract.sentences([("user", m.text) for m in ds.turns]) for ds in day.sessions]
    taken: list[str] = []
    budget = words
    while budget > 0 and any(queues):
        for queue in queues:
            if queue and budget > 0:
                text = queue.pop(0).attributed()
                size = len(text.split())
                if size > budget:
                    return "\n".join(taken)
                taken.append(text)
                budget -= size
    return "\n".join(taken)


def run(threshold: float) -> dict[str, Any]:
    root = unpack("locomo")
    count = default_token_counter(None).count
    by_path = events(root)
    totals: dict[str, float] = defaultdict(float)
    per_session = DigestSettings().sentences_per_session
    for day in days(root / "corpus").values():
        started = time.perf_counter()
        digest = digest_daily.extractive(day, per_session)
        page = digest_daily.render(day, digest, "extractive").decode("utf-8")
        totals["seconds"] += time.perf_counter() - started
        text = readable(page)
        baseline = lead(day, len(text.split()))
        got, base = content_words(text), content_words(baseline)
        wanted = [e for ds in day.sessions for e in by_path.get(ds.path, [])]
        totals["events"] += len(wanted)
        totals["digest"] += sum(mentioned(e, got, threshold) for e in wanted)
        totals["lead"] += sum(mentioned(e, base, threshold) for e in wanted)
        totals["tokens_in"] += sum(count(m.text) for ds in day.sessions for m in ds.turns)
        totals["tokens_out"] += count(page)
        totals["words"] += len(text.split())
        totals["days"] += 1
        totals["sessions"] += len(day.sessions)
    return {
        "set": "locomo",
        "days": int(totals["days"]),
        "sessions": int(totals["sessions"]),
        "events": int(totals["events"]),
        "threshold": threshold,
        "events_mentioned": totals["digest"] / totals["events"],
        "lead_baseline_mentioned": totals["lead"] / totals["events"],
        "words_per_day": totals["words"] / totals["days"],
        "compression": totals["tokens_in"] / totals["tokens_out"],
        "ms_per_day": 1000 * totals["seconds"] / totals["days"],
    }


GROUNDED_CHECK = 0.8


def dreaming() -> dict[str, Any]:
    """Digest every LoCoMo day with the real job runner, dream once, check the proposals."""
    import os
    import shutil
    import tempfile

    from _common import make_service

    from dory.corpus.template import copy_template
    from dory.models import JobRunRequest
    from dory.sessions.transcript import message_at_line

    root = unpack("locomo")
    with tempfile.TemporaryDirectory(prefix="dory-dream-") as tmp:
        corpus = Path(tmp) / "corpus"
        copy_template(corpus)
        shutil.copytree(root / "corpus" / "logs", corpus / "logs", dirs_exist_ok=True)
        for file in (corpus / "logs").rglob("*.md"):
            os.utime(file, (0, 1_600_000_000))  # long finished: no session waits
        svc = make_service(corpus, Path(tmp) / "state", **{"embedder.backend": "none"})
        try:
            svc.reindex(ReindexRequest())
            started = time.perf_counter()
            for day in sorted(days(corpus)):
                svc.run_job(JobRunRequest(job="daily-digest", period=day.isoformat()))
            digest_seconds = time.perf_counter() - started
            started = time.perf_counter()
            first = svc.run_job(JobRunRequest(job="dream", period="2030-01-01"))
            dream_seconds = time.perf_counter() - started
            again = svc.run_job(JobRunRequest(job="dream", period="2030-01-01", force=True))
            proposals = svc.proposal_list().proposals
            grounded = 0
            for proposal in proposals:
                rel, _, line = (proposal.write.source or "").partition("#L")
                turn = message_at_line(parse_session(rel, (corpus / rel).read_bytes()), int(line or 0))
                statement = re.sub(r"^[A-Z][\w .'-]{0,30}: ", "", proposal.write.content)
                wanted = content_words(statement)
                grounded += bool(
                    turn and wanted and len(wanted & content_words(turn.text)) / len(wanted) >= GROUNDED_CHECK
                )
            statements = [" ".join(p.write.content.lower().split()) for p in proposals]
        finally:
            svc.close()
    return {
        "proposals": len(proposals),
        "grounded": grounded / len(proposals) if proposals else 0.0,
        "duplicates": len(statements) - len(set(statements)) + again.outputs.get("written", 0),
        "second_run_created": again.outputs.get("written", 0),
        "stopped": first.outputs.get("stopped", {}),
        "by_kind": dict(Counter(p.write.kind for p in proposals)),
        "digest_seconds": digest_seconds,
        "dream_seconds": dream_seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    res = run(args.threshold)
    dream = dreaming()
    if args.json:
        print(json.dumps({"digest": res, "dreaming": dream}, indent=2))
        return
    print(
        f"LoCoMo daily digests (deterministic): {res['days']} days, {res['sessions']} sessions, "
        f"{res['events']} annotated events, mention = ≥{res['threshold']:.0%} of an event's content words"
    )
    print(
        f"events mentioned: digest {res['events_mentioned']:.3f}   first-N-sentences baseline "
        f"{res['lead_baseline_mentioned']:.3f} (same length: {res['words_per_day']:.0f} words a day)"
    )
    print(
        f"compression: {res['compression']:.1f}x (transcript tokens / digest file tokens)   "
        f"{res['ms_per_day']:.1f} ms per day"
    )
    print(
        f"dreaming: {dream['proposals']} proposals {dream['by_kind']}, grounded {dream['grounded']:.3f} "
        f"(≥{GROUNDED_CHECK:.0%} of the statement's words in the cited turn), duplicates {dream['duplicates']} "
        f"(a forced second run created {dream['second_run_created']}); stopped by gates {dream['stopped']}"
    )
    print(f"job runner: all daily digests {dream['digest_seconds']:.1f} s, dream {dream['dream_seconds']:.1f} s")


if __name__ == "__main__":
    main()
