"""The MCP tool surface: a few tools, each generated from a shared request model and answering with
the shared response model (structured content) plus a short text rendering for models that read text.

A tool's parameters are its request model's fields (with their types, limits and descriptions), minus
the fields the server decides (the agent, which is the caller's token name). A tool's description is
written for a model: when to use it, what it returns, its limits. Every tool names the token scope it
needs; a caller without that scope neither sees nor may call it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, cast

from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field
from pydantic.fields import FieldInfo

from dory.models import (
    ActiveMemoryRequest,
    ActiveMemoryResponse,
    GetRequest,
    GetResponse,
    LinkRequest,
    LinkResponse,
    MemoryWriteRequest,
    MemoryWriteResponse,
    Proposal,
    ProposalDecision,
    ProposalListRequest,
    ProposalListResponse,
    ResearchRequest,
    ResearchResponse,
    SearchRequest,
    SearchResponse,
    SessionIngestRequest,
    SessionIngestResponse,
    TokenScope,
    WakeRequest,
    WakeResponse,
    WriteRequest,
    WriteResponse,
)
from dory.service import DoryService


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    request: type[BaseModel]
    response: type[BaseModel]
    scope: TokenScope
    run: Callable[[DoryService, Any], BaseModel]
    text: Callable[[Any], str]
    read_only: bool = True
    destructive: bool = False
    idempotent: bool = True
    hidden: frozenset[str] = frozenset({"agent"})  # set by the server, never by the caller
    fixed: dict[str, Any] = field(default_factory=dict)  # fields this tool always sets

    def annotations(self) -> ToolAnnotations:
        return ToolAnnotations(
            title=self.title,
            read_only_hint=self.read_only,
            destructive_hint=self.destructive,
            idempotent_hint=self.idempotent,
            open_world_hint=False,
        )

    def parameters(self) -> list[inspect.Parameter]:
        """The request model's fields as keyword parameters (what the SDK turns into the input schema)."""
        params = []
        for name, info in self.request.model_fields.items():
            if name in self.hidden or name in self.fixed:
                continue
            annotation = cast(Any, Annotated)[(info.annotation, *info.metadata, Field(description=info.description))]
            default = inspect.Parameter.empty if info.is_required() else _default_of(info)
            params.append(
                inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default)
            )
        return params


def _default_of(info: FieldInfo) -> Any:
    return info.get_default(call_default_factory=True)


# -- text renderings (short: the structured content carries everything) -------------------------------


def _hits(res: SearchResponse) -> str:
    if not res.hits:
        return "no results"
    return "\n".join(f"{n}. {h.path} — {h.title} (score {h.score:.3f})" for n, h in enumerate(res.hits, 1))


def _note(res: GetResponse) -> str:
    return f"{res.path} lines {res.from_line}-{res.to_line} of {res.total_lines} ({res.hash})\n\n{res.content}"


def _written(res: WriteResponse | MemoryWriteResponse) -> str:
    return f"{res.action}: {', '.join(res.files)} (generation {res.generation})"


def _links(res: LinkResponse) -> str:
    return "\n".join(f"{e.source} -> {e.target} ({e.kind})" for e in res.edges) or "no links"


def _proposals(res: ProposalListResponse) -> str:
    return "\n".join(f"{p.id} [{p.status}] {p.write.subject}: {p.write.content[:80]}" for p in res.proposals) or "none"


def _ingested(res: SessionIngestResponse) -> str:
    return "\n".join(f"{s.session_id}: {s.action}, {s.added} new messages" for s in res.sessions) or "nothing ingested"


# -- the tools ---------------------------------------------------------------------------------------

TOOLS: list[ToolSpec] = [
    ToolSpec(
        "search",
        "Search memory",
        "Search the user's durable memory (notes, people, projects, decisions) and, with corpus='sessions' or "
        "'all', past agent sessions. Use it before answering anything that may depend on what the user or "
        "earlier sessions recorded. mode: hybrid (default, best), bm25 (exact words, names, ids), vector "
        "(meaning), exact (a literal string). Returns ranked hits with path, title, snippet and score; read a "
        "hit in full with `get`. An empty list means nothing relevant is stored.",
        SearchRequest,
        SearchResponse,
        "read",
        lambda svc, req: svc.search(req),
        _hits,
    ),
    ToolSpec(
        "get",
        "Read a note",
        "Read a note exactly, by its corpus path (from a search hit), optionally a line range. Returns the "
        "text, frontmatter and the note's hash: pass the hash as expected_hash to `write` to replace or "
        "forget it safely.",
        GetRequest,
        GetResponse,
        "read",
        lambda svc, req: svc.get(req),
        _note,
    ),
    ToolSpec(
        "write",
        "Write a note exactly",
        "Write one markdown note exactly: create (never overwrites), append, replace (needs expected_hash "
        "from `get`) or forget (needs a reason; leaves a tombstone). Use it for notes the user asked you to "
        "keep; for a fact about a person or project prefer `memory_write`. Unsafe content is refused (or, "
        "with soft=true, quarantined). Returns the new hash and the index generation holding the write.",
        WriteRequest,
        WriteResponse,
        "write",
        lambda svc, req: svc.write(req),
        _written,
        read_only=False,
        destructive=True,
        idempotent=False,
    ),
    ToolSpec(
        "memory_write",
        "Remember a fact",
        "Remember something durable about a subject (a person, project, concept or decision): it is recorded "
        "as evidence, added to the claim store and, with allow_canonical=true, to the subject's page; "
        "otherwise it becomes a proposal for the user to review. Earlier claims are superseded, never "
        "deleted. Use it for stable facts, preferences and decisions, not for passing remarks.",
        MemoryWriteRequest,
        MemoryWriteResponse,
        "write",
        lambda svc, req: svc.memory_write(req),
        _written,
        read_only=False,
        idempotent=False,
    ),
    ToolSpec(
        "wake",
        "Session start context",
        "The short frozen block to read at the start of a session: who the user is, their preferences, "
        "boundaries, active projects and recent sessions, under a token budget. Call it once at the start.",
        WakeRequest,
        WakeResponse,
        "read",
        lambda svc, req: svc.wake(req),
        lambda res: res.block,
    ),
    ToolSpec(
        "active_memory",
        "Memory for this prompt",
        "Before answering a prompt that may depend on what the user's memory holds: NONE, or a short block "
        "with a one-line synthesis and at most a few evidence lines (path:lines — quote), within a deadline. "
        "profile auto picks coding, writing or default from the prompt; coding never quotes personal pages. "
        "Past sessions are searched only when the prompt asks about recent work.",
        ActiveMemoryRequest,
        ActiveMemoryResponse,
        "read",
        lambda svc, req: svc.active_memory(req),
        lambda res: res.block,
    ),
    ToolSpec(
        "recall",
        "Recall past sessions",
        "Search past agent sessions (what was said and done before, by any agent) for a query: hybrid search "
        "over session turns, newest context kept. Use it when the user refers to earlier conversations.",
        SearchRequest,
        SearchResponse,
        "read",
        lambda svc, req: svc.search(req),
        _hits,
        fixed={"mode": "recall", "corpus": "sessions"},
    ),
    ToolSpec(
        "research",
        "Research a question",
        "Answer a question from the user's memory with cited evidence: the best search hits are read and the "
        "answer cites each claim as [path:start-end] (written by the configured LLM, else the evidence's best "
        "sentences; citations that do not resolve are dropped and listed). Returns the answer, the evidence "
        "with quotes, the sources and a markdown artifact. Never saves (use `write` to keep it).",
        ResearchRequest,
        ResearchResponse,
        "read",
        lambda svc, req: svc.research(req),
        lambda res: res.markdown,
        fixed={"save": False},
    ),
    ToolSpec(
        "link",
        "Linked notes",
        "The notes linked from a note (direction 'out'), linking to it ('in', its backlinks) or both, up to "
        "a few hops. Use it to follow context around a note found by search.",
        LinkRequest,
        LinkResponse,
        "read",
        lambda svc, req: svc.links(req),
        _links,
    ),
    ToolSpec(
        "proposals_list",
        "List proposals",
        "Memory writes proposed for review (by dreaming or by agents without canonical rights), by status.",
        ProposalListRequest,
        ProposalListResponse,
        "read",
        lambda svc, req: svc.proposal_list(req.status),
        _proposals,
    ),
    ToolSpec(
        "proposal_apply",
        "Apply a proposal",
        "Apply a proposed memory write the user approved. Refused as stale when its target changed since.",
        ProposalDecision,
        Proposal,
        "write",
        lambda svc, req: svc.proposal_apply(req),
        lambda res: f"{res.id}: {res.status}",
        read_only=False,
        idempotent=False,
    ),
    ToolSpec(
        "proposal_reject",
        "Reject a proposal",
        "Reject a proposed memory write, with the user's reason.",
        ProposalDecision,
        Proposal,
        "write",
        lambda svc, req: svc.proposal_reject(req),
        lambda res: f"{res.id}: {res.status}",
        read_only=False,
        idempotent=False,
    ),
    ToolSpec(
        "session_ingest",
        "Save a session",
        "Save a conversation transcript (markdown, JSONL, Claude Code or Codex format) into the session "
        "plane, so later sessions can recall it and the nightly digest can summarise it. Idempotent: "
        "sending the same transcript again adds only new messages.",
        SessionIngestRequest,
        SessionIngestResponse,
        "sessions",
        lambda svc, req: svc.sessions.ingest(req),
        _ingested,
        read_only=False,
    ),
]
