"""What a job is given and what it returns (the registry, the runner and every job share these)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Protocol

from dory.config import Settings
from dory.index.store import IndexStore
from dory.models import (
    MemoryWriteRequest,
    MemoryWriteResponse,
    MigrateRequest,
    MigrateResponse,
    ProposalCreateResponse,
    ProposalListResponse,
    ReindexResponse,
    SessionIngestRequest,
    SessionIngestResponse,
)


class JobAPI(Protocol):
    """What a job may ask of Dory. The service provides it (dory.service.jobs): reads use the
    calling thread's own index connection, and every change goes to the index's owner (the
    daemon's writer thread, or this process under the writer lock)."""

    def read_index(self) -> IndexStore | None:
        """This thread's connection to the index, for reading; None when the corpus was never indexed."""
        ...

    def plan_reindex(self) -> ReindexResponse:
        """What a reindex would change (nothing is applied)."""
        ...

    def reconcile(self) -> ReindexResponse: ...

    def index_paths(self, paths: list[str]) -> ReindexResponse: ...

    def plan_memory_write(self, write: MemoryWriteRequest) -> MemoryWriteResponse:
        """A dry run of a semantic write (would it change anything?)."""
        ...

    def propose(self, write: MemoryWriteRequest) -> ProposalCreateResponse: ...

    def proposals(self) -> ProposalListResponse: ...

    def ingest_session(self, req: SessionIngestRequest) -> SessionIngestResponse:
        """Save a session transcript into the session plane (merged by message id) and index it."""
        ...

    def swap_file(self, rel: str, data: bytes, expected_hash: str) -> str | None:
        """Write `data` over a note only if it still has `expected_hash` (on the owner); the
        conflict's message when someone changed it meanwhile."""
        ...

    def migrate(self, req: MigrateRequest) -> MigrateResponse:
        """A migration run (`dory migrate`), its files indexed by the owner as they land. Its source
        may also be an entry of inbox/import/, which a migration asked for any other way refuses
        (a source inside the corpus). IndexLocked at once while another migration runs."""
        ...


@dataclass
class JobContext:
    settings: Settings
    period: str
    dry_run: bool
    api: JobAPI
    fix: bool = False  # maintenance: also make the safe mechanical fixes
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("dory.jobs"))


@dataclass
class JobResult:
    outputs: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # Set when part of the input was not ready (a session still being written): the run is
    # recorded as deferred and the daemon's heartbeat runs the period again later.
    defer: str | None = None
