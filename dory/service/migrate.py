"""Migration as a service operation: runs write new files (never over anything) and hand them to
the index's owner; the migration lock keeps two runs of the same corpus from interleaving."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from dory.config import Settings
from dory.corpus.paths import IMPORT_DIR
from dory.index.lock import WriterLock
from dory.memory.entities import Registry
from dory.migrate import manifest, report
from dory.migrate.entities import EntityContext
from dory.migrate.run import Progress, RunOptions, migrate
from dory.migrate.undo import undo
from dory.models import (
    MigrateRequest,
    MigrateResponse,
    MigrateUndoRequest,
    MigrateUndoResponse,
    MigrationRun,
    MigrationRunsResponse,
)
from dory.service.resources import Resources

# A second migration of the same corpus waits this long for the first to finish.
MIGRATE_LOCK_WAIT_S = 3600.0
# The migrate-inbox job does not wait: it runs again in a few minutes.
DROPPED_LOCK_WAIT_S = 0.0


class MigrateService:
    def __init__(self, settings: Settings, resources: Resources, index_paths: Callable[[list[str]], Any]) -> None:
        self.settings = settings
        self.resources = resources
        self.index_paths = index_paths

    def migrate(self, req: MigrateRequest, progress: Progress | None = None) -> MigrateResponse:
        return self._migrate(req, progress, MIGRATE_LOCK_WAIT_S, None)

    def migrate_dropped(self, req: MigrateRequest) -> MigrateResponse:
        """A migration for the migrate-inbox job: its source may be an entry of inbox/import/ (the
        one place inside the corpus the engine takes a source from), and a migration already
        running is IndexLocked at once, so the job leaves the entry for its next run."""
        return self._migrate(req, None, DROPPED_LOCK_WAIT_S, self.settings.corpus / IMPORT_DIR)

    def _migrate(
        self, req: MigrateRequest, progress: Progress | None, lock_wait_s: float, drop_folder: Path | None
    ) -> MigrateResponse:
        registry = Registry.load(self.resources.store().conn) if self.settings.db_path.exists() else None
        opts = RunOptions(
            corpus=self.settings.corpus,
            index_paths=self.index_paths if not req.dry_run else lambda paths: None,
            entities=EntityContext(registry),
            drop_folder=drop_folder,
        )
        if progress is not None:
            opts.progress = progress
        if req.dry_run:
            return migrate(req, opts)
        with WriterLock(self.settings.state_dir / "migrate.lock", lock_wait_s):
            return migrate(req, opts)

    def runs(self) -> MigrationRunsResponse:
        found = []
        for record in manifest.runs(self.settings.corpus):
            h = record.header
            found.append(
                MigrationRun(
                    run=record.run,
                    source=str(h.get("source", "")),
                    format=str(h.get("format", "")),
                    into=str(h.get("into", "")),
                    started=str(h.get("started", "")),
                    state=record.state,
                    created=len({o.path for o in record.created()}),
                    problems=len(record.problems),
                    report=report.report_path(record.run),
                )
            )
        return MigrationRunsResponse(runs=found)

    def undo(self, req: MigrateUndoRequest) -> MigrateUndoResponse:
        with WriterLock(self.settings.state_dir / "migrate.lock", MIGRATE_LOCK_WAIT_S):
            response = undo(self.settings.corpus, req)
        if response.removed and not req.dry_run:
            self.index_paths(response.removed)
        return response
