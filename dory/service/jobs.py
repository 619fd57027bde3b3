"""Jobs as the service offers them: the schedule table (`dory ops jobs`), one run by hand, and the
`JobAPI` each job is given (reads on the job's own thread, changes through the index's owner)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from dory.config import Settings
from dory.corpus.atomic import swap_if_unchanged
from dory.corpus.roots import write_root
from dory.errors import WriteConflict
from dory.index.eta import Progress, no_progress
from dory.index.store import IndexStore
from dory.jobs.ledger import JobLedger
from dory.jobs.registry import JOBS, schedule_spec
from dory.jobs.runner import job_run, now_local
from dory.jobs.schedule import parse_schedule
from dory.memory.proposals import ProposalStore
from dory.models import (
    JobInfo,
    JobsResponse,
    MemoryWriteRequest,
    MemoryWriteResponse,
    MigrateRequest,
    MigrateResponse,
    ProposalCreateRequest,
    ProposalCreateResponse,
    ProposalListResponse,
    ReindexResponse,
    SessionIngestRequest,
    SessionIngestResponse,
)
from dory.service.daemon_state import daemon_status
from dory.service.migrate import MigrateService
from dory.service.owner import IndexOwner
from dory.service.sessions import changed_paths
from dory.service.write_ops import WriteRunner

T = TypeVar("T")
RECENT_RUNS = 5


class OnOwner(Protocol):
    """Runs `fn` where the index is owned: the daemon's writer thread, or this process under the lock."""

    def __call__(self, fn: Callable[[], T], /) -> T: ...


class ServiceJobAPI:
    """The JobAPI of dory.jobs.job, for jobs run by the daemon or by `dory ops run` without one."""

    def __init__(
        self,
        settings: Settings,
        owner: IndexOwner,
        on_owner: OnOwner,
        save_session: Callable[[SessionIngestRequest], SessionIngestResponse],
        progress: Progress = no_progress,
    ) -> None:
        self.settings = settings
        self.owner = owner
        self._on_owner = on_owner
        self._save_session = save_session
        # `dory ops run reconcile` on a terminal: the lexical pass's progress (the daemon has none).
        self._progress = progress

    def _owned(self, fn: Callable[[], T]) -> T:
        return self._on_owner(fn)

    def read_index(self) -> IndexStore | None:
        if not self.settings.db_path.exists():
            return None
        return self.owner.resources.store()

    def plan_reindex(self) -> ReindexResponse:
        return self.owner.plan()

    def reconcile(self) -> ReindexResponse:
        def run() -> ReindexResponse:
            warnings: list[str] = []
            vectors = self.owner.owned_vectors(warnings)
            report = self.owner.apply_changes(progress=self._progress, vectors=vectors)
            report.warnings += warnings
            return report

        return self._owned(run)

    def index_paths(self, paths: list[str]) -> ReindexResponse:
        return self._owned(lambda: self.owner.index_paths(paths))

    def plan_memory_write(self, write: MemoryWriteRequest) -> MemoryWriteResponse:
        return WriteRunner(self.settings, self.owner).semantic_writer().plan(write).response

    def propose(self, write: MemoryWriteRequest) -> ProposalCreateResponse:
        planner = WriteRunner(self.settings, self.owner).semantic_writer()
        store = ProposalStore.of(self.settings)
        return self._owned(lambda: store.create(ProposalCreateRequest(write=write), lambda w: planner.plan(w).response))

    def proposals(self) -> ProposalListResponse:
        return ProposalStore.of(self.settings).list(None)

    def ingest_session(self, req: SessionIngestRequest) -> SessionIngestResponse:
        # Transcripts are written on the job's thread (they can be large); only their indexing
        # goes to the owner, as for `dory sessions ingest`.
        response = self._save_session(req)
        paths = changed_paths(response)
        if paths:
            self.index_paths(paths)
            response.indexed = True
        return response

    def swap_file(self, rel: str, data: bytes, expected_hash: str) -> str | None:
        def swap() -> str | None:
            try:
                swap_if_unchanged(write_root(self.settings, rel) / rel, data, expected_hash)
            except WriteConflict as exc:
                return exc.message
            return None

        return self._owned(swap)

    def migrate(self, req: MigrateRequest) -> MigrateResponse:
        # Files are written on the job's thread (an export can be large); their indexing, in
        # batches, goes to the owner through index_paths.
        return MigrateService(self.settings, self.owner.resources, self.index_paths).migrate_dropped(req)


def jobs_table(settings: Settings) -> JobsResponse:
    """Every job's schedule, next run and recent runs (`dory ops jobs`)."""
    daemon = daemon_status(settings)
    ledger = JobLedger.open_existing(settings.ledger_path)
    infos = []
    try:
        for name, spec in JOBS.items():
            schedule = parse_schedule(schedule_spec(settings, name), name)
            shown, enabled, nxt = schedule.spec, schedule.enabled, None
            if schedule.enabled:
                nxt = schedule.next_after(now_local())
            elif spec.writes_output and settings.output_root is None:
                shown = "off (this corpus has no output folder)"
            elif spec.writes_notes and settings.read_only:
                shown = "off (the corpus is read-only)"
            elif spec.driven:  # run by the daemon itself (capture)
                shown, enabled = spec.driven(settings)
            elif spec.after:  # a follower without its own cron runs when its leader does
                leader = parse_schedule(schedule_spec(settings, spec.after), spec.after)
                shown, enabled = f"after {spec.after}", leader.enabled
                nxt = leader.next_after(now_local()) if leader.enabled else None
            recent = [job_run(row) for row in ledger.history(name, RECENT_RUNS)] if ledger else []
            infos.append(
                JobInfo(
                    name=name,
                    description=spec.description,
                    schedule=shown,
                    enabled=enabled,
                    next_run=nxt.isoformat() if nxt else None,
                    last_run=recent[0] if recent else None,
                    recent_runs=recent,
                    warnings=recent[0].warnings if recent else [],
                )
            )
    finally:
        if ledger is not None:
            ledger.close()
    return JobsResponse(daemon_running=daemon.running, jobs=infos)
