"""Calibrate the relevance floor (`search.vector_floor`, dory/search/floor.py) on the shared sets.

A vector-only hit (no keyword match) counts as evidence when its cosine reaches the floor. Too high a
floor costs the vector side its paraphrase matches; too low lets noise through. This script measures
both sides at several floors, in one process, on one index:

- positives: SciFact (BEIR train split) queries against SciFact; the cost of a floor is the share of
  relevant top-10 hits it would drop (hits with no bm25 match and a cosine below it) and the nDCG@10
  left after dropping them (hybrid and vector);
- negatives: LoCoMo questions (about two people's lives) against SciFact (scientific abstracts), which
  has no answer to any of them; the gain of a floor is the share of those questions for which vector
  search returns nothing instead of ten unrelated abstracts.

    python scripts/bench/bench_floor.py [--limit-queries N] [--floors 0.2,0.25,...]

Builds (or reuses) the SciFact index of bench_quality.py: the first run embeds ~9.5k chunks.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import make_service, unpack

from dory.models import ReindexRequest, SearchHit, SearchRequest
from dory.search.evaluate import load_queries, ndcg

FLOORS = (0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)


def weak_at(hit: SearchHit, floor: float) -> bool:
    e = hit.explain
    assert e is not None
    return e.bm25_rank is None and (e.vector_score is None or e.vector_score < floor)


def positives(svc: Any, queries: list[dict[str, Any]], floors: tuple[float, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mode in ("hybrid", "vector"):
        answers = []
        for q in queries:
            req = SearchRequest(query=q["query"], mode=mode, k=10, include_weak=True, debug=True, record=False)
            answers.append((q["expected"], svc.search(req).hits))
        rows = {}
        for floor in (None, *floors):
            dropped = relevant = 0
            gains = []
            for expected, hits in answers:
                kept = [h for h in hits if floor is None or not weak_at(h, floor)]
                relevant += sum(1 for h in hits if h.path in expected)
                dropped += sum(1 for h in hits if h.path in expected and h not in kept)
                order = [h.path for h in kept]
                gains.append(ndcg([order.index(p) + 1 if p in order else None for p in expected]))
            rows["none" if floor is None else f"{floor:.2f}"] = {
                "relevant_dropped": dropped / max(relevant, 1),
                "ndcg@10": sum(gains) / len(gains),
            }
        out[mode] = rows
    return out


def negatives(svc: Any, questions: list[str], floors: tuple[float, ...]) -> dict[str, float]:
    tops = []
    for question in questions:
        req = SearchRequest(query=question, mode="vector", k=1, include_weak=True, debug=True, record=False)
        hits = svc.search(req).hits
        tops.append(hits[0].explain.vector_score if hits and hits[0].explain else None)
    return {f"{floor:.2f}": sum(1 for t in tops if t is None or t < floor) / len(tops) for floor in floors}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit-queries", type=int, default=300)
    parser.add_argument("--floors", default=",".join(str(f) for f in FLOORS))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    floors = tuple(float(f) for f in args.floors.split(","))
    root = unpack("scifact")
    svc = make_service(root / "corpus", root / "state")
    svc.reindex(ReindexRequest())
    queries = load_queries(root / "queries.jsonl")[: args.limit_queries]
    locomo = unpack("locomo")
    questions = [q["query"] for q in load_queries(locomo / "queries.jsonl")][: args.limit_queries]
    result = {
        "set": "scifact train (positives), locomo questions on scifact (negatives)",
        "queries": len(queries),
        "negatives": len(questions),
        "positives": positives(svc, queries, floors),
        "negatives_empty_share": negatives(svc, questions, floors),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['queries']} SciFact queries, {result['negatives']} LoCoMo questions against SciFact")
    print(f"{'floor':>6}  {'hyb drop':>8} {'hyb nDCG':>8}  {'vec drop':>8} {'vec nDCG':>8}  {'negatives empty':>15}")
    pos, neg = result["positives"], result["negatives_empty_share"]
    for key in ["none", *(f"{f:.2f}" for f in floors)]:
        h, v = pos["hybrid"][key], pos["vector"][key]
        empty = f"{neg[key]:.3f}" if key in neg else "-"
        print(
            f"{key:>6}  {h['relevant_dropped']:8.3f} {h['ndcg@10']:8.4f}  "
            f"{v['relevant_dropped']:8.3f} {v['ndcg@10']:8.4f}  {empty:>15}"
        )


if __name__ == "__main__":
    main()
