"""Retrieval evaluation over a queries file: Recall@k, MRR@10 and nDCG@10 per mode, in one process.

Queries are JSON lines `{"id", "query", "expected": [paths], "scope"?}` (see the shared bench
README). A hit counts for an expected path when its path equals it, or when the expected entry names
a turn anchor (`path#D3:7`) and the hit is that file. Ranks are by distinct file. Each query searched
is reported to `progress` ("queries", done, modes × queries): a terminal shows how far it has got.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pydantic

from dory.errors import BackendUnavailable, UsageError
from dory.index.eta import Progress, no_progress
from dory.models import (
    EvalModeResult,
    EvalQueryResult,
    EvalRequest,
    EvalResponse,
    Scope,
    SearchRequest,
    SearchResponse,
)
from dory.models.common import loads_json

MRR_DEPTH = 10


def load_queries(path: Path) -> list[dict[str, Any]]:
    """The queries of a JSON-lines file (the caller's own file: the CLI passes it resolved)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read queries file {path}: {exc}") from exc
    items: list[tuple[str, object]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            items.append((f"{path}:{number}", loads_json(line)))
        except ValueError as exc:  # not JSON, or nested deeper than any query needs
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            raise UsageError(f"{path}:{number}: not JSON ({reason})") from exc
    return checked_queries(items, str(path), unit="line")


def checked_queries(items: list[tuple[str, object]], source: str, unit: str = "query") -> list[dict[str, Any]]:
    """Each (where, item) checked: a non-empty query string and a list of expected paths."""
    queries = []
    for index, (where, item) in enumerate(items, start=1):
        if not isinstance(item, dict) or not isinstance(item.get("query"), str) or not item["query"].strip():
            raise UsageError(f'{where}: each {unit} needs a non-empty "query" string')
        expected = item.get("expected")
        if not isinstance(expected, list) or not all(isinstance(p, str) for p in expected):
            raise UsageError(f'{where}: "expected" must be a list of paths')
        try:
            SearchRequest(query=item["query"])
        except pydantic.ValidationError as exc:
            raise UsageError(f"{where}: unusable query: {exc.errors()[0]['msg']}") from exc
        item.setdefault("id", str(index))
        queries.append(item)
    if not queries:
        raise UsageError(f"{source}: no queries")
    return queries


def ndcg(ranks: list[int | None], depth: int = 10) -> float:
    gains = sum(1 / math.log2(rank + 1) for rank in ranks if rank is not None and rank <= depth)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(ranks), depth)))
    return gains / ideal if ideal else 0.0


def run_eval(
    req: EvalRequest, search: Callable[[SearchRequest], SearchResponse], progress: Progress = no_progress
) -> EvalResponse:
    if req.queries is not None:
        queries = checked_queries([(f"queries[{i}]", item) for i, item in enumerate(req.queries)], "the request")
    else:
        queries = load_queries(Path(str(req.queries_file)))
    depth = max(req.k, MRR_DEPTH)
    results, warnings = [], []
    total = len(req.modes) * len(queries)
    for number, mode in enumerate(req.modes):
        per_query, recall, mrr, total_ndcg = [], 0.0, 0.0, 0.0
        try:
            for done, item in enumerate(queries, start=number * len(queries) + 1):
                ranks = _ranks(item, mode, depth, req.scope_field, search)
                expected = list(ranks.values())
                found = [r for r in expected if r is not None]
                recall += sum(1 for r in found if r <= req.k) / len(expected) if expected else 0
                mrr += 1 / min(found) if found and min(found) <= MRR_DEPTH else 0
                total_ndcg += ndcg(expected)
                per_query.append(EvalQueryResult(id=str(item["id"]), query=item["query"], ranks=ranks))
                progress("queries", done, total)
        except BackendUnavailable as exc:
            warnings.append(f"mode {mode} skipped: {exc.message}")
            progress("queries", (number + 1) * len(queries), total)  # the mode's queries count as done
            continue
        n = len(queries)
        results.append(
            EvalModeResult(
                mode=mode,
                recall_at_k=round(recall / n, 4),
                mrr_at_10=round(mrr / n, 4),
                ndcg_at_10=round(total_ndcg / n, 4),
                queries=n,
                per_query=per_query if req.per_query else None,
            )
        )
    return EvalResponse(k=req.k, queries=len(queries), modes=results, warnings=warnings)


def _ranks(
    item: dict[str, Any],
    mode: str,
    depth: int,
    scope_field: str | None,
    search: Callable[[SearchRequest], SearchResponse],
) -> dict[str, int | None]:
    scope = Scope()
    if scope_field and item.get(scope_field):
        scope = Scope(path=str(item[scope_field]))
    response = search(SearchRequest(query=item["query"], mode=mode, k=depth, scope=scope, record=False))
    order = [hit.path for hit in response.hits]
    # Metrics are per file: two turn anchors in one file are one relevant file, not two.
    files = dict.fromkeys(expected.split("#", 1)[0] for expected in item["expected"])
    return {path: order.index(path) + 1 if path in order else None for path in files}
