"""Recall: search over the session plane, and the merge of session turns into durable results.

Turns are ranked like durable chunks (reciprocal rank fusion of BM25 and vector lists), but every
hit names the exact turn: its line range and message id. When both corpora are searched, `merge`
puts durable hits and turns in one list under one fusion and the ranking policy (session evidence
is weaker than curated memory: transcripts live under `logs/`, which the policy demotes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import zip_longest

import numpy as np

from dory.config import SearchSettings
from dory.errors import BackendUnavailable
from dory.models import Scope, SearchHit, SearchRequest, SessionTurn, StageScores
from dory.search.bounded import bounded_order
from dory.search.engine import stage_ranks
from dory.search.floor import nothing_found_warning, with_evidence
from dory.search.hits import text_snippet
from dory.search.policy import RankingPolicy
from dory.search.query import ParsedQuery, parse_query
from dory.sessions.store import SessionHit, SessionScope, SessionStore

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


def merge(
    durable: list[SearchHit], sessions: list[SearchHit], settings: SearchSettings, policy: RankingPolicy, k: int
) -> list[SearchHit]:
    """Durable hits and session turns in one list, under one fusion and one policy.

    Merging the two answers by final position put a session's best turn under the eighth durable
    note whatever the evidence (the README's nginx example found its turn at #9). Now both sides'
    hits are fused again as one set: one vector list ordered by cosine (the same model embedded
    both sides, so cosines compare), one lexical list interleaving the two sides' BM25 ranks (their
    scores come from different tables and do not compare), reciprocal rank fusion with the durable
    settings, times the policy factor (transcripts live under `logs/`, which the policy demotes),
    and the policy's bound (search/bounded.py). Both lists must carry `explain` (search with debug).
    """
    hits = [*durable, *sessions]
    lists = _joint_lists(hits, len(durable))
    fused: dict[int, float] = {}
    weights = {"bm25": settings.lexical_weight, "vector": settings.vector_weight}
    for name, ranked in lists.items():
        for rank, (index, _) in enumerate(ranked, start=1):
            fused[index] = fused.get(index, 0.0) + weights[name] / (settings.rrf_k + rank)
    merged = [
        _Merged(index, fused.get(index, 0.0) * _factor(hit, policy, durable=index < len(durable)))
        for index, hit in enumerate(hits)
    ]
    merged.sort(key=lambda m: (-m.score, m.chunk_id))
    return [_rescored(hits[m.chunk_id], m.score) for _, m in zip(range(k), bounded_order(merged, lists), strict=False)]


@dataclass
class _Merged:
    chunk_id: int  # the hit's index in durable + sessions (bounded_order's key)
    score: float


def _joint_lists(hits: list[SearchHit], n_durable: int) -> dict[str, list[tuple[int, float]]]:
    def explain(hit: SearchHit) -> StageScores:
        assert hit.explain is not None, "merge needs each hit's stage ranks (search with debug)"
        return hit.explain

    # A durable hit found only through LLM expansion (dory/search/llm_assist) keeps that evidence:
    # its variant-match rank after every plain keyword match, its cosine to the hypothetical answer.
    by_side: list[list[tuple[tuple[int, int], int]]] = [[], []]
    vector: list[tuple[int, float]] = []
    for index, hit in enumerate(hits):
        e = explain(hit)
        if e.bm25_rank is not None:
            by_side[index >= n_durable].append(((0, e.bm25_rank), index))
        elif e.expanded_rank is not None:
            by_side[index >= n_durable].append(((1, e.expanded_rank), index))
        cosines = [score for score in (e.vector_score, e.hyde_score) if score is not None]
        if cosines:
            vector.append((index, max(cosines)))
    lexical = [index for pair in zip_longest(*(sorted(side) for side in by_side)) for index in _present(pair)]
    vector.sort(key=lambda item: (-item[1], item[0]))
    return {"bm25": [(index, 0.0) for index in lexical], "vector": vector}


def _present(pair: tuple[tuple[tuple[int, int], int] | None, ...]) -> list[int]:
    return [item[1] for item in pair if item is not None]


def _factor(hit: SearchHit, policy: RankingPolicy, durable: bool) -> float:
    if durable:  # already decided by the durable search, with the note's frontmatter
        return hit.explain.policy_factor if hit.explain and hit.explain.policy_factor is not None else 1.0
    return policy.factor(hit.path, {})[0]


def _rescored(hit: SearchHit, score: float) -> SearchHit:
    explain = hit.explain.model_copy(update={"final": score}) if hit.explain else None
    return hit.model_copy(update={"score": round(score, 6), "explain": explain})
