"""Session recall on LoCoMo: turn-level Recall@5/@10 and MRR@10 per conversation, for the session
plane's lexical, vector and hybrid (recall) modes, against a plain BM25 baseline in the same run.

Protocol: every question is searched within its own conversation (`scope`), as LoCoMo is meant to be
used; a hit counts when its line range holds an expected turn's `(D<session>:<turn>)` tag. The
baseline is rank-bm25 (BM25Okapi, lowercase word tokens) over the same turns, in memory.

    python scripts/bench/bench_recall.py [--limit-queries N] [--floor F] [--json]

`--floor` sets `search.vector_floor` (the relevance floor, see dory/search/floor.py) for the run.

The first run embeds every turn (~6k, a few minutes with the numpy encoder); the state is cached
under the bench folder, so later runs reuse the vectors.
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
from _locomo import queries, transcripts, turn_lines

from dory.models import ReindexRequest, Scope, SearchRequest

MODES = {"lexical": "bm25", "vector": "vector", "hybrid": "recall"}
K = (5, 10)


def metrics(ranks: list[list[int | None]]) -> dict[str, float]:
    """ranks: per query, the 1-based rank of each expected turn (None: not in the top 10)."""
    n = len(ranks) or 1
    out = {f"recall@{k}": sum(sum(1 for r in q if r is not None and r <= k) / len(q) for q in ranks) / n for k in K}
    out["mrr@10"] = sum(1 / min(found) if (found := [r for r in q if r is not None]) else 0.0 for q in ranks) / n
    return out


def hit_ranks(
    expected: list[str], hits: list[tuple[str, int, int]], lines: dict[str, dict[str, int]]
) -> list[int | None]:
    """For each expected `path#D3:7`, the rank of the first hit (path, start, end) covering its line."""
    out: list[int | None] = []
    for item in expected:
        path, anchor = item.split("#", 1)
        line = lines.get(path, {}).get(anchor)
        rank = next(
            (
                i
                for i, (p, start, end) in enumerate(hits, start=1)
                if line is not None and p == path and start <= line <= end
            ),
            None,
        )
        out.append(rank)
    return out


def baseline(
    by_conv: dict[str, list[tuple[str, int, int, str]]], qs: list[dict[str, Any]], lines: dict[str, dict[str, int]]
) -> dict[str, list[list[int | None]]]:
    from rank_bm25 import BM25Okapi

    models = {
        conv: BM25Okapi([re.findall(r"\w+", text.lower()) or ["_"] for *_, text in turns])
        for conv, turns in by_conv.items()
    }
    ranks: dict[str, list[list[int | None]]] = {}
    for q in qs:
        turns = by_conv[q["conversation"]]
        scores = models[q["conversation"]].get_scores(re.findall(r"\w+", q["query"].lower()))
        top = [turns[i][:3] for i in scores.argsort()[::-1][:10]]
        ranks.setdefault(q["conversation"], []).append(hit_ranks(q["expected_turns"], top, lines))
    return ranks


def run(limit: int | None, floor: float | None = None) -> dict[str, Any]:
    root = unpack("locomo")
    corpus = root / "corpus"
    overrides = {} if floor is None else {"search.vector_floor": floor}
    svc = make_service(corpus, root / "state", **overrides)
    started = time.monotonic()
    res = svc.reindex(ReindexRequest())
    print(
        f"reindex: {res.sessions_indexed} transcripts, {res.session_vectors_embedded} turns embedded "
        f"in {time.monotonic() - started:.1f}s",
        file=sys.stderr,
    )
    qs = queries(root)[:limit] if limit else queries(root)
    lines = turn_lines(corpus)
    by_conv: dict[str, list[tuple[str, int, int, str]]] = {}
    for t in transcripts(corpus):
        by_conv.setdefault(t.conversation, []).extend((t.path, m.start_line, m.end_line, m.text) for m in t.turns)
    ranks: dict[str, dict[str, list[list[int | None]]]] = {"bm25_baseline": baseline(by_conv, qs, lines)}
    timing: dict[str, float] = {}
    for name, mode in MODES.items():
        started = time.monotonic()
        per_conv: dict[str, list[list[int | None]]] = {}
        for q in qs:
            hits = svc.search(
                SearchRequest(query=q["query"], mode=mode, corpus="sessions", k=10, scope=Scope(path=q["scope"]))
            ).hits
            found = [(h.path, h.start_line, h.end_line) for h in hits]
            per_conv.setdefault(q["conversation"], []).append(hit_ranks(q["expected_turns"], found, lines))
        ranks[name] = per_conv
        timing[name] = 1000 * (time.monotonic() - started) / len(qs)
    out: dict[str, Any] = {
        "set": "locomo",
        "queries": len(qs),
        "turns": sum(len(v) for v in by_conv.values()),
        "protocol": "search within one conversation",
        "vector_floor": svc.settings.search.vector_floor,
        "ms_per_query": timing,
    }
    for name, per_conv in ranks.items():
        out[name] = {"all": metrics([r for conv in per_conv.values() for r in conv])}
        out[name] |= {conv: metrics(r) for conv, r in sorted(per_conv.items())}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit-queries", type=int)
    parser.add_argument("--floor", type=float, help="search.vector_floor for this run")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    res = run(args.limit_queries, args.floor)
    if args.json:
        print(json.dumps(res, indent=2))
        return
    print(
        f"LoCoMo session recall: {res['queries']} questions over {res['turns']} turns ({res['protocol']}; "
        f"vector floor {res['vector_floor']})"
    )
    convs = [key for key in res["bm25_baseline"] if key != "all"]
    for scope in ("all", *convs):
        print(f"\n[{scope}]")
        for name in ("bm25_baseline", *MODES):
            m = res[name][scope]
            ms = f"  {res['ms_per_query'][name]:.1f} ms/query" if scope == "all" and name in MODES else ""
            print(f"  {name:14} R@5 {m['recall@5']:.3f}  R@10 {m['recall@10']:.3f}  MRR@10 {m['mrr@10']:.3f}{ms}")


if __name__ == "__main__":
    main()
