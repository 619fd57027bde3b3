"""The CLI as a client of a running `dory serve` (`dory --server URL --token T …`, or DORY_URL and
DORY_TOKEN): the same operations as DoryService, sent over HTTP, so a one-shot command skips loading
the index and the model. Answers are the same response models; errors come back as the same Dory
error classes (and so the same exit codes). What only makes sense on the server's own disk (importing
its harness folders, evaluating a local queries file) is refused with a usage error.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from dory.errors import BackendUnavailable, DoryError, UsageError, error_from_dict
from dory.models import (
    ActiveMemoryRequest,
    ActiveMemoryResponse,
    CompactRequest,
    CompactResponse,
    ContextPackRequest,
    ContextPackResponse,
    EvalRequest,
    EvalResponse,
    FlushRequest,
    FlushResponse,
    GetRequest,
    GetResponse,
    JobRun,
    JobRunRequest,
    JobsResponse,
    LinkLintRequest,
    LinkLintResponse,
    LinkRequest,
    LinkResponse,
    MarkRequest,
    MarkResponse,
    MemoryWriteRequest,
    MemoryWriteResponse,
    Proposal,
    ProposalCreateRequest,
    ProposalCreateResponse,
    ProposalDecision,
    ProposalListResponse,
    ProposalStatus,
    ReindexRequest,
    ReindexResponse,
    RemindRequest,
    RemindResponse,
    ResearchRequest,
    ResearchResponse,
    SearchRequest,
    SearchResponse,
    SessionExportResponse,
    SessionImportResponse,
    SessionInfo,
    SessionIngestRequest,
    SessionIngestResponse,
    SessionListRequest,
    SessionListResponse,
    SessionShowResponse,
    SessionUpdateRequest,
    StatusResponse,
    WakeRequest,
    WakeResponse,
    WriteRequest,
    WriteResponse,
)

M = TypeVar("M", bound=BaseModel)
TIMEOUT_S = 600.0  # a reindex or a job may run long; the server has its own deadline


class Remote:
    """One HTTP connection to the server; every call returns a response model or raises a DoryError."""

    def __init__(self, url: str, token: str | None) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.url = url.rstrip("/")
        self.http = httpx.Client(base_url=self.url, headers=headers, timeout=TIMEOUT_S)

    def call(self, method: str, path: str, model: type[M], body: BaseModel | None = None, **params: Any) -> M:
        json_body = body.model_dump(mode="json", exclude_none=True) if body is not None else None
        query = {key: value for key, value in params.items() if value is not None}
        try:
            answer = self.http.request(method, path, json=json_body, params=query)
        except httpx.HTTPError as exc:
            raise BackendUnavailable(f"cannot reach the Dory server at {self.url}: {exc}", url=self.url) from exc
        return _answer(answer, model)

    def write(self, path: str, model: type[M], body: BaseModel | None, request_id: str | None) -> M:
        """A write, with an idempotency key: a connection lost before the answer is retried once with
        the same key, so the server applies the write once and answers the retry from its receipt."""
        headers = {"Idempotency-Key": request_id or uuid.uuid4().hex}
        json_body = body.model_dump(mode="json", exclude_none=True) if body is not None else None
        try:
            try:
                answer = self.http.post(path, json=json_body, headers=headers)
            except httpx.TransportError:
                answer = self.http.post(path, json=json_body, headers=headers)
        except httpx.HTTPError as exc:
            raise BackendUnavailable(
                f"cannot reach the Dory server at {self.url}: {exc}; the write may have been applied: "
                f"send it again with Idempotency-Key {headers['Idempotency-Key']}",
                url=self.url,
                request_id=headers["Idempotency-Key"],
            ) from exc
        return _answer(answer, model)

    def close(self) -> None:
        self.http.close()


def _answer(answer: httpx.Response, model: type[M]) -> M:
    if answer.status_code >= 400:
        raise _error(answer)
    return model.model_validate(answer.json())


def _error(answer: httpx.Response) -> DoryError:
    try:
        body = answer.json()["error"]
    except (ValueError, KeyError, TypeError):
        return BackendUnavailable(f"the server answered {answer.status_code}: {answer.text[:200]}")
    return error_from_dict(body)


def _local_only(what: str) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise UsageError(f"{what} reads this machine's files: run it without --server / DORY_URL")

    return refuse


class RemoteSessions:
    def __init__(self, remote: Remote) -> None:
        self.remote = remote
        self.import_local: Callable[..., SessionImportResponse] = _local_only("sessions import")

    def ingest(self, req: SessionIngestRequest) -> SessionIngestResponse:
        return self.remote.call("POST", "/v1/sessions/ingest", SessionIngestResponse, req)

    def list(self, req: SessionListRequest) -> SessionListResponse:
        params = req.model_dump(mode="json", exclude_none=True)
        return self.remote.call("GET", "/v1/sessions", SessionListResponse, **params)

    def show(self, ident: str, last: int | None = None) -> SessionShowResponse:
        return self.remote.call("GET", f"/v1/sessions/{ident}", SessionShowResponse, last=last)

    def export(self, ident: str, fmt: str) -> SessionExportResponse:
        return self.remote.call("GET", f"/v1/sessions/{ident}/export", SessionExportResponse, format=fmt)

    def update(self, req: SessionUpdateRequest) -> SessionInfo:
        return self.remote.call("POST", "/v1/sessions/update", SessionInfo, req)

    def compact(self, req: CompactRequest) -> CompactResponse:
        return self.remote.call("POST", "/v1/sessions/compact", CompactResponse, req)

    def flush(self, req: FlushRequest) -> FlushResponse:
        return self.remote.call("POST", "/v1/sessions/flush", FlushResponse, req)


class RemoteContext:
    def __init__(self, remote: Remote) -> None:
        self.remote = remote

    def pack(self, req: ContextPackRequest) -> ContextPackResponse:
        return self.remote.call("POST", "/v1/context/pack", ContextPackResponse, req)

    def remind(self, req: RemindRequest) -> RemindResponse:
        return self.remote.call("POST", "/v1/context/remind", RemindResponse, req)

    def mark(self, req: MarkRequest) -> MarkResponse:
        return self.remote.call("POST", "/v1/context/mark", MarkResponse, req)


class RemoteService:
    """DoryService's operations that the CLI calls, over HTTP."""

    def __init__(self, url: str, token: str | None) -> None:
        self.remote = Remote(url, token)
        self.sessions = RemoteSessions(self.remote)
        self.context = RemoteContext(self.remote)

    def close(self) -> None:
        self.remote.close()

    def search(self, req: SearchRequest) -> SearchResponse:
        return self.remote.call("POST", "/v1/search", SearchResponse, req)

    def get(self, req: GetRequest) -> GetResponse:
        return self.remote.call("GET", f"/v1/notes/{req.path}", GetResponse, from_line=req.from_line, lines=req.lines)

    def status(self) -> StatusResponse:
        return self.remote.call("GET", "/v1/status", StatusResponse)

    def research(self, req: ResearchRequest) -> ResearchResponse:
        route = "/v1/research/save" if req.save else "/v1/research"
        return self.remote.call("POST", route, ResearchResponse, req)

    def wake(self, req: WakeRequest) -> WakeResponse:
        return self.remote.call("POST", "/v1/wake", WakeResponse, req)

    def active_memory(self, req: ActiveMemoryRequest) -> ActiveMemoryResponse:
        return self.remote.call("POST", "/v1/active-memory", ActiveMemoryResponse, req)

    def links(self, req: LinkRequest) -> LinkResponse:
        return self.remote.call("POST", "/v1/links", LinkResponse, req)

    def link_lint(self, req: LinkLintRequest) -> LinkLintResponse:
        return self.remote.call("POST", "/v1/links/lint", LinkLintResponse, req)

    def write(self, req: WriteRequest, request_id: str | None = None) -> WriteResponse:
        return self.remote.write("/v1/write", WriteResponse, req, request_id)

    def memory_write(self, req: MemoryWriteRequest, request_id: str | None = None) -> MemoryWriteResponse:
        return self.remote.write("/v1/memory-write", MemoryWriteResponse, req, request_id)

    def proposal_create(self, req: ProposalCreateRequest) -> ProposalCreateResponse:
        return self.remote.call("POST", "/v1/proposals", ProposalCreateResponse, req)

    def proposal_list(self, status: ProposalStatus | None = None) -> ProposalListResponse:
        return self.remote.call("GET", "/v1/proposals", ProposalListResponse, status=status)

    def proposal_show(self, proposal_id: str) -> Proposal:
        return self.remote.call("GET", f"/v1/proposals/{proposal_id}", Proposal)

    def proposal_apply(self, req: ProposalDecision, request_id: str | None = None) -> Proposal:
        return self.remote.write(f"/v1/proposals/{req.id}/apply", Proposal, None, request_id)

    def proposal_reject(self, req: ProposalDecision) -> Proposal:
        return self.remote.call("POST", f"/v1/proposals/{req.id}/reject", Proposal, req)

    def reindex(self, req: ReindexRequest, *args: Any) -> ReindexResponse:
        return self.remote.call("POST", "/v1/reindex", ReindexResponse, req)

    def jobs(self) -> JobsResponse:
        return self.remote.call("GET", "/v1/jobs", JobsResponse)

    def run_job(self, req: JobRunRequest, *args: Any) -> JobRun:
        return self.remote.call("POST", "/v1/jobs/run", JobRun, req)

    def evaluate(self, req: EvalRequest, *args: Any) -> EvalResponse:
        if req.queries_file is not None:
            raise UsageError("eval reads a local queries file: run it without --server / DORY_URL")
        return self.remote.call("POST", "/v1/eval", EvalResponse, req)
