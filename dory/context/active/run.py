"""The stages of active memory, in order, each given what is left of the deadline (see deadline.py).

1. profile: the given one, or `auto` classified from the prompt (classify.py);
2. policy: which pages the profile may quote (policy.py);
3. durable search: hybrid search of durable memory, not logged as recall, over-fetched so the policy can
   leave pages out. With an embedder, a keyword-only search runs first (a few ms): when the hybrid
   search runs late (a cold process loads the model on its first query), its keyword hits answer and
   the block names the dropped hybrid stage;
4. session recall: the session plane, only when the prompt asks about recent work ("yesterday", "last
   time", "we did", ...); otherwise skipped, which is not a deadline drop;
5. admission and 6. the block (block.py): what is admitted becomes a synthesis and evidence lines, and
   when nothing is, the answer is exactly `NONE`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass

from dory.context.active import block
from dory.context.active.classify import classify
from dory.context.active.deadline import Clock, StageClock
from dory.context.active.policy import PageMeta, SourcePolicy, policy_for
from dory.errors import UsageError
from dory.models import ActiveMemoryRequest, ActiveMemoryResponse, SearchHit, SearchRequest, SearchResponse

RECENT_WORK = re.compile(
    r"\b(?:yesterday|last (?:time|week|session|night|call|meeting)|earlier|we did|we were|we discussed|we decided"
    r"|did we|have we|previous(?:ly)?|recently|the other day|this morning|remind me|where were we|pick up where"
    r"|left off|continue (?:where|from))\b",
    re.IGNORECASE,
)
OVERFETCH = 4  # durable hits fetched per evidence line, so the source policy can drop some
# The LLM's expansion and rerank have their own deadline (search.llm_deadline_ms, 1.5 s by default),
# longer than active memory's whole budget: its searches never ask for them, whatever the settings say.
NO_LLM = {"expand": False, "rerank": False}
QUERY_CHARS = 2000  # the head of a long prompt is the query (a pasted log adds noise, not evidence)


@dataclass(frozen=True)
class ActiveDeps:
    search: Callable[[SearchRequest], SearchResponse]
    page_meta: Callable[[list[str]], dict[str, PageMeta]]
    profiles: Collection[str]
    vectors: bool  # an embedder is configured: durable search is hybrid, not keyword-only
    clock: Clock = time.monotonic


@dataclass
class _Found:
    durable: list[SearchHit]
    sessions: list[SearchHit]
    excluded: list[str]
    warnings: list[str]
    recall_asked: bool


def active_memory(req: ActiveMemoryRequest, deps: ActiveDeps) -> ActiveMemoryResponse:
    if req.profile != "auto" and req.profile not in deps.profiles:
        known = sorted(deps.profiles)
        raise UsageError(
            f"unknown profile {req.profile!r}; use auto or one of: {', '.join(known)}", profile=req.profile, known=known
        )
    clock = StageClock(deps.clock, req.deadline_ms)
    chosen = clock.run("profile", lambda: (req.profile, "given") if req.profile != "auto" else classify(req.prompt))
    profile, reason = chosen or ("default", "not classified: the deadline had passed")
    policy = clock.run("policy", lambda: policy_for(profile))
    found = _Found([], [], [], [], bool(RECENT_WORK.search(req.prompt)))
    # Without a policy the deadline has passed (the clock only moves on): both searches are listed as skipped.
    _retrieve(req, deps, clock, policy or policy_for("privacy"), found)
    items = clock.run("admission", lambda: _admit(req, found), bounded=False) or []
    summary = block.synthesis(req.prompt, items[0]) if items else None
    evidence = [block.evidence(hit) for hit in items]
    text = clock.run(
        "block",
        lambda: block.render(profile, summary, evidence, clock.dropped, req.max_chars) if summary else block.NONE,
        bounded=False,
    )
    return ActiveMemoryResponse(
        found=summary is not None,
        block=text or block.NONE,
        profile=profile,
        profile_reason=reason,
        synthesis=summary,
        evidence=evidence,
        stages=clock.stages,
        dropped_stages=clock.dropped,
        excluded=found.excluded,
        deadline_ms=req.deadline_ms,
        elapsed_ms=clock.elapsed_ms(),
        warnings=found.warnings,
    )


def _retrieve(
    req: ActiveMemoryRequest, deps: ActiveDeps, clock: StageClock, policy: SourcePolicy, found: _Found
) -> None:
    query = _query(req.prompt)
    if deps.vectors:  # keyword hits first: they stand in when the hybrid search (and its model) runs late
        keyword = clock.run("keyword_search", lambda: _durable(query, "bm25", req.max_evidence, deps, policy))
        if keyword is not None:
            found.durable, found.excluded, _ = keyword
            clock.note(f"{len(found.durable)} hits within the policy, {len(found.excluded)} left out")
    else:
        clock.skip("keyword_search", "the durable search is keyword-only (no embedder)")
    durable = clock.run("durable_search", lambda: _durable(query, "hybrid", req.max_evidence, deps, policy))
    if durable is not None:
        found.durable, found.excluded, warnings = durable
        found.warnings += warnings
        clock.note(f"{len(found.durable)} hits within the policy, {len(found.excluded)} left out")
    if not found.recall_asked:
        clock.skip("session_recall", "the prompt does not ask about recent work")
        return
    request = SearchRequest(
        query=query, corpus="sessions", mode="recall", record=False, k=req.max_evidence, debug=True, **NO_LLM
    )
    recalled = clock.run("session_recall", lambda: deps.search(request))
    if recalled is not None:
        found.sessions = recalled.hits
        found.warnings += recalled.warnings


def _durable(
    query: str, mode: str, wanted: int, deps: ActiveDeps, policy: SourcePolicy
) -> tuple[list[SearchHit], list[str], list[str]]:
    request = SearchRequest(query=query, mode=mode, record=False, k=wanted * OVERFETCH, debug=True, **NO_LLM)
    response = deps.search(request)
    meta = deps.page_meta(sorted({hit.path for hit in response.hits}))
    kept, excluded = [], []
    for hit in response.hits:
        why = policy.excludes(hit.path, meta.get(hit.path, PageMeta()))
        if why is None:
            kept.append(hit)
        elif f"{hit.path}: {why}" not in excluded:
            excluded.append(f"{hit.path}: {why}")
    return kept, excluded, response.warnings


def _admit(req: ActiveMemoryRequest, found: _Found) -> list[SearchHit]:
    """Admitted hits, best first: the session turns first when the prompt asked about recent work."""
    wanted = block.terms(_query(req.prompt))
    sessions = [hit for hit in found.sessions if block.admitted(hit, wanted)]
    durable = [hit for hit in found.durable if block.admitted(hit, wanted)]
    return (sessions + durable if found.recall_asked else durable)[: req.max_evidence]


def _query(prompt: str) -> str:
    """The prompt without its recent-work phrases ("yesterday", "we did"): they say where to look, not what."""
    stripped = RECENT_WORK.sub(" ", prompt[:QUERY_CHARS])
    return stripped if stripped.strip() else prompt[:QUERY_CHARS]
