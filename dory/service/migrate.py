"""Migration as a service operation: runs write new files (never over anything) and hand them to
the index's owner; the migration lock keeps two runs of the same corpus from interleaving."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from dory import llm
from dory.config import Settings
from dory.corpus.paths import IMPORT_DIR
from dory.corpus.roots import check_writable
from dory.errors import LlmNotConfigured
from dory.index.lock import WriterLock
from dory.memory.entities import Registry
from dory.migrate import manifest, report
from dory.migrate.entities import EntityContext
from dory.migrate.llm_claims import AnswerCache, ClaimExtractor
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
# The model's answers to `--llm` requests, kept so a resumed run never asks twice (llm_claims.py).
LLM_ANSWERS = "migrate/llm-claims.jsonl"

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
        if not req.dry_run:  # a plan writes nothing
            check_writable(self.settings, f"the notes imported from {req.source}")
        client = llm.from_settings(self.settings) if req.llm else None
        if req.llm and client is None:
            raise LlmNotConfigured(
                '--llm needs an LLM: set [llm] backend = "openai" with url and model in dory.toml '
                "(or DORY_LLM_BACKEND, DORY_LLM_URL, DORY_LLM_MODEL); --estimate shows what it would cost",
                setting="llm.backend",
            )
        registry = Registry.load(self.resources.store().conn) if self.settings.db_path.exists() else None
        opts = RunOptions(
            corpus=self.settings.corpus,
            index_paths=self.index_paths if not req.dry_run else lambda paths: None,
            entities=EntityContext(registry),
            claims=ClaimExtractor(client, AnswerCache(self.settings.state_dir / LLM_ANSWERS), self._model()),
            drop_folder=drop_folder,
        )
        if progress is not None:
            opts.progress = progress
        try:
            if req.dry_run:
                return migrate(req, opts)
            with WriterLock(self.settings.state_dir / "migrate.lock", lock_wait_s):
                return migrate(req, opts)
        finally:
            if client is not None:
                client.close()

    def _model(self) -> str | None:
        """The configured model (what `--estimate` looks answers up by, with no client built)."""
        return self.settings.llm.model if self.settings.llm.backend != "none" else None

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
        if not req.dry_run:
            check_writable(self.settings, f"the undo of migration {req.run}")
        with WriterLock(self.settings.state_dir / "migrate.lock", MIGRATE_LOCK_WAIT_S):
            response = undo(self.settings.corpus, req)
        if not req.dry_run:
            # Files an earlier, killed undo removed are in `already_gone`: the index forgets them too.
            self.index_paths([*response.removed, *response.already_gone, report.report_path(req.run)])
        return response
