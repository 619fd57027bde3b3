"""The LLM's part in one search: what was asked for, the calls, the fallbacks and what they changed.

Expansion starts before the plain retrieval (its request runs while FTS5 and the vector index
answer), rerank runs on the selected candidates. Any failure leaves the search as it would be
without the LLM and adds one warning, `query expansion skipped (<code>): …` or `rerank skipped
(<code>): …`, with a code from call.py; nothing here raises.

Exact mode takes no LLM help (a literal search has nothing to expand or reorder); asking for it
there gets a warning. The session plane (`--in sessions`) does not use this engine at all. The
merge of `--in all` (sessions/recall.py) fuses both sides again from their stage scores: a variant
match counts after every plain keyword match, a hypothetical-answer cosine as a vector score, and
the rerank's order is not kept there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dory.config import SearchSettings
from dory.errors import BackendUnavailable
from dory.models import AssistReport, SearchRequest
from dory.search.hits import Candidate
from dory.search.llm_assist import expand, rerank
from dory.search.llm_assist.call import AssistFailed, Pending, SearchLlm
from dory.search.query import ParsedQuery

Lists = dict[str, list[tuple[int, float]]]


def expansion_skipped(failure: AssistFailed) -> str:
    return f"query expansion skipped ({failure.code}): {failure.detail}; results are from the plain query"


def rerank_skipped(failure: AssistFailed) -> str:
    return f"rerank skipped ({failure.code}): {failure.detail}; results keep their plain order"


class SearchAssist:
    def __init__(self, llm: SearchLlm, cfg: SearchSettings, req: SearchRequest, warnings: list[str]) -> None:
        self.llm = llm
        self.warnings = warnings
        self.expand = cfg.expand if req.expand is None else req.expand
        self.rerank = cfg.rerank if req.rerank is None else req.rerank
        self.rerank_top = cfg.rerank_top
        if req.mode == "exact" and (self.expand or self.rerank):
            warnings.append("query expansion and rerank do not apply to exact mode; it searches the literal text")
            self.expand = self.rerank = False
        self.report = AssistReport() if self.expand or self.rerank else None
        self.moved_from: dict[int, int] = {}  # chunk id → 1-based position before the rerank
        self._pending: Pending[dict[str, Any]] | None = None
        if self.expand or self.rerank:
            try:
                llm.client()
            except AssistFailed as failure:  # no LLM: say so now, and select no more than a plain search
                warnings += [expansion_skipped(failure)] * self.expand + [rerank_skipped(failure)] * self.rerank
                self.expand = self.rerank = False
        if self.expand:
            try:
                self._pending = llm.start(expand.PROMPT, expand.user_message(req.query), expand.SCHEMA, "expand")
            except AssistFailed as failure:
                warnings.append(expansion_skipped(failure))

    def keep(self, k: int) -> int:
        """How many candidates to select: the rerank may lift one from below the first k."""
        return max(k, self.rerank_top) if self.rerank else k

    def add_expansion(
        self,
        parsed: ParsedQuery,
        lists: Lists,
        lexical: Callable[[ParsedQuery], list[tuple[int, float]]],
        vector: Callable[[str], list[tuple[int, float]]] | None,
    ) -> None:
        """Wait for the expansion and add its lists: `expanded` next to bm25, `hyde` next to vector."""
        if self._pending is None:
            return
        try:
            found = expand.from_answer(self._pending.result(), parsed)
        except AssistFailed as failure:
            self.warnings.append(expansion_skipped(failure))
            return
        assert self.report is not None  # set whenever expansion was asked for
        variants = expand.variant_query(found, parsed)
        if "bm25" in lists and variants is not None:
            lists[expand.EXPANDED] = lexical(variants)
            self.report.expanded_lists.append(expand.EXPANDED)
            self.report.variants = found.shown_variants()
        if "vector" in lists and vector is not None and found.hypothetical:
            try:
                lists[expand.HYDE] = vector(found.hypothetical)
            except BackendUnavailable:  # the query's own vector search answered: this one hardly fails
                return
            self.report.expanded_lists.append(expand.HYDE)
            self.report.hypothetical = found.hypothetical

    def reorder(
        self, parsed: ParsedQuery, candidates: list[Candidate], lists: Mapping[str, list[tuple[int, float]]]
    ) -> list[Candidate]:
        """`candidates` with the first rerank_top in the model's (bounded) order, or as they were."""
        top = candidates[: self.rerank_top]
        if not self.rerank or len(top) < 2:
            return candidates
        try:
            pending = self.llm.start(
                rerank.PROMPT, rerank.user_message(parsed.raw, top), rerank.schema(len(top)), "rerank"
            )
            order = rerank.model_order(pending.result(), len(top))
        except AssistFailed as failure:
            self.warnings.append(rerank_skipped(failure))
            return candidates
        final = rerank.bounded(order, rerank.clear_top(parsed, top[0], lists))
        assert self.report is not None
        self.report.reranked = True
        self.report.rerank_moved = sum(1 for slot, p in enumerate(final) if slot != p)
        self.moved_from = {top[p].chunk_id: p + 1 for p in final}
        return [top[p] for p in final] + candidates[len(top) :]
