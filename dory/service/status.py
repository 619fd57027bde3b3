"""`dory status`: the honest picture of the index, the daemon, the jobs and the session plane."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dory.config import Settings
from dory.corpus.paths import SESSIONS_ROOT, IgnoreRules
from dory.corpus.scan import ScanResult, scan_paths
from dory.errors import DoryError
from dory.index import db
from dory.index.embedders.base import fingerprint_key
from dory.index.embedders.model_files import model_status
from dory.index.eta import eta_s
from dory.index.store import IndexStore
from dory.jobs.ledger import JobLedger
from dory.jobs.migrate_inbox import recent_imports
from dory.jobs.registry import JOBS
from dory.jobs.runner import job_run
from dory.models import DaemonStatus, EmbeddingProgress, JobRun, SkippedFile, StatusResponse
from dory.service.daemon_state import daemon_status
from dory.service.owner import IndexOwner
from dory.service.resources import Resources
from dory.sessions.transcript import SUMMARY_SUFFIX

# A daemon that has not rewritten its record for this long is reported as possibly stuck.
STALE_HEARTBEAT_S = 10.0


class StatusReport:
    def __init__(self, settings: Settings, owner: IndexOwner) -> None:
        self.settings = settings
        self.owner = owner
        self.resources: Resources = owner.resources

    def report(self) -> StatusResponse:
        with self.resources.existing_or_empty_store() as store:
            return self._status(store)

    def _status(self, store: IndexStore) -> StatusResponse:
        warnings: list[str] = []
        if not self.settings.db_path.exists():
            warnings.append("the corpus has not been indexed yet; run `dory reindex`")
        scan = self.owner.indexer(store).scan()
        pending = _pending_changes(scan, store)
        counts = store.counts()
        fingerprint, matches = None, False
        embedder_name: str = self.settings.embedder.backend
        try:
            embedder = self.resources.require_embedder()
            fingerprint, embedder_name = dict(embedder.fingerprint()), embedder.name
            matches = store.meta("fingerprint") == fingerprint_key(embedder.fingerprint())
            if not matches and counts["chunks"]:
                warnings.append(
                    "vectors were built with another embedding model (or not at all); "
                    "`dory reindex` rebuilds them; until then search is keyword-only"
                )
        except DoryError as exc:
            warnings.append(f"embedder unavailable: {exc.message}")
        if self.settings.embedder.backend == "minilm":
            model = model_status(self.settings.embedder.model_path)
            if model["problem"]:
                warnings.append(model["problem"])
        daemon, jobs = self._daemon_and_jobs(warnings)
        stray = len(scan.leftovers)
        if stray:
            warnings.append(
                f"{stray} temporary files were left by crashed writes; the next `dory reindex` or daemon start "
                "puts back what they hold and removes them"
            )
        interrupted = self.owner.journal().pending()
        if interrupted:
            warnings.append(
                f"{interrupted} multi-file writes were interrupted; the next write, `dory reindex` "
                "or daemon start completes or rolls them back"
            )
        if pending and not daemon.running:
            warnings.append(
                f"{pending} files changed on disk since the last reindex "
                "(no daemon is watching; run `dory reindex` or `dory ops watch`)"
            )
        skipped = [
            SkippedFile(path=r[0], reason=r[1], detail=r[2])
            for r in store.conn.execute("SELECT path, reason, detail FROM skipped ORDER BY path")
        ]
        broken = [
            SkippedFile(path=r[0], reason="broken_frontmatter", detail=r[1])
            for r in store.conn.execute(
                "SELECT path, frontmatter_error FROM files WHERE frontmatter_error IS NOT NULL ORDER BY path"
            )
        ]
        faiss_path = self.settings.faiss_path
        vector_index = self._vector_index_kind(faiss_path) if self.settings.db_path.exists() else "missing"
        return StatusResponse(
            corpus=str(self.settings.corpus),
            state_dir=str(self.settings.state_dir),
            name=self.settings.name,
            read_only=self.settings.read_only,
            output=str(self.settings.output_root) if self.settings.output_root else None,
            files_on_disk=len(scan.files),
            files_indexed=counts["files"],
            chunks=counts["chunks"],
            vectors=counts["vectors"],
            vectors_pending=counts["vectors_pending"],
            vectors_stale=counts["vectors_stale"],
            pending_changes=pending,
            generation=db.generation(store.conn),
            embedder=embedder_name,
            fingerprint=fingerprint,
            fingerprint_matches=matches,
            vector_index=vector_index,
            skipped=skipped,
            broken_frontmatter=broken,
            last_reindex=store.meta("last_reindex"),
            index_bytes=_file_bytes(self.settings.db_path, Path(f"{self.settings.db_path}-wal"), faiss_path),
            daemon=daemon,
            embedding=_embedding(daemon, counts["vectors_pending"]),
            jobs=jobs,
            imports=recent_imports(self.settings),
            sessions=self._session_counts(fingerprint, warnings),
            warnings=warnings,
        )

    def _session_counts(self, fingerprint: dict[str, Any] | None, warnings: list[str]) -> dict[str, int]:
        output = self.settings.output_root
        if output is None:
            return {}
        scan = scan_paths(output, IgnoreRules(self.settings.index.ignore), [SESSIONS_ROOT])
        transcripts = {rel for rel in scan.files if not rel.endswith(SUMMARY_SUFFIX)}
        if not self.settings.sessions_db_path.exists():
            return {"on_disk": len(transcripts)} if transcripts else {}
        counts = self.resources.session_store().counts() | {"on_disk": len(transcripts)}
        if set(self.resources.session_store().indexed()) != transcripts:
            warnings.append(
                "the session index differs from the transcripts on disk; `dory reindex` (or a running "
                "daemon) brings it in line"
            )
        if fingerprint is not None:
            counts["vectors_pending"] = self.resources.session_store().pending_count(fingerprint_key(fingerprint))
        return counts

    def _vector_index_kind(self, path: Path) -> str:
        if not path.exists():
            return "missing"
        try:
            return "ivf" if self.resources.vectors().is_ivf else "flat"
        except DoryError:
            return "unreadable"

    def _daemon_and_jobs(self, warnings: list[str]) -> tuple[DaemonStatus, list[JobRun]]:
        daemon = daemon_status(self.settings)
        if daemon.running:
            if (daemon.heartbeat_age_s or 0) > STALE_HEARTBEAT_S:
                warnings.append(f"the daemon (pid {daemon.pid}) has not reported for {daemon.heartbeat_age_s} s")
            if not daemon.watcher.get("alive", False):
                warnings.append("the daemon's file watcher is down; it re-arms itself at the next heartbeat")
            if daemon.last_error:
                warnings.append(f"daemon: {daemon.last_error}")
        elif daemon.note:
            warnings.append(daemon.note)
        ledger = JobLedger.open_existing(self.settings.ledger_path)
        if ledger is None:
            return daemon, []
        try:
            runs = [job_run(row) for name in JOBS if (row := ledger.last_run(name))]
        finally:
            ledger.close()
        return daemon, runs


def _embedding(daemon: DaemonStatus, pending: int) -> EmbeddingProgress | None:
    """While a running daemon's embedder has chunks to embed: how many, its recent rate, the time left."""
    part = daemon.embedder
    if not (daemon.running and part.get("enabled") and part.get("alive")) or pending <= 0:
        return None
    rate = part.get("rate_per_s")
    if not isinstance(rate, int | float) or isinstance(rate, bool):  # none yet, or a record from elsewhere
        rate = None
    left = eta_s(pending, rate)
    return EmbeddingProgress(chunks_pending=pending, rate_per_s=rate, eta_s=None if left is None else round(left, 1))


def _pending_changes(scan: ScanResult, store: IndexStore) -> int:
    """Files whose size or mtime differ from what the last reindex saw (indexed or skipped)."""
    indexed = store.indexed_files()
    seen: dict[str, tuple[int, int | None]] = {path: (f.size, f.mtime_ns) for path, f in indexed.items()}
    seen.update({path: (s.size, s.mtime_ns) for path, s in store.skipped_files().items() if s.size is not None})
    changed = sum(1 for path, st in scan.files.items() if seen.get(path) != (st.size, st.mtime_ns))
    return changed + sum(1 for path in indexed if path not in scan.files)


def _file_bytes(*paths: Path) -> int:
    return sum(p.stat().st_size for p in paths if p.exists())
