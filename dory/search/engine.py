"""Search: candidates from each retriever, reciprocal rank fusion, the ranking policy, collapse.

Modes: `bm25` (FTS5 only), `vector` (embeddings only), `hybrid` (both, fused), `exact` (literal
substring). Every non-exact mode scores a candidate as Σ weight / (rrf_k + rank) over the lists it
appears in, times the policy factor; scores are therefore comparable within one answer, never
across modes. The policy's reordering is bounded (bounded.py): a result never falls below one that
every retriever ranks clearly lower, so an answer's scores are not always in descending order.

With an LLM configured and asked for (search.expand / search.rerank, or per request), expansion
adds lists to the fusion and a rerank reorders the selected top (llm_assist/); both fall back to
the plain answer with a warning.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from dory.config import Settings
from dory.corpus.roots import read_root
from dory.errors import BackendUnavailable
from dory.index.store import IndexStore
from dory.models import SearchHit, SearchRequest, SearchResponse, StageScores
from dory.search import hits as H
from dory.search.bounded import bounded_order
from dory.search.exact import exact_candidates
from dory.search.floor import nothing_found_warning, with_evidence
from dory.search.lexical import lexical_candidates
from dory.search.llm_assist.assist import SearchAssist
from dory.search.llm_assist.call import SearchLlm
from dory.search.llm_assist.expand import EXPANDED, EXTRA_WEIGHT, HYDE, evidence_view
from dory.search.policy import RankingPolicy
from dory.search.query import ParsedQuery, parse_query
from dory.search.scope import scope_sql

if TYPE_CHECKING:
    import numpy as np  # loaded by the vector side only: a bm25 search imports no numpy (SPEC §11)


class VectorSide(Protocol):
    """Nearest chunks to a query text; raises BackendUnavailable when vectors cannot be used."""

    def search(self, query: str, k: int, allowed: np.ndarray | None) -> list[tuple[int, float]]: ...

    def pending(self) -> int: ...


class SearchEngine:
    def __init__(self, settings: Settings, store: IndexStore, vectors: VectorSide | None, llm: SearchLlm) -> None:
        self.settings = settings
        self.store = store
        self.vectors = vectors
        self.policy = RankingPolicy.from_settings(settings.search.policy)
        self.llm = llm  # the service's one client: expansion and rerank share its connections

    def search(self, req: SearchRequest) -> SearchResponse:
        parsed = parse_query(req.query)
        limit = max(self.settings.search.candidates, req.k * 5)
        warnings: list[str] = []
        assist = SearchAssist(self.llm, self.settings.search, req, warnings)  # starts the expansion call
        lists = self._retrieve(req, parsed, limit, warnings)
        assist.add_expansion(
            parsed,
            lists,
            lambda variants: lexical_candidates(self.store, variants, req.scope, limit),
            lambda text: self._vector(req, limit, text),
        )
        ranked = self._exact_order(lists["exact"]) if req.mode == "exact" else self._fuse(lists)
        candidates, weak_dropped = self._select(req, ranked, lists, assist.keep(req.k))
        candidates = assist.reorder(parsed, candidates, lists)[: req.k]
        hits = [
            self._hit(req, parsed, c, pos, lists, assist.moved_from.get(c.chunk_id))
            for pos, c in enumerate(candidates, start=1)
        ]
        pending = self._pending() if req.mode in ("vector", "hybrid") else 0
        if pending and not warnings:  # no warning yet: the vector side answered, without those chunks
            warnings.append(f"{pending} chunks are not embedded yet; their text is found by keywords only")
        if not hits and weak_dropped:
            warnings.append(nothing_found_warning(weak_dropped, self.settings.search.vector_floor))
        return SearchResponse(
            query=req.query,
            mode=req.mode,
            hits=hits,
            warnings=warnings,
            vectors_pending=pending,
            assist=assist.report if req.debug else None,
        )

    # -- retrieval ---------------------------------------------------------------------------
    def _retrieve(
        self, req: SearchRequest, parsed: ParsedQuery, limit: int, warnings: list[str]
    ) -> dict[str, list[tuple[int, float]]]:
        if req.mode == "exact":
            return {"exact": exact_candidates(self.store, req.query, req.scope, limit)}
        lists: dict[str, list[tuple[int, float]]] = {}
        if req.mode in ("bm25", "hybrid"):
            lists["bm25"] = lexical_candidates(self.store, parsed, req.scope, limit)
        if req.mode in ("vector", "hybrid"):
            try:
                lists["vector"] = self._vector(req, limit)
            except BackendUnavailable as exc:
                if req.mode == "vector":
                    raise
                warnings.append(f"vector search unavailable, results are keyword-only: {exc.message}")
        return lists

    def _vector(self, req: SearchRequest, limit: int, text: str | None = None) -> list[tuple[int, float]]:
        if self.vectors is None:
            raise BackendUnavailable("no embedder is configured (embedder.backend = none)")
        allowed = None
        if not req.scope.is_empty():
            where, params = scope_sql(req.scope)
            rows = self.store.conn.execute(
                f"SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id WHERE {where}", params
            ).fetchall()
            import numpy as np

            allowed = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
            if len(allowed) == 0:
                return []
        return self.vectors.search(text if text is not None else req.query, limit, allowed)

    def _pending(self) -> int:
        return self.vectors.pending() if self.vectors is not None else 0

    # -- scoring -----------------------------------------------------------------------------
    def _fuse(self, lists: dict[str, list[tuple[int, float]]]) -> list[tuple[int, float]]:
        cfg = self.settings.search
        weights = {"bm25": cfg.lexical_weight, "vector": cfg.vector_weight}
        weights |= {EXPANDED: EXTRA_WEIGHT * cfg.lexical_weight, HYDE: EXTRA_WEIGHT * cfg.vector_weight}
        fused: dict[int, float] = {}
        for name, ranked in lists.items():
            for rank, (chunk_id, _) in enumerate(ranked, start=1):
                fused[chunk_id] = fused.get(chunk_id, 0.0) + weights[name] / (cfg.rrf_k + rank)
        return sorted(fused.items(), key=lambda item: (-item[1], item[0]))

    @staticmethod
    def _exact_order(ranked: list[tuple[int, float]]) -> list[tuple[int, float]]:
        return [(chunk_id, 1.0) for chunk_id, _ in ranked]

    def _select(
        self, req: SearchRequest, ranked: list[tuple[int, float]], lists: dict[str, list[tuple[int, float]]], keep: int
    ) -> tuple[list[H.Candidate], int]:
        """The first `keep` results, and how many weak candidates were left out (see floor.py)."""
        found = H.load_candidates(self.store, [chunk_id for chunk_id, _ in ranked])
        floor = self.settings.search.vector_floor
        evidence = None if req.mode == "exact" else with_evidence(evidence_view(lists), floor)
        candidates, weak_dropped = [], 0
        for chunk_id, score in ranked:
            cand = found.get(chunk_id)
            if cand is None:
                continue
            cand.factor, cand.rules = self.policy.factor(cand.path, cand.fields)
            if cand.factor == 0:
                continue
            cand.weak = evidence is not None and chunk_id not in evidence
            if cand.weak and not req.include_weak:
                weak_dropped += 1
                continue
            cand.score = score if req.mode == "exact" else score * cand.factor
            if req.min_score is not None and round(cand.score, 6) < req.min_score:  # as the hit shows it
                continue
            candidates.append(cand)
        ordered: Iterable[H.Candidate] = candidates
        if req.mode != "exact":
            candidates.sort(key=lambda c: (-c.score, c.path, c.ordinal))
            # With one factor for every candidate the fused order already keeps the bound (a result
            # that dominates another scores more in every list), so the quadratic check is skipped.
            if len({c.factor for c in candidates}) > 1:
                ordered = bounded_order(candidates, lists)
        return _keep(ordered, keep, per_file=req.per_file, collapse=req.mode != "exact"), weak_dropped

    def _hit(
        self,
        req: SearchRequest,
        parsed: ParsedQuery,
        c: H.Candidate,
        position: int,
        lists: dict[str, list[tuple[int, float]]],
        rerank_from: int | None,
    ) -> SearchHit:
        stages = stage_ranks(c.chunk_id, lists)
        explain = None
        if req.debug:
            fused = c.score / c.factor if req.mode != "exact" else None
            explain = StageScores(
                **stages,
                fused=fused,
                policy_factor=c.factor,
                policy_rules=c.rules,
                final=c.score,
                rerank_from=rerank_from,
            )
        return SearchHit(
            path=c.path,
            title=c.title,
            chunk_id=f"{c.path}#{c.ordinal}",
            start_line=c.start_line,
            end_line=c.end_line,
            heading_path=c.heading_path,
            snippet=H.snippet(c, parsed),
            evidence_class=H.evidence_class(c),
            score=round(c.score, 6),
            confidence="low" if c.weak else H.confidence(c, parsed, position, stages.get("vector_score")),
            stale_warning=H.stale_warning(read_root(self.settings, c.path), c),
            weak=True if c.weak else None,
            explain=explain,
        )


def stage_ranks(chunk_id: int, lists: dict[str, list[tuple[int, float]]]) -> dict[str, float | int | None]:
    stages: dict[str, float | int | None] = {}
    for name, ranked in lists.items():
        if name == "exact":
            continue
        for rank, (cid, score) in enumerate(ranked, start=1):
            if cid == chunk_id:
                stages[f"{name}_rank"], stages[f"{name}_score"] = rank, round(score, 6)
                break
    return stages


def _keep(candidates: Iterable[H.Candidate], k: int, per_file: bool, collapse: bool) -> list[H.Candidate]:
    """The first k candidates that survive per-file dedupe and near-duplicate collapse.

    Near-duplicate chunks from different files collapse into the copy the policy prefers (a
    canonical page beats its evidence copies). Only what is shown is compared, so the cost is
    about k comparisons per candidate scanned, not quadratic in the candidate list.
    """
    kept: list[tuple[H.Candidate, set[str]]] = []
    paths: set[str] = set()
    for cand in candidates:
        if per_file and cand.path in paths:
            continue
        grams = H.shingles(cand.text) if collapse else set()
        twin = next(
            (
                i
                for i, (other, other_grams) in enumerate(kept)
                if collapse and other.path != cand.path and H.near_duplicates(other_grams, grams)
            ),
            None,
        )
        if twin is None:
            kept.append((cand, grams))
            paths.add(cand.path)
        elif cand.factor > kept[twin][0].factor:
            kept[twin] = (cand, grams)
            paths.add(cand.path)
        if len(kept) == k:
            break
    return [cand for cand, _ in kept]
