"""Recall: search over the session plane, and the merge of session turns into durable results.

Turns are ranked like durable chunks (reciprocal rank fusion of BM25 and vector lists), but every
hit names the exact turn: its line range and message id. Session evidence is weaker than curated
memory, so when both corpora are searched the two lists are merged by rank with session turns
counted at SESSION_FACTOR.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dory.config import SearchSettings
from dory.errors import BackendUnavailable
from dory.models import Scope, SearchHit, SearchRequest, SessionTurn, StageScores
from dory.search.engine import stage_ranks
from dory.search.floor import nothing_found_warning, with_evidence
from dory.search.hits import text_snippet
from dory.search.query import ParsedQuery, parse_query
from dory.sessions.store import SessionHit, SessionScope, SessionStore

# Session turns against curated notes in corpus=all (the same weight the policy gives `logs/`).
SESSION_FACTOR = 0.75
MERGE_K = 20
QueryVector = Callable[[str], tuple[np.ndarray, str]]  # query → (vector, fingerprint)


def session_scope(scope: Scope) -> SessionScope:
    status = scope.status[0] if len(scope.status) == 1 else None
    return SessionScope(
        agent=scope.agent,
        device=scope.device,
        session_id=scope.session_id,
        status=status,
        since=scope.since,
        until=scope.until,
        path=scope.path,
    )


def recall(
    store: SessionStore,
    req: SearchRequest,
    settings: SearchSettings,
    query_vector: QueryVector | None,
    warnings: list[str],
    limit: int | None = None,
) -> list[SearchHit]:
    """The best turns for the request (mode bm25, vector, hybrid or recall, which is hybrid)."""
    scope = session_scope(req.scope)
    wanted = limit or req.k
    pool = max(settings.candidates, wanted * 5)
    lists: dict[str, list[tuple[int, float]]] = {}
    if req.mode in ("bm25", "hybrid", "recall"):
        lists["bm25"] = store.lexical(req.query, scope, pool)
    if req.mode in ("vector", "hybrid", "recall"):
        try:
            if query_vector is None:
                raise BackendUnavailable("no embedder is configured (embedder.backend = none)")
            vector, fingerprint = query_vector(req.query)
            lists["vector"] = store.vector(vector, fingerprint, scope, pool)
        except BackendUnavailable as exc:
            if req.mode == "vector":
                raise
            warnings.append(f"session vectors unavailable, turns are found by keywords only: {exc.message}")
    weights = {"bm25": settings.lexical_weight, "vector": settings.session_vector_weight}
    fused: dict[int, float] = {}
    for name, ranked in lists.items():
        for rank, (row, _) in enumerate(ranked, start=1):
            fused[row] = fused.get(row, 0.0) + weights[name] / (settings.session_rrf_k + rank)
    evidence = with_evidence(lists, settings.vector_floor)
    weak = {row for row in fused if row not in evidence}
    kept = {row: score for row, score in fused.items() if req.include_weak or row not in weak}
    if weak and not kept:
        warnings.append(nothing_found_warning(len(weak), settings.vector_floor))
    if req.min_score is not None:
        kept = {row: score for row, score in kept.items() if round(score, 6) >= req.min_score}  # as shown
    ranked = sorted(kept.items(), key=lambda item: (-item[1], item[0]))[:wanted]
    parsed = parse_query(req.query)
    return [
        _hit(hit, parsed, position, _stages(hit.row, lists, hit.score) if req.debug else None, hit.row in weak)
        for position, hit in enumerate(store.hits(ranked), start=1)
    ]


def _stages(row: int, lists: dict[str, list[tuple[int, float]]], fused: float) -> StageScores:
    return StageScores(**stage_ranks(row, lists), fused=fused, final=fused)


def _hit(hit: SessionHit, parsed: ParsedQuery, position: int, explain: StageScores | None, weak: bool) -> SearchHit:
    heading = f"{hit.role} · {hit.time}" if hit.time else hit.role
    return SearchHit(
        path=hit.path,
        title=hit.title,
        chunk_id=f"{hit.path}#{hit.message_id}",
        start_line=hit.start_line,
        end_line=hit.end_line,
        heading_path=[heading],
        snippet=text_snippet(hit.text, parsed),
        evidence_class="session",
        confidence="medium" if position == 1 and not weak else "low",
        score=round(hit.score, 6),
        weak=True if weak else None,
        explain=explain,
        turn=SessionTurn(
            session_id=hit.session_id, message_id=hit.message_id, agent=hit.agent, role=hit.role, time=hit.time
        ),
    )


def merge(durable: list[SearchHit], sessions: list[SearchHit], k: int) -> list[SearchHit]:
    """Durable hits and session turns in one list. The two lists' scores are on different scales, so
    they are merged by position (1 / (MERGE_K + rank)), session turns scaled by SESSION_FACTOR."""
    keyed = [(1 / (MERGE_K + rank), hit) for rank, hit in enumerate(durable, start=1)]
    keyed += [(SESSION_FACTOR / (MERGE_K + rank), hit) for rank, hit in enumerate(sessions, start=1)]
    keyed.sort(key=lambda item: -item[0])
    return [hit for _, hit in keyed[:k]]
