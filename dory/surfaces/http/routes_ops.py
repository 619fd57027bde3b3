"""Operations: liveness and readiness, metrics, the live event stream, and the admin routes
(reindex, jobs, evaluation, tokens)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Header, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials

from dory.errors import UsageError
from dory.models import (
    EvalRequest,
    EvalResponse,
    JobRun,
    JobRunRequest,
    Readiness,
    ReindexRequest,
    ReindexResponse,
    TokenCreated,
    TokenCreateRequest,
    TokenInfo,
    TokenListResponse,
)
from dory.service import DoryService
from dory.surfaces.http.auth import Admin, Caller, Reader, bearer
from dory.surfaces.http.errors import GUARDED, documented
from dory.surfaces.http.metrics import CONTENT_TYPE

router = APIRouter()
GUARDED_ANSWERS = documented(*GUARDED)
# Admin work runs beside the writer: an unknown job, the index locked, a backend down.
ADMIN_ANSWERS = documented(*GUARDED, 404, 409, 503)


def _service(request: Request) -> DoryService:
    service: DoryService = request.app.state.service
    return service


@router.get("/healthz", tags=["ops"], summary="Liveness: the process answers (no token needed)")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/readyz",
    tags=["ops"],
    response_model=Readiness,
    responses={503: {"model": Readiness, "description": "not ready: the checks say which part is not"}},
    summary="Readiness: index open, writer, embedder and watcher alive, lag",
)
async def readyz(request: Request) -> JSONResponse:
    facts: Readiness = await request.app.state.limits.run(request.app.state.readiness)
    return JSONResponse(facts.model_dump(mode="json"), status_code=200 if facts.ready else 503)


@router.get(
    "/metrics",
    tags=["ops"],
    response_class=Response,  # the errors stay JSON: only the 200 answer is Prometheus text
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}, **GUARDED_ANSWERS},
    summary="Prometheus metrics (a token unless [http] metrics_open)",
)
async def metrics(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
) -> Response:
    if not request.app.state.settings.http.metrics_open:
        await Caller("read")(request, credentials)
    body: bytes = await request.app.state.limits.run(request.app.state.metrics.render)
    return Response(body, media_type=CONTENT_TYPE)


@router.get(
    "/v1/stream",
    tags=["ops"],
    summary="Server-sent events: index updates, writes, proposals, sessions, job runs",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}, **GUARDED_ANSWERS},
)
async def stream(
    request: Request,
    who: Reader,
    last_event_id: Annotated[str | None, Header(max_length=20, pattern=r"^\d+$")] = None,
) -> StreamingResponse:
    last = int(last_event_id) if last_event_id is not None else None
    body = request.app.state.events.stream(last, request.app.state.stopping)
    return StreamingResponse(body, media_type="text/event-stream", headers={"Cache-Control": "no-store"})


@router.post("/v1/reindex", tags=["admin"], responses=ADMIN_ANSWERS, summary="Bring the index in line with the corpus")
async def reindex(req: ReindexRequest, request: Request, who: Admin) -> ReindexResponse:
    result: ReindexResponse = await request.app.state.limits.run(_service(request).reindex, req, expensive=True)
    return result


@router.post(
    "/v1/jobs/run",
    tags=["admin"],
    responses=ADMIN_ANSWERS,
    summary="Run one job once (409-free: the ledger makes it idempotent)",
)
async def run_job(req: JobRunRequest, request: Request, who: Admin) -> JobRun:
    result: JobRun = await request.app.state.limits.run(_service(request).run_job, req, expensive=True)
    request.app.state.events.publish("job", result.model_dump(mode="json"))
    return result


@router.post(
    "/v1/eval", tags=["admin"], responses=ADMIN_ANSWERS, summary="Measure retrieval quality on queries given inline"
)
async def evaluate(req: EvalRequest, request: Request, who: Admin) -> EvalResponse:
    if req.queries_file is not None:
        raise UsageError("over HTTP, give the queries inline (`queries`); the server reads no file for you")
    result: EvalResponse = await request.app.state.limits.run(_service(request).evaluate, req, expensive=True)
    return result


@router.get(
    "/v1/auth/tokens",
    tags=["admin"],
    responses=GUARDED_ANSWERS,
    summary="Tokens (names, scopes, expiry; never the secrets)",
)
async def tokens(request: Request, who: Admin) -> TokenListResponse:
    result: TokenListResponse = await request.app.state.limits.run(request.app.state.gate.tokens.list)
    return result


@router.post(
    "/v1/auth/tokens",
    tags=["admin"],
    responses=documented(*GUARDED, 409),
    summary="Create a token; its secret is in this answer only",
)
async def token_create(req: TokenCreateRequest, request: Request, who: Admin) -> TokenCreated:
    result: TokenCreated = await request.app.state.limits.run(request.app.state.gate.tokens.create, req)
    return result


@router.delete(
    "/v1/auth/tokens/{name}", tags=["admin"], responses=documented(*GUARDED, 404), summary="Revoke a token at once"
)
async def token_revoke(name: str, request: Request, who: Admin) -> TokenInfo:
    result: TokenInfo = await request.app.state.limits.run(request.app.state.gate.tokens.revoke, name)
    return result
