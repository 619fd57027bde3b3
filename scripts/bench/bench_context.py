"""Context packing on LoCoMo: does the packed context still hold the evidence a question needs?

Each LoCoMo conversation becomes one long session (all its sessions' turns in order, ~600 turns,
~25k tokens). For each question, the session is packed at budgets of 2k, 4k and 8k tokens with the
question as the query; a question counts as covered when every evidence turn (`expected_turns`) is
inside the packed context (as a message kept verbatim or as a recalled chunk). The baseline is plain
truncation: the most recent messages that fit the same budget. Both use Dory's token counter (MiniLM
wordpiece) and the same per-message overhead; packing latency is measured per call.

    python scripts/bench/bench_context.py [--budgets 2000,4000,8000] [--limit-queries N] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import percentiles, unpack
from _locomo import anchors, queries, transcripts

from dory.index.embedders import default_token_counter
from dory.sessions.packing import MESSAGE_OVERHEAD, PackMessage, pack

MIN_RECENT = 6


def conversations(corpus: Path) -> dict[str, list[PackMessage]]:
    out: dict[str, list[PackMessage]] = {}
    for t in transcripts(corpus):
        out.setdefault(t.conversation, []).extend(PackMessage(m.id, "user", m.text, time=m.time) for m in t.turns)
    return out


def recent_only(messages: list[PackMessage], budget: int, count: Any) -> set[str]:
    """What plain truncation keeps: the newest whole messages that fit."""
    room, kept = budget, set()
    for message in reversed(messages):
        cost = count(message.text) + MESSAGE_OVERHEAD
        if cost > room:
            break
        kept |= anchors(message.text)
        room -= cost
    return kept


def packed_anchors(messages: list[PackMessage], budget: int, query: str, count: Any) -> tuple[set[str], float, int]:
    started = time.perf_counter()
    res = pack(messages, budget, count, query=query, reserve=0, min_recent=MIN_RECENT)
    elapsed = time.perf_counter() - started
    seen: set[str] = set()
    for item in res.items:
        if item.kind in ("message", "recalled"):
            seen |= anchors(item.text)
    assert res.tokens <= budget, (res.tokens, budget)  # the budget is hard
    return seen, elapsed, res.tokens


def run(budgets: list[int], limit: int | None) -> dict[str, Any]:
    root = unpack("locomo")
    count = default_token_counter(None).count
    convs = conversations(root / "corpus")
    qs = queries(root)[:limit] if limit else queries(root)
    sizes = {conv: sum(count(m.text) + MESSAGE_OVERHEAD for m in msgs) for conv, msgs in convs.items()}
    out: dict[str, Any] = {"set": "locomo", "questions": len(qs), "session_tokens": sizes, "budgets": {}}
    for budget in budgets:
        covered = {"packed": 0, "recent_only": 0}
        latencies, fills = [], []
        recent_cache = {conv: recent_only(msgs, budget, count) for conv, msgs in convs.items()}
        for q in qs:
            need = {item.split("#", 1)[1] for item in q["expected_turns"]}
            seen, elapsed, tokens = packed_anchors(convs[q["conversation"]], budget, q["query"], count)
            latencies.append(elapsed * 1000)
            fills.append(tokens / budget)
            covered["packed"] += need <= seen
            covered["recent_only"] += need <= recent_cache[q["conversation"]]
        out["budgets"][budget] = {
            "packed": covered["packed"] / len(qs),
            "recent_only": covered["recent_only"] / len(qs),
            "fill": sum(fills) / len(fills),
            "latency_ms": percentiles(latencies, (50, 95)),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budgets", default="2000,4000,8000")
    parser.add_argument("--limit-queries", type=int)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    res = run([int(b) for b in args.budgets.split(",")], args.limit_queries)
    if args.json:
        print(json.dumps(res, indent=2))
        return
    sizes = ", ".join(f"{conv} {tokens}" for conv, tokens in res["session_tokens"].items())
    print(f"LoCoMo context packing: {res['questions']} questions; session sizes in tokens: {sizes}")
    print("budget  evidence kept: packed  recent-only   ratio   fill   p50 ms  p95 ms")
    for budget, r in res["budgets"].items():
        ratio = r["packed"] / r["recent_only"] if r["recent_only"] else float("inf")
        print(
            f"{budget:>6}  {r['packed']:>21.3f}  {r['recent_only']:>11.3f}  {ratio:>6.2f}x  {r['fill']:.2f}  "
            f"{r['latency_ms']['p50']:>6.1f}  {r['latency_ms']['p95']:>6.1f}"
        )


if __name__ == "__main__":
    main()
