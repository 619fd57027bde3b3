"""What a job is given and what it returns (the registry, the runner and every job share these)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from dory.config import Settings
from dory.models import ReindexResponse

if TYPE_CHECKING:
    from dory.service import DoryService

T = TypeVar("T")


class IndexAccess(Protocol):
    """How a job changes the index: through the daemon's writer, or under the writer lock."""

    def reconcile(self) -> ReindexResponse: ...

    def index_paths(self, paths: list[str]) -> ReindexResponse: ...

    def owned(self, fn: Callable[[DoryService], T]) -> T:
        """Run `fn` with the service that owns the index (writes: proposals, pages)."""
        ...


@dataclass
class JobContext:
    settings: Settings
    period: str
    dry_run: bool
    index: IndexAccess
    fix: bool = False  # maintenance: also make the safe mechanical fixes


@dataclass
class JobResult:
    outputs: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # Set when part of the input was not ready (a session still being written): the run is
    # recorded as deferred and the daemon's heartbeat runs the period again later.
    defer: str | None = None
