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
Also where they go: how many target a `core/` page (LoCoMo is two named people talking, so nothing
in it is about the corpus's owner: every core target is a misrouting).

Precision by hand-checked sample: the items extracted are the daily digests' Decisions bullets and
the proposals dreaming makes. SAMPLE of them are drawn at random with a fixed SEED (all of them when
there are fewer) and looked up in VERDICTS (`digest_verdicts.jsonl` next to this script: one line per
item a person read, `{"item", "verdict": "ok" | "wrong", "why"}`). Precision = ok / judged. Sampled
items nobody judged yet are counted and listed with `--unjudged`: read them and add their lines
before trusting the figure. What counts as ok:
- a digest decision: the sentence states a decision someone took (a choice made or committed to),
  not agreement, encouragement, a question or talk about deciding;
- a proposal: a durable decision, preference or fact worth a reviewer's time, on the right page (a
  person's statement about themselves on that person's page, never on core/user.md unless the
  corpus's owner said it), under a subject that names it in whole words.
Against lost decisions: of every digest decision judged ok in VERDICTS (whichever run it was drawn
from), how many are still extracted. Cut text is counted too: digest bullets, proposal ids and
subjects that end inside a word, and subjects that end on a function word ("…intro to my"), a sign
they were cut mid-clause.

To measure the code of another checkout (the "before" of a change), put it first on the path:
`PYTHONPATH=/path/to/checkout python scripts/bench/bench_digest.py`.

    python scripts/bench/bench_digest.py [--threshold 0.5] [--sample 40] [--json] [--unjudged]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
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
    decisions: list[str] = []
    cut = 0
    for day in days(root / "corpus").values():
        started = time.perf_counter()
        digest = digest_daily.extractive(day, per_session)
        page = digest_daily.render(day, digest, "extractive").decode("utf-8")
        totals["seconds"] += time.perf_counter() - started
        decisions += [b.text for b in digest.decisions]
        cut += sum(cut_mid_word(b.text, day) for bullets in digest.sections() for b in bullets)
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
        "decisions": decisions,
        "bullets_cut_mid_word": cut,
    }


def cut_mid_word(text: str, day: digest_daily.Day) -> bool:
    """A bullet shortened with `…` right after a piece of a word (the day's turns hold it longer)."""
    if not text.endswith("…"):
        return False
    head = re.sub(r"^\*\*[^*]*\*\*[^:]*: ", "", text[:-1]).split(": ", 1)[-1]
    last = head.split()[-1] if head.split() else ""
    said = " ".join(m.text for ds in day.sessions for m in ds.turns)
    return (
        bool(last)
        and re.search(rf"{re.escape(last)}\w", said) is not None
        and not re.search(rf"{re.escape(last)}\b", said)
    )


GROUNDED_CHECK = 0.8
# Words a subject cut mid-clause tends to end on ("…the intro to my", "…doggy playdates, which is").
FUNCTION_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "to",
        "of",
        "my",
        "your",
        "our",
        "their",
        "his",
        "her",
        "its",
        "and",
        "or",
        "but",
        "which",
        "that",
        "with",
        "for",
        "in",
        "on",
        "at",
        "is",
    ]
)


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
        **where_and_how_named(proposals),
        "digest_seconds": digest_seconds,
        "dream_seconds": dream_seconds,
    }


def where_and_how_named(proposals: list[Any]) -> dict[str, Any]:
    """The proposals' kinds and target folders, core targets, cut ids and subjects, and the items to judge."""
    from dory.memory.entities import slugify

    subjects = [p.write.subject for p in proposals]
    return {
        "by_kind": dict(Counter(p.write.kind for p in proposals)),
        "by_target": dict(Counter(_folder(p.plan.target_path) for p in proposals)),
        "core_targets": sum((p.plan.target_path or "").startswith("core/") for p in proposals),
        "ids_cut_mid_word": sum(_id_cut(p.id, slugify(p.write.subject)) for p in proposals),
        "subjects_cut_mid_word": sum(_subject_cut(p.write.subject, p.write.content) for p in proposals),
        "subjects_on_a_function_word": sum(s.split()[-1].lower() in FUNCTION_WORDS for s in subjects if s.split()),
        "items": [
            {"kind": p.write.kind, "target": p.plan.target_path, "subject": p.write.subject, "text": p.write.content}
            for p in proposals
        ],
    }


def _folder(path: str | None) -> str:
    return "-" if not path else path.split("/", 1)[0] + "/" if "/" in path else path


def _id_cut(proposal_id: str, slug: str) -> bool:
    """The id's slug part (between the time stamp and the hash) stops inside a word of the subject's slug."""
    parts = proposal_id.split("-")
    middle = "-".join(parts[2:-1]).strip("-") if len(parts) > 3 else ""
    return bool(middle) and middle != slug and not slug.startswith(middle + "-")


def _subject_cut(subject: str, content: str) -> bool:
    """The subject's last word is only a piece of a word where the content says it."""
    words = subject.split()
    if not words or words[-1] == "user":
        return False
    last = re.escape(words[-1].rstrip(".,;:!?"))
    return re.search(rf"\b{last}\w", content) is not None and re.search(rf"\b{last}\b", content) is None


# -- precision by hand-checked sample ----------------------------------------------------------------
VERDICTS = Path(__file__).with_name("digest_verdicts.jsonl")
SAMPLE = 40
SEED = 20


def item_key(item: dict[str, Any]) -> str:
    """How a verdict names an item: a digest decision by its text, a proposal by kind, target and text."""
    if item["kind"] == "digest-decision":
        return f"digest-decision | {item['text']}"
    return f"proposal {item['kind']} -> {item['target']} [{item['subject']}] | {item['text']}"


def precision(items: list[dict[str, Any]], size: int) -> dict[str, Any]:
    verdicts: dict[str, dict[str, str]] = {}
    if VERDICTS.is_file():
        for line in VERDICTS.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                verdicts[row["item"]] = row
    keys = sorted({item_key(i) for i in items})
    sample = random.Random(SEED).sample(keys, min(size, len(keys)))
    judged = [verdicts[k]["verdict"] for k in sample if k in verdicts]
    by_kind: dict[str, list[str]] = defaultdict(list)
    for key in sample:
        if key in verdicts:
            by_kind["decisions" if key.startswith("digest-decision") else "proposals"].append(verdicts[key]["verdict"])
    # Recall against what a person already found true: of every digest decision judged ok (in any
    # run, before or after a change), how many this code still extracts.
    true = {k for k, row in verdicts.items() if k.startswith("digest-decision") and row["verdict"] == "ok"}
    return {
        "true_decisions_kept": f"{len(true & set(keys))}/{len(true)}",
        "items": len(keys),
        "sampled": len(sample),
        "judged": len(judged),
        "precision": judged.count("ok") / len(judged) if judged else None,
        "by_kind": {k: f"{v.count('ok')}/{len(v)}" for k, v in sorted(by_kind.items())},
        "unjudged": [k for k in sample if k not in verdicts],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--sample", type=int, default=SAMPLE, help="items drawn for the hand-checked precision")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--unjudged", action="store_true", help="print the sampled items without a verdict yet")
    args = parser.parse_args()
    res = run(args.threshold)
    dream = dreaming()
    items = [{"kind": "digest-decision", "text": text} for text in res.pop("decisions")] + dream.pop("items")
    checked = precision(items, args.sample)
    if args.unjudged:
        for key in checked["unjudged"]:
            print(json.dumps({"item": key, "verdict": "", "why": ""}, ensure_ascii=False))
        return
    if args.json:
        print(json.dumps({"digest": res, "dreaming": dream, "precision": checked}, indent=2))
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
    print(f"targets: {dream['by_target']}; core/ targets {dream['core_targets']} (every one a misrouting here)")
    print(
        f"cut text: digest bullets cut mid-word {res['bullets_cut_mid_word']}, proposal ids cut mid-word "
        f"{dream['ids_cut_mid_word']}, subjects cut mid-word {dream['subjects_cut_mid_word']}, subjects ending "
        f"on a function word {dream['subjects_on_a_function_word']}"
    )
    shown = "n/a" if checked["precision"] is None else f"{checked['precision']:.3f}"
    print(
        f"precision (hand-checked, seed {SEED}): {shown} over {checked['judged']} judged of {checked['sampled']} "
        f"sampled from {checked['items']} items {checked['by_kind']}; unjudged {len(checked['unjudged'])}"
        + (" (run with --unjudged and judge them)" if checked["unjudged"] else "")
    )
    print(f"digest decisions judged true (in any run) still extracted: {checked['true_decisions_kept']}")
    print(f"job runner: all daily digests {dream['digest_seconds']:.1f} s, dream {dream['dream_seconds']:.1f} s")


if __name__ == "__main__":
    main()
