"""Compaction on LoCoMo: how many annotated events does a deterministic continuation summary keep?

Each LoCoMo session is compacted with the extractive summariser (no LLM) exactly as `dory sessions
compact --retain 0` does. An event of `events.jsonl` counts as mentioned when at least THRESHOLD of
its content words (stopwords and words under three letters removed) appear in the summary. Reported:
the share of events mentioned, the compression ratio (transcript tokens / summary tokens), and the
same coverage for a baseline that keeps the session's first words up to the summary's length.

    python scripts/bench/bench_compaction.py [--threshold 0.5] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import unpack
from _locomo import content_words, events, mentioned, transcripts

from dory.config import ContextSettings
from dory.index.embedders import default_token_counter
from dory.sessions import compaction
from dory.sessions.packing import MESSAGE_OVERHEAD, PackMessage


def run(threshold: float, cap: int) -> dict[str, Any]:
    root = unpack("locomo")
    count = default_token_counter(None).count
    by_path = events(root)
    totals = {"events": 0, "summary": 0, "lead": 0, "tokens_in": 0, "tokens_out": 0, "sessions": 0, "seconds": 0.0}
    for t in transcripts(root / "corpus"):
        wanted = by_path.get(t.path, [])
        messages = [PackMessage(m.id, "user", m.text) for m in t.turns]
        started = time.perf_counter()
        summary = compaction.render(compaction.extractive(messages, cap), cap)
        totals["seconds"] += time.perf_counter() - started
        transcript = "\n\n".join(m.text for m in messages)
        lead = " ".join(transcript.split()[: len(summary.split())])
        got, lead_words = content_words(summary), content_words(lead)
        totals["events"] += len(wanted)
        totals["summary"] += sum(mentioned(e, got, threshold) for e in wanted)
        totals["lead"] += sum(mentioned(e, lead_words, threshold) for e in wanted)
        totals["tokens_in"] += sum(count(m.text) + MESSAGE_OVERHEAD for m in messages)
        totals["tokens_out"] += count(summary) + MESSAGE_OVERHEAD
        totals["sessions"] += 1
    return {
        "set": "locomo",
        "sessions": totals["sessions"],
        "events": totals["events"],
        "threshold": threshold,
        "word_cap": cap,
        "events_mentioned": totals["summary"] / totals["events"],
        "lead_baseline_mentioned": totals["lead"] / totals["events"],
        "compression": totals["tokens_in"] / totals["tokens_out"],
        "ms_per_session": 1000 * totals["seconds"] / totals["sessions"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument(
        "--word-cap",
        type=int,
        default=ContextSettings().summary_words,
        help="the summary's word cap (default: Dory's [context] summary_words)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    res = run(args.threshold, args.word_cap)
    if args.json:
        print(json.dumps(res, indent=2))
        return
    print(
        f"LoCoMo compaction (extractive, word cap {res['word_cap']}): {res['sessions']} sessions, "
        f"{res['events']} annotated events, mention = ≥{res['threshold']:.0%} of an event's content words"
    )
    print(
        f"events mentioned: summary {res['events_mentioned']:.3f}   first-words baseline "
        f"{res['lead_baseline_mentioned']:.3f}"
    )
    print(f"compression: {res['compression']:.1f}x   {res['ms_per_session']:.1f} ms per session")


if __name__ == "__main__":
    main()
