"""Typed writer operations: what may change the corpus and the index, and how it reaches the owner.

Every write is one `WriterCall`: a request id (the idempotency key), the surface it came through
(recorded in the write log), a deadline, and one typed operation. `WriteGateway.submit` sends it to
the running daemon over the control socket, or, when no daemon runs, applies it in this process
under the writer lock. The owner applies a request id once: a retry of a request already applied
is answered from its receipt (see receipts.py), so a client that lost its answer can always send
the same call again.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from typing import Annotated, Any, Literal, Protocol

from pydantic import BaseModel, Field

from dory.config import Settings
from dory.errors import DaemonTimeout
from dory.models import (
    IndexPathsRequest,
    JobRun,
    JobRunRequest,
    MemoryWriteRequest,
    MemoryWriteResponse,
    Proposal,
    ProposalDecision,
    ReindexRequest,
    ReindexResponse,
    WriteRequest,
    WriteResponse,
)
from dory.service import control

# How long a write may wait for the daemon (or, without one, for a reindex to release the index).
WRITE_DEADLINE_S = 120.0


class ExactWriteOp(BaseModel):
    """create, append, replace or forget of one note (`request.kind`)."""

    op: Literal["write"] = "write"
    request: WriteRequest


class MemoryWriteOp(BaseModel):
    op: Literal["memory_write"] = "memory_write"
    request: MemoryWriteRequest


class ProposalApplyOp(BaseModel):
    op: Literal["proposal_apply"] = "proposal_apply"
    request: ProposalDecision


class IndexPathsOp(BaseModel):
    """Index notes another part of Dory just wrote (session transcripts, marks, generated pages)."""

    op: Literal["index_paths"] = "index_paths"
    request: IndexPathsRequest


WriterOp = Annotated[ExactWriteOp | MemoryWriteOp | ProposalApplyOp | IndexPathsOp, Field(discriminator="op")]
RESPONSES: dict[str, type[BaseModel]] = {
    "write": WriteResponse,
    "memory_write": MemoryWriteResponse,
    "proposal_apply": Proposal,
    "index_paths": ReindexResponse,
}


class WriterCall(BaseModel):
    request_id: str = Field(default_factory=lambda: uuid.uuid4().hex, min_length=8, max_length=64)
    surface: str = Field("api", min_length=1, max_length=40, description="cli, http, mcp, daemon or api")
    # An id the caller chose (an HTTP Idempotency-Key) may be sent again with another request by
    # mistake, so it is bound to its request; one made here is never seen twice.
    chosen_id: bool = False
    deadline_s: float = Field(WRITE_DEADLINE_S, gt=0, le=3600)
    operation: WriterOp

    def fingerprint(self) -> str:
        """What a retry under the same request id must repeat: the operation and its request (the
        deadline may change between attempts)."""
        return hashlib.sha256(self.operation.model_dump_json().encode()).hexdigest()


class InProcessOwner(Protocol):
    """The index's owner running in this very process (the daemon behind `dory serve`): a service
    in that process hands it writes, reindexes and job runs directly, not over the control socket."""

    def write(self, call: WriterCall) -> dict[str, Any]: ...

    def reindex(self, req: ReindexRequest) -> ReindexResponse: ...

    def run_job(self, req: JobRunRequest) -> JobRun: ...


def new_call(
    operation: WriterOp, request_id: str | None = None, surface: str = "api", deadline_s: float = WRITE_DEADLINE_S
) -> WriterCall:
    if request_id is None:
        return WriterCall(operation=operation, surface=surface, deadline_s=deadline_s)
    return WriterCall(
        request_id=request_id, chosen_id=True, surface=surface, operation=operation, deadline_s=deadline_s
    )


def send_to_daemon(settings: Settings, call: WriterCall) -> dict[str, Any]:
    """Hand the call to the running daemon and wait for its answer until the deadline. Raises
    DaemonNotRunning when no daemon answers the connection, DaemonTimeout when one took the call
    but did not answer in time (the call may still be applied: retry with the same request id)."""
    started = time.monotonic()
    try:
        result: dict[str, Any] = control.call(settings, "write", call.model_dump(mode="json"), call.deadline_s)
    except DaemonTimeout as exc:
        waited = round(time.monotonic() - started, 1)
        raise DaemonTimeout(
            f"the Dory daemon did not answer within {call.deadline_s} s (waited {waited} s); the write may "
            f"still be applied: retry with the same request id ({call.request_id}) to get its answer",
            request_id=call.request_id,
        ) from exc
    return result
