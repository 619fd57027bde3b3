"""`/v1` reads: search, notes, wake, active memory, links, proposals, sessions, context packing, status and jobs.

Each route is the twin of a service call: the request body is the service's request model and the
answer its response model, as the CLI's `--json` prints them. Every read takes the freshness
contract's `min_generation` (see freshness.py) and any token (every scope may read).
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Header, Query, Request, Response
from pydantic import ConfigDict

from dory.errors import UsageError
from dory.models import (
    ActiveMemoryRequest,
    ActiveMemoryResponse,
    ContextPackRequest,
    ContextPackResponse,
    GetRequest,
    GetResponse,
    JobsResponse,
    LinkLintRequest,
    LinkLintResponse,
    LinkRequest,
    LinkResponse,
    Proposal,
    ProposalListResponse,
    ProposalStatus,
    RemindRequest,
    RemindResponse,
    ResearchRequest,
    ResearchResponse,
    SearchRequest,
    SearchResponse,
    SessionExportResponse,
    SessionListRequest,
    SessionListResponse,
    SessionShowResponse,
    StatusResponse,
    WakeRequest,
    WakeResponse,
)
from dory.service import DoryService
from dory.surfaces.http.auth import Reader
from dory.surfaces.http.errors import GUARDED, documented, from_parameters
from dory.surfaces.http.freshness import Fresh

router = APIRouter(prefix="/v1", tags=["read"], responses=documented(*GUARDED))


class SessionQuery(SessionListRequest):
    """The session list's filters as query parameters. The shared model refuses unknown fields, but
    the query string also carries the freshness contract's min_generation: here other parameters are
    ignored, as on every other route."""

    model_config = ConfigDict(extra="ignore")


FRESH = documented(503)  # index_behind: the index did not reach min_generation in time
FRESH_ONE = documented(404, 503)


def _service(request: Request) -> DoryService:
    service: DoryService = request.app.state.service
    return service


@router.post(
    "/search", responses=FRESH, summary="Search durable memory and/or sessions (bm25, vector, hybrid, exact, recall)"
)
async def search(req: SearchRequest, request: Request, who: Reader, generation: Fresh) -> SearchResponse:
    expensive = req.mode in ("vector", "hybrid", "recall")
    result: SearchResponse = await request.app.state.limits.run(_service(request).search, req, expensive=expensive)
    return result


@router.post("/research", responses=FRESH, summary="A question answered from cited evidence (never saved here)")
async def research(req: ResearchRequest, request: Request, who: Reader, generation: Fresh) -> ResearchResponse:
    if req.save:  # every route has one scope: saving is a write, on its own route
        raise UsageError("save: true is a write: POST it to /v1/research/save (write scope)")
    result: ResearchResponse = await request.app.state.limits.run(_service(request).research, req, expensive=True)
    return result


@router.get(
    "/notes/{path:path}",
    response_model=GetResponse,
    responses={304: {"description": "the note still has the hash given in If-None-Match"}, **FRESH_ONE},
    summary="Exact lines of a note, with its hash as the ETag",
)
async def get_note(
    path: str,
    request: Request,
    response: Response,
    who: Reader,
    generation: Fresh,
    from_line: Annotated[int, Query(ge=1)] = 1,
    lines: Annotated[int | None, Query(ge=1)] = None,
    if_none_match: Annotated[str | None, Header()] = None,
) -> GetResponse | Response:
    req = from_parameters(GetRequest, path=path, from_line=from_line, lines=lines)
    note: GetResponse = await request.app.state.limits.run(_service(request).get, req)
    etag = f'"{note.hash}"'
    if if_none_match is not None and etag in (tag.strip() for tag in if_none_match.split(",")):
        return Response(status_code=304, headers={"ETag": etag, **dict(response.headers)})
    response.headers["ETag"] = etag
    return note


@router.post("/wake", responses=FRESH, summary="The frozen block for the start of an agent session")
async def wake(req: WakeRequest, request: Request, who: Reader, generation: Fresh) -> WakeResponse:
    result: WakeResponse = await request.app.state.limits.run(_service(request).wake, req)
    return result


@router.post("/active-memory", responses=FRESH, summary="NONE or a compact block of evidence for one prompt")
async def active_memory(
    req: ActiveMemoryRequest, request: Request, who: Reader, generation: Fresh
) -> ActiveMemoryResponse:
    result: ActiveMemoryResponse = await request.app.state.limits.run(_service(request).active_memory, req)
    return result


@router.post("/links", responses=FRESH_ONE, summary="Neighbours of a note in the link graph (direction in: backlinks)")
async def links(req: LinkRequest, request: Request, who: Reader, generation: Fresh) -> LinkResponse:
    result: LinkResponse = await request.app.state.limits.run(_service(request).links, req)
    return result


@router.post("/links/lint", responses=FRESH, summary="Broken links and orphans")
async def link_lint(req: LinkLintRequest, request: Request, who: Reader, generation: Fresh) -> LinkLintResponse:
    result: LinkLintResponse = await request.app.state.limits.run(_service(request).link_lint, req)
    return result


@router.get("/proposals", summary="Proposed memory writes, by status")
async def proposals(
    request: Request, who: Reader, status: Annotated[ProposalStatus | None, Query()] = None
) -> ProposalListResponse:
    result: ProposalListResponse = await request.app.state.limits.run(_service(request).proposal_list, status)
    return result


@router.get("/proposals/{proposal_id}", responses=documented(404), summary="One proposal")
async def proposal(proposal_id: str, request: Request, who: Reader) -> Proposal:
    result: Proposal = await request.app.state.limits.run(_service(request).proposal_show, proposal_id)
    return result


@router.get("/sessions", responses=FRESH, summary="Agent sessions, newest first")
async def sessions(
    request: Request, who: Reader, generation: Fresh, query: Annotated[SessionQuery, Query()]
) -> SessionListResponse:
    result: SessionListResponse = await request.app.state.limits.run(_service(request).sessions.list, query)
    return result


@router.get("/sessions/{ident}", responses=FRESH_ONE, summary="One session's turns (the last N with `last`)")
async def session(
    ident: str, request: Request, who: Reader, generation: Fresh, last: Annotated[int | None, Query(ge=1)] = None
) -> SessionShowResponse:
    result: SessionShowResponse = await request.app.state.limits.run(_service(request).sessions.show, ident, last)
    return result


@router.get("/sessions/{ident}/export", responses=documented(404), summary="One session as markdown or JSON lines")
async def session_export(
    ident: str,
    request: Request,
    who: Reader,
    fmt: Annotated[Literal["markdown", "jsonl"], Query(alias="format")] = "markdown",
) -> SessionExportResponse:
    result: SessionExportResponse = await request.app.state.limits.run(_service(request).sessions.export, ident, fmt)
    return result


@router.post(
    "/context/pack", responses=FRESH_ONE, summary="What a long-running agent's model should see next, under a budget"
)
async def context_pack(
    req: ContextPackRequest, request: Request, who: Reader, generation: Fresh
) -> ContextPackResponse:
    result: ContextPackResponse = await request.app.state.limits.run(_service(request).context.pack, req)
    return result


@router.post("/context/remind", responses=documented(404), summary="The exact archived text of messages, by id")
async def context_remind(req: RemindRequest, request: Request, who: Reader) -> RemindResponse:
    result: RemindResponse = await request.app.state.limits.run(_service(request).context.remind, req)
    return result


@router.get("/status", summary="Files on disk vs indexed, generation, daemon health, skipped files")
async def status(request: Request, who: Reader) -> StatusResponse:
    result: StatusResponse = await request.app.state.limits.run(_service(request).status, expensive=True)
    return result


@router.get("/jobs", summary="Scheduled jobs: schedule, last and next runs")
async def jobs(request: Request, who: Reader) -> JobsResponse:
    result: JobsResponse = await request.app.state.limits.run(_service(request).jobs)
    return result
