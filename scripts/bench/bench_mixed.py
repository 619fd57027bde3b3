"""`--in all` on a mixed set: LoCoMo transcripts (the session plane) beside real durable notes.

    python scripts/bench/bench_mixed.py [--durable-notes 1200] [--limit-queries N] [--json]

The corpus is built under the bench folder (`$DORY_BENCH_DIR/mixed`, default /tmp/dory-bench): the
five LoCoMo conversations under `logs/sessions/locomo/` and tldr pages from mdcorpus as durable notes
(the expected pages of the tldr known-item queries first, then a fixed random sample of other pages,
`--durable-notes` in all). Everything is embedded once and cached.

Two query sets, all unscoped and in hybrid mode, top 10:

* LoCoMo questions: a hit counts when its line range holds an expected turn. `sessions` searches the
  session plane alone: the ceiling for `all`, which must not lose the turns among durable notes.
* tldr known-item queries: a hit counts when it is the expected page. `durable` searches the durable
  plane alone: again the ceiling for `all`, which must not lose the pages among transcripts.

`all` is Dory's merged search (one fusion under one policy, dory/sessions/recall.py `merge`);
`all, by position` is the merge Dory used before, rebuilt here as the same-run baseline: both answers
merged by final position, 1 / (20 + rank), with session turns scaled by 0.75.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import bench_dir, log, make_service, unpack
from _locomo import queries as locomo_queries
from _locomo import turn_lines
from bench_recall import hit_ranks, metrics

from dory.models import ReindexRequest, SearchHit, SearchRequest

OLD_MERGE_K = 20
OLD_SESSION_FACTOR = 0.75


def build_corpus(durable_notes: int) -> Path:
    """The mixed corpus (rebuilt when the requested size changes) and its folder."""
    root = bench_dir() / "mixed"
    corpus = root / "corpus"
    stamp = root / "built"
    if stamp.is_file() and stamp.read_text() == str(durable_notes):
        return root
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(unpack("locomo") / "corpus", corpus)
    shutil.copy(unpack("locomo") / "queries.jsonl", root / "locomo_queries.jsonl")
    md = unpack("mdcorpus")
    tldr = [json.loads(line) for line in (md / "queries_tldr.jsonl").read_text().splitlines() if line]
    chosen = list(dict.fromkeys(path for q in tldr for path in q["expected"]))[:durable_notes]
    pages = sorted(p.relative_to(md / "corpus").as_posix() for p in (md / "corpus" / "tldr").rglob("*.md"))
    others = [p for p in pages if p not in set(chosen)]
    random.Random(7).shuffle(others)
    chosen += others[: max(0, durable_notes - len(chosen))]
    for rel in chosen:
        target = corpus / "notes" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(md / "corpus" / rel, target)
    kept = set(chosen)
    rows = [q | {"expected": ["notes/" + p for p in q["expected"]]} for q in tldr if set(q["expected"]) <= kept]
    (root / "tldr_queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in rows))
    stamp.write_text(str(durable_notes))
    return root


def old_merge(durable: list[SearchHit], sessions: list[SearchHit], k: int) -> list[SearchHit]:
    keyed = [(1 / (OLD_MERGE_K + rank), hit) for rank, hit in enumerate(durable, start=1)]
    keyed += [(OLD_SESSION_FACTOR / (OLD_MERGE_K + rank), hit) for rank, hit in enumerate(sessions, start=1)]
    keyed.sort(key=lambda item: -item[0])
    return [hit for _, hit in keyed[:k]]


def answers(svc: Any, query: str) -> dict[str, list[SearchHit]]:
    def search(corpus: str, mode: str) -> list[SearchHit]:
        return svc.search(SearchRequest(query=query, mode=mode, corpus=corpus, k=10, record=False)).hits

    durable, sessions = search("durable", "hybrid"), search("sessions", "recall")
    return {
        "durable": durable,
        "sessions": sessions,
        "all": search("all", "hybrid"),
        "all, by position": old_merge(durable, sessions, 10),
    }


def run(durable_notes: int, limit: int | None) -> dict[str, Any]:
    root = build_corpus(durable_notes)
    corpus = root / "corpus"
    svc = make_service(corpus, root / "state")
    res = svc.reindex(ReindexRequest())
    log(f"reindex: {res.new} new notes, {res.sessions_indexed} transcripts, {res.vectors_embedded} vectors")
    lines = turn_lines(corpus / "logs")
    lines = {"logs/" + path: found for path, found in lines.items()}
    sets = {
        "locomo": [
            {"query": q["query"], "expected": q["expected_turns"]}
            for q in locomo_queries(root.parent / "locomo")[:limit]
        ],
        "tldr": [json.loads(line) for line in (root / "tldr_queries.jsonl").read_text().splitlines()][:limit],
    }
    out: dict[str, Any] = {"durable_notes": durable_notes, "k": 10, "mode": "hybrid", "unscoped": True}
    for name, qs in sets.items():
        ranks: dict[str, list[list[int | None]]] = {}
        for q in qs:
            for label, hits in answers(svc, q["query"]).items():
                found = [(h.path, h.start_line, h.end_line) for h in hits]
                if name == "locomo":
                    ranks.setdefault(label, []).append(hit_ranks(q["expected"], found, lines))
                else:
                    paths = [h.path for h in hits]
                    ranks.setdefault(label, []).append(
                        [paths.index(p) + 1 if p in paths else None for p in q["expected"]]
                    )
        out[name] = {"queries": len(qs)} | {label: metrics(r) for label, r in ranks.items()}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--durable-notes", type=int, default=1200)
    parser.add_argument("--limit-queries", type=int)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    res = run(args.durable_notes, args.limit_queries)
    if args.json:
        print(json.dumps(res, indent=2))
        return
    print(f"--in all on a mixed set: LoCoMo transcripts + {res['durable_notes']} tldr notes, hybrid, unscoped, top 10")
    for name, ceiling in (("locomo", "sessions"), ("tldr", "durable")):
        print(f"\n[{name}: {res[name]['queries']} queries; '{ceiling}' searches its own plane alone]")
        for label in (ceiling, "all", "all, by position"):
            m = res[name][label]
            print(f"  {label:17} R@5 {m['recall@5']:.3f}  R@10 {m['recall@10']:.3f}  MRR@10 {m['mrr@10']:.3f}")


if __name__ == "__main__":
    main()
