"""Retrieval quality on SciFact (BEIR train split): bm25 vs vector vs hybrid. (LoCoMo turn-level recall over
the session plane is scripts/bench/bench_recall.py.)

Every figure comes from one process and one index per set. The SciFact baseline is a plain
rank-bm25 (BM25Okapi over whole documents, lowercase word tokens) computed in the same run; the
published BEIR test-split figures (BM25 0.665, MiniLM ≈ 0.65 nDCG@10) are printed for context only.

    python scripts/bench/bench_quality.py [--limit-queries N] [--json]

The first run embeds every chunk (SciFact: ~9.5k chunks, about 8 minutes with the numpy encoder);
state is cached under the bench folder, so later runs reuse the vectors.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import make_service, unpack

from dory.models import ReindexRequest, SearchRequest
from dory.search.evaluate import load_queries, ndcg

MODES = ("bm25", "vector", "hybrid")


def build(set_name: str) -> tuple[Any, Path, list[dict[str, Any]]]:
    root = unpack(set_name)
    corpus = root / "corpus"
    svc = make_service(corpus, root / "state")
    started = time.monotonic()
    res = svc.reindex(ReindexRequest())
    print(
        f"[{set_name}] reindex: {res.new} new, {res.vectors_embedded} embedded, {res.vectors_reused} reused "
        f"in {time.monotonic() - started:.1f}s",
        file=sys.stderr,
    )
    return svc, root, load_queries(root / "queries.jsonl")


def file_metrics(ranks_per_query: list[list[int | None]], k: int) -> dict[str, float]:
    n = len(ranks_per_query)
    recall = sum(sum(1 for r in ranks if r is not None and r <= k) / len(ranks) for ranks in ranks_per_query)
    mrr = sum(
        1 / min(found) if (found := [r for r in ranks if r is not None and r <= 10]) else 0 for ranks in ranks_per_query
    )
    return {f"recall@{k}": recall / n, "mrr@10": mrr / n, "ndcg@10": sum(ndcg(r) for r in ranks_per_query) / n}


def scifact(limit: int | None) -> dict[str, Any]:
    svc, root, queries = build("scifact")
    queries = queries[:limit] if limit else queries
    out: dict[str, Any] = {"set": "scifact", "split": "train", "queries": len(queries), "k": 10}
    for mode in MODES:
        ranks, started = [], time.monotonic()
        for q in queries:
            hits = svc.search(SearchRequest(query=q["query"], mode=mode, k=10)).hits
            order = [h.path for h in hits]
            ranks.append([order.index(p) + 1 if p in order else None for p in q["expected"]])
        out[mode] = file_metrics(ranks, 10) | {"ms_per_query": 1000 * (time.monotonic() - started) / len(queries)}
    out["rank_bm25_baseline"] = rank_bm25_baseline(root / "corpus", queries)
    return out


def rank_bm25_baseline(corpus: Path, queries: list[dict[str, Any]]) -> dict[str, float]:
    from rank_bm25 import BM25Okapi

    paths = sorted(p for p in corpus.rglob("*.md"))
    docs = [re.findall(r"\w+", p.read_text(encoding="utf-8").lower()) for p in paths]
    rel = [p.relative_to(corpus).as_posix() for p in paths]
    bm25 = BM25Okapi(docs)
    ranks = []
    for q in queries:
        scores = bm25.get_scores(re.findall(r"\w+", q["query"].lower()))
        top = [rel[i] for i in scores.argsort()[::-1][:10]]
        ranks.append([top.index(p) + 1 if p in top else None for p in q["expected"]])
    return file_metrics(ranks, 10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit-queries", type=int)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = [scifact(args.limit_queries)]
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for res in results:
        print(f"\n== {res['set']} ({res['queries']} queries) ==")
        for mode in (*MODES, "rank_bm25_baseline"):
            if mode in res:
                print(f"{mode:20} " + "  ".join(f"{k} {v:.4f}" for k, v in res[mode].items()))
    print("\npublished (BEIR SciFact test split, nDCG@10): BM25 0.665, all-MiniLM-L6-v2 ≈ 0.65")


if __name__ == "__main__":
    main()
