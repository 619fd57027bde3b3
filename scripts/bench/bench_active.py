"""Active memory on LoCoMo: how often the block holds the evidence turn, and how often it says NONE when
the evidence is absent, next to plain session recall (top-N, no admission) in the same run.

Protocol: each conversation gets its own corpus (its sessions only, in the session plane). Positives ask
a conversation's questions against its own corpus; negatives ask them against the next conversation's
corpus, where the evidence is absent. LoCoMo's conversations live in the session plane, which active
memory reads only when the prompt asks about recent work, so every question is prefixed with a
recent-work cue ("Earlier we talked about this: ..."). A positive counts when an evidence line of the
block covers an expected turn's line; a negative when the block is exactly NONE. The baseline is session
recall's own top N for the bare question: its "NONE" is an empty answer (the relevance floor).

    python scripts/bench/bench_active.py [--conversations N] [--limit N] [--model] [--deadline-ms 800] [--json]

Without --model the corpora are keyword-only (fast); with it the first run embeds every turn of the
chosen conversations (minutes on a busy machine; the state is cached under the bench folder).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import bench_dir, make_service, unpack
from _locomo import queries, turn_lines

from dory.models import ActiveMemoryRequest, ReindexRequest, SearchRequest
from dory.service import DoryService

CUE = "Earlier we talked about this: "


def conversation_service(root: Path, conv: str, model: bool) -> DoryService:
    """A corpus holding one conversation's sessions, indexed (reused when already built)."""
    base = bench_dir() / "active" / conv
    corpus = base / "corpus"
    source = root / "corpus" / "logs" / "sessions" / "locomo" / conv
    target = corpus / "logs" / "sessions" / "locomo" / conv
    if not target.is_dir():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(source, target)
    overrides = {} if model else {"embedder.backend": "none"}
    svc = make_service(corpus, base / ("state-model" if model else "state-lexical"), **overrides)
    started = time.monotonic()
    res = svc.reindex(ReindexRequest())
    print(f"{conv}: {res.sessions_indexed} transcripts indexed in {time.monotonic() - started:.1f}s", file=sys.stderr)
    svc.search(SearchRequest(query="warm up", corpus="all", record=False))  # load the model before timing
    return svc


def covers(expected: list[str], spans: list[tuple[str, int, int]], lines: dict[str, dict[str, int]]) -> bool:
    for item in expected:
        path, anchor = item.split("#", 1)
        line = lines.get(path, {}).get(anchor)
        if line is not None and any(p == path and start <= line <= end for p, start, end in spans):
            return True
    return False


def ask(svc: DoryService, q: dict[str, Any], deadline_ms: int, n: int) -> dict[str, Any]:
    prompt = CUE + q["query"]
    started = time.monotonic()
    res = svc.active_memory(ActiveMemoryRequest(prompt=prompt, deadline_ms=deadline_ms, max_evidence=n))
    elapsed = 1000 * (time.monotonic() - started)
    shown = [(e.path, e.start_line, e.end_line) for e in res.evidence if f"{e.path}:{e.start_line}-" in res.block]
    base = svc.search(SearchRequest(query=q["query"], corpus="sessions", mode="recall", record=False, k=n)).hits
    return {
        "none": res.block == "NONE",
        "spans": shown,
        "dropped": res.dropped_stages,
        "ms": elapsed,
        "baseline_none": not base,
        "baseline_spans": [(h.path, h.start_line, h.end_line) for h in base],
    }


def run(conversations: int, limit: int, model: bool, deadline_ms: int, n: int) -> dict[str, Any]:
    root = unpack("locomo")
    lines = turn_lines(root / "corpus")
    by_conv: dict[str, list[dict[str, Any]]] = {}
    for q in queries(root):
        by_conv.setdefault(q["conversation"], []).append(q)
    convs = sorted(by_conv)[: max(conversations, 2)]
    services = {conv: conversation_service(root, conv, model) for conv in convs}
    pos: list[dict[str, Any]] = []
    neg: list[dict[str, Any]] = []
    for i, conv in enumerate(convs):
        other = convs[(i + 1) % len(convs)]
        for q in by_conv[conv][:limit]:
            pos.append(ask(services[conv], q, deadline_ms, n) | {"expected": q["expected_turns"]})
            neg.append(ask(services[other], q, deadline_ms, n))
    for svc in services.values():
        svc.close()

    def share(rows: list[dict[str, Any]], test: Any) -> float:
        return round(sum(1 for r in rows if test(r)) / (len(rows) or 1), 3)

    ms = sorted(r["ms"] for r in pos + neg)
    return {
        "set": "locomo",
        "conversations": convs,
        "questions": len(pos),
        "mode": "hybrid (MiniLM)" if model else "keyword-only",
        "evidence_lines": n,
        "deadline_ms": deadline_ms,
        "active": {
            "evidence_in_block": share(pos, lambda r: covers(r["expected"], r["spans"], lines)),
            "none_on_positives": share(pos, lambda r: r["none"]),
            "none_on_negatives": share(neg, lambda r: r["none"]),
            "any_stage_dropped": share(pos + neg, lambda r: bool(r["dropped"])),
            "dropped": {
                stage: share(pos + neg, lambda r, stage=stage: stage in r["dropped"])
                for stage in sorted({s for r in pos + neg for s in r["dropped"]})
            },
            "ms_p50": round(ms[len(ms) // 2], 1) if ms else None,
            "ms_max": round(ms[-1], 1) if ms else None,
        },
        "baseline_recall_topN": {
            "evidence_in_top": share(pos, lambda r: covers(r["expected"], r["baseline_spans"], lines)),
            "empty_on_positives": share(pos, lambda r: r["baseline_none"]),
            "empty_on_negatives": share(neg, lambda r: r["baseline_none"]),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=2, help="how many conversations (at least 2)")
    parser.add_argument("--limit", type=int, default=20, help="questions per conversation")
    parser.add_argument("--model", action="store_true", help="hybrid with the MiniLM model (else keyword-only)")
    parser.add_argument("--deadline-ms", type=int, default=800)
    parser.add_argument("--evidence", type=int, default=3, help="evidence lines in the block")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    res = run(args.conversations, args.limit, args.model, args.deadline_ms, args.evidence)
    if args.json:
        print(json.dumps(res, indent=2))
        return
    print(
        f"LoCoMo active memory: {res['questions']} questions, {len(res['conversations'])} conversations, "
        f"{res['mode']}, {res['evidence_lines']} evidence lines, deadline {res['deadline_ms']} ms"
    )
    a, b = res["active"], res["baseline_recall_topN"]
    print(
        f"  active memory  evidence in block {a['evidence_in_block']:.3f}  NONE on positives "
        f"{a['none_on_positives']:.3f}  NONE on negatives {a['none_on_negatives']:.3f}  "
        f"dropped {a['any_stage_dropped']:.3f} {a['dropped']}  p50 {a['ms_p50']} ms  max {a['ms_max']} ms"
    )
    print(
        f"  recall top-N   evidence in top   {b['evidence_in_top']:.3f}  empty on positives "
        f"{b['empty_on_positives']:.3f}  empty on negatives {b['empty_on_negatives']:.3f}"
    )


if __name__ == "__main__":
    main()
