"""Are research's citations grounded in the right documents? SciFact (BEIR train split), bm25, k=5.

For each query, beside the search's own Recall@5 in the same run:
- evidence hit: an expected abstract is among the evidence;
- citation hit: the extractive answer cites an expected abstract;
- first citation right: its first citation does;
- citation precision: the share of all citations that name an expected abstract;
- no citation: the answer cites nothing (no sentence shares a word with the question).

    python scripts/bench/bench_research.py [--offset N] [--limit-queries N] [--json]

Lexical only (no model): the index is built with embedder none in its own state folder.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import bench_dir, log, make_service, table, unpack

from dory.models import ReindexRequest, ResearchRequest, SearchRequest
from dory.search.evaluate import load_queries

K = 5


def measure(svc: Any, queries: list[dict[str, Any]]) -> dict[str, float]:
    counts = dict.fromkeys(("search_recall", "evidence_hit", "citation_hit", "first_right", "no_citation"), 0)
    right = cited = 0
    started = time.monotonic()
    for q in queries:
        want = set(q["expected"])
        hits = svc.search(SearchRequest(query=q["query"], mode="bm25", k=K, record=False)).hits
        counts["search_recall"] += bool(want & {h.path for h in hits})
        res = svc.research(ResearchRequest(question=q["query"], mode="bm25", k=K, llm=False))
        paths = [c.path for c in res.citations]
        counts["evidence_hit"] += bool(want & set(res.sources))
        counts["citation_hit"] += bool(want & set(paths))
        counts["first_right"] += bool(paths and paths[0] in want)
        counts["no_citation"] += not paths
        right += sum(p in want for p in paths)
        cited += len(paths)
    n = max(len(queries), 1)
    out = {name: round(value / n, 3) for name, value in counts.items()}
    out["citation_precision"] = round(right / max(cited, 1), 3)
    out["ms_per_query"] = round(1000 * (time.monotonic() - started) / n, 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--offset", type=int, default=0, help="skip the first N queries")
    parser.add_argument("--limit-queries", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    root = unpack("scifact")
    svc = make_service(root / "corpus", bench_dir() / "state-research", **{"embedder.backend": "none"})
    try:
        log("indexing SciFact (lexical)…")
        svc.reindex(ReindexRequest(vectors=False))
        queries = load_queries(root / "queries.jsonl")[args.offset : args.offset + args.limit_queries]
        result = {"set": "scifact train", "mode": "bm25", "k": K, "queries": len(queries), **measure(svc, queries)}
    finally:
        svc.close()
    if args.json:
        print(json.dumps(result))
        return
    print(table(["metric", "value"], [(k, v) for k, v in result.items()], digits=3))


if __name__ == "__main__":
    main()
