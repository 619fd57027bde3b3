"""`/v1` writes: exact and semantic writes, proposals, sessions and context marks.

Every write goes to the index's one writer (the daemon's writer thread in `dory serve`) and answers
with the generation holding it (body field where the model has one, and the `Dory-Generation`
header). `Idempotency-Key` is the write's request id: sending the same write again with the same key
is answered from its receipt instead of being applied twice. A caller with a token is recorded as
the agent of what it writes. replace and forget must name the version they change (`If-Match` or
`expected_hash`): a mismatch is 409 hash_conflict with the current hash.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Request, Response

from dory.errors import ExpectedHashRequired, UsageError
from dory.models import (
    CompactRequest,
    CompactResponse,
    FlushRequest,
    FlushResponse,
    MarkRequest,
    MarkResponse,
    MemoryWriteRequest,
    MemoryWriteResponse,
    Proposal,
    ProposalCreateRequest,
    ProposalCreateResponse,
    ProposalDecision,
    ResearchRequest,
    ResearchResponse,
    SessionInfo,
    SessionIngestRequest,
    SessionIngestResponse,
    SessionUpdateRequest,
    WriteRequest,
    WriteResponse,
)
from dory.service import DoryService
from dory.surfaces.http.auth import SessionWriter, Writer
from dory.surfaces.http.errors import GUARDED, documented, from_parameters
from dory.surfaces.http.freshness import GENERATION_HEADER

# Any write may meet a missing target, a conflict, unsafe content or a failing disk.
router = APIRouter(prefix="/v1", tags=["write"], responses=documented(*GUARDED, 404, 409, 422, 503, 507))
IdempotencyKey = Annotated[
    str | None,
    Header(
        min_length=8,
        max_length=64,
        pattern=r"^[A-Za-z0-9_-]+$",
        description="the write's request id: a retry with the same key is applied once",
    ),
]


def _service(request: Request) -> DoryService:
    service: DoryService = request.app.state.service
    return service


async def _done(request: Request, response: Response, kind: str, body: dict[str, Any]) -> None:
    """After a write: the generation header, and an event for /v1/stream."""
    generation = body.get("generation")
    if generation is None:
        generation = await request.app.state.limits.run(_service(request).generation)
    response.headers[GENERATION_HEADER] = str(generation)
    request.app.state.events.publish(kind, body | {"generation": generation})


def _expected_hash(req: WriteRequest, if_match: str | None) -> str | None:
    header = if_match.strip().removeprefix("W/").strip('"') if if_match else None
    if header and req.expected_hash and header != req.expected_hash:
        raise UsageError("If-Match and expected_hash name different versions; send one", if_match=header)
    expected = header or req.expected_hash
    if req.kind in ("replace", "forget") and not expected and not req.dry_run:
        raise ExpectedHashRequired(
            f'{req.kind} over HTTP needs the hash of the version you read: If-Match: "sha256:…" '
            "(the ETag of GET /v1/notes/PATH) or expected_hash"
        )
    return expected


@router.post("/write", responses=documented(428), summary="Create, append, replace or forget one note exactly")
async def write(
    req: WriteRequest,
    request: Request,
    response: Response,
    who: Writer,
    if_match: Annotated[str | None, Header(max_length=200)] = None,
    idempotency_key: IdempotencyKey = None,
) -> WriteResponse:
    req = req.model_copy(update={"expected_hash": _expected_hash(req, if_match), "agent": who.agent(req.agent)})
    result: WriteResponse = await request.app.state.limits.run(_service(request).write, req, idempotency_key)
    if not result.dry_run:
        await _done(request, response, "write", result.model_dump(mode="json"))
        response.headers["ETag"] = f'"{result.hash}"'
    return result


@router.post("/memory-write", summary="Remember something about a subject (evidence + claim + canonical page)")
async def memory_write(
    req: MemoryWriteRequest, request: Request, response: Response, who: Writer, idempotency_key: IdempotencyKey = None
) -> MemoryWriteResponse:
    req = req.model_copy(update={"agent": who.agent(req.agent)})
    run = request.app.state.limits.run
    result: MemoryWriteResponse = await run(_service(request).memory_write, req, idempotency_key, expensive=True)
    if not result.dry_run:
        await _done(request, response, "memory_write", result.model_dump(mode="json"))
    return result


@router.post("/proposals", summary="Propose a memory write for review (idempotent by source)")
async def proposal_create(
    req: ProposalCreateRequest, request: Request, response: Response, who: Writer
) -> ProposalCreateResponse:
    result: ProposalCreateResponse = await request.app.state.limits.run(_service(request).proposal_create, req)
    await _done(request, response, "proposal", result.model_dump(mode="json"))
    return result


@router.post("/proposals/{proposal_id}/apply", summary="Apply a proposal (409 stale_proposal if its target moved)")
async def proposal_apply(
    proposal_id: str, request: Request, response: Response, who: Writer, idempotency_key: IdempotencyKey = None
) -> Proposal:
    decision = from_parameters(ProposalDecision, id=proposal_id)
    result: Proposal = await request.app.state.limits.run(_service(request).proposal_apply, decision, idempotency_key)
    await _done(request, response, "proposal", result.model_dump(mode="json"))
    return result


@router.post("/proposals/{proposal_id}/reject", summary="Reject a proposal, with a reason")
async def proposal_reject(
    proposal_id: str, decision: ProposalDecision, request: Request, response: Response, who: Writer
) -> Proposal:
    if decision.id != proposal_id:
        raise UsageError("the body's id is not the proposal in the path", path_id=proposal_id, body_id=decision.id)
    result: Proposal = await request.app.state.limits.run(_service(request).proposal_reject, decision)
    await _done(request, response, "proposal", result.model_dump(mode="json"))
    return result


@router.post("/sessions/ingest", summary="Ingest a session transcript (markdown, JSONL, Claude Code, Codex)")
async def session_ingest(
    req: SessionIngestRequest, request: Request, response: Response, who: SessionWriter
) -> SessionIngestResponse:
    req = req.model_copy(update={"agent": who.agent(req.agent)})
    result: SessionIngestResponse = await request.app.state.limits.run(_service(request).sessions.ingest, req)
    if not result.dry_run:
        await _done(request, response, "session", result.model_dump(mode="json"))
    return result


@router.post("/sessions/update", summary="Rename, delete (tombstone) or restore a session")
async def session_update(
    req: SessionUpdateRequest, request: Request, response: Response, who: SessionWriter
) -> SessionInfo:
    result: SessionInfo = await request.app.state.limits.run(_service(request).sessions.update, req)
    await _done(request, response, "session", result.model_dump(mode="json"))
    return result


@router.post("/sessions/compact", summary="Write a session's continuation summary (facts go to proposals first)")
async def session_compact(
    req: CompactRequest, request: Request, response: Response, who: SessionWriter
) -> CompactResponse:
    run = request.app.state.limits.run
    result: CompactResponse = await run(_service(request).sessions.compact, req, expensive=True)
    if not result.dry_run:
        await _done(request, response, "session", result.model_dump(mode="json"))
    return result


@router.post("/sessions/flush", summary="Propose a session's durable facts (compaction's first step, alone)")
async def session_flush(req: FlushRequest, request: Request, response: Response, who: SessionWriter) -> FlushResponse:
    result: FlushResponse = await request.app.state.limits.run(_service(request).sessions.flush, req)
    if not result.dry_run:
        await _done(request, response, "session", result.model_dump(mode="json"))
    return result


@router.post("/context/mark", summary="Raise (or reset) a message's weight so context packing keeps it")
async def context_mark(req: MarkRequest, request: Request, response: Response, who: SessionWriter) -> MarkResponse:
    result: MarkResponse = await request.app.state.limits.run(_service(request).context.mark, req)
    await _done(request, response, "session", result.model_dump(mode="json"))
    return result


@router.post("/research/save", summary="Research a question and save it under references/research/ (a new note)")
async def research_save(req: ResearchRequest, request: Request, response: Response, who: Writer) -> ResearchResponse:
    req = req.model_copy(update={"save": True})
    result: ResearchResponse = await request.app.state.limits.run(_service(request).research, req, expensive=True)
    await _done(request, response, "research", {"path": result.saved})
    return result
