"""The index's owner: the only code that writes the index (SQLite rows, FAISS, the session plane).

It runs where the index is owned: on the daemon's writer thread, or in this process under the
writer lock (`LocalOwnership`). Exactly one owner runs at a time per corpus, so its methods are
never called concurrently; they may still be called from different threads one after another.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

from dory.config import Settings
from dory.corpus.atomic import sweep_leftovers
from dory.corpus.journal import Journal
from dory.corpus.paths import IgnoreRules
from dory.corpus.roots import writable_roots
from dory.errors import DoryError, IndexLocked
from dory.index import db, vector_pass
from dory.index.eta import Progress, no_progress
from dory.index.indexer import Indexer, Plan
from dory.index.lock import WriterLock
from dory.index.store import IndexStore
from dory.index.vectors import VectorStore
from dory.models import ReindexResponse, SkippedFile
from dory.service.receipts import Receipts
from dory.service.resources import Resources
from dory.sessions import vectors as session_vectors
from dory.sessions.sync import SyncReport, sync_sessions

# However briefly a caller is willing to wait for other processes, other threads here get this long.
TURN_WAIT_S = 300.0


class IndexOwner:
    def __init__(self, settings: Settings, resources: Resources) -> None:
        self.settings = settings
        self.resources = resources
        # Threads of this process take turns before they compete for the writer lock with other
        # processes (flock is polled, and polling is not fair to a thread that keeps losing).
        self.turn = threading.Lock()

    def journal(self, request_id: str | None = None) -> Journal:
        """The multi-file write journal; a write made for a request records its receipt there."""
        settings = self.settings
        return Journal(settings.corpus, settings.journal_path, self.receipts(), request_id, settings.read_only)

    def receipts(self) -> Receipts:
        return Receipts(self.settings.receipts_path)

    def indexer(self, store: IndexStore) -> Indexer:
        counter = self.resources.token_counter()
        count = counter.count
        return Indexer(self.settings, store, lambda texts: [count(t) for t in texts], counter.identity)

    def plan(self, full: bool = False) -> ReindexResponse:
        """What a reindex would change; nothing is applied, and a corpus never indexed gets no index."""
        started = time.monotonic()
        with self.resources.existing_or_empty_store() as store:
            indexer = self.indexer(store)
            plan, _ = indexer.plan(indexer.scan(), full)
        return reindex_response(plan, started, planned=True)

    def apply_changes(
        self,
        full: bool = False,
        paths: list[str] | None = None,
        progress: Progress = no_progress,
        vectors: VectorStore | None = None,
    ) -> ReindexResponse:
        """The lexical pass over the whole corpus or over `paths`. Chunks that go away leave
        `vectors` too; new chunks wait for the vector pass. The session plane follows."""
        started = time.monotonic()
        store = self.resources.store()
        try:
            with self.resources.vectors_lock:
                report = self.indexer(store).run_lexical(full, progress, vectors, paths)
        except sqlite3.OperationalError as exc:  # a full or read-only disk, or a lock held elsewhere
            raise db.storage_problem(exc, self.settings.db_path) from exc
        response = reindex_response(report.plan, started, planned=False)
        response.chunks_written = report.chunks_written
        response.vectors_pending = vector_pass.pending_count(store)
        sessions = self._sync_sessions(paths)
        response.sessions_indexed, response.sessions_deleted = len(sessions.indexed), len(sessions.deleted)
        response.skipped += [SkippedFile(path=s.path, reason=s.reason, detail=s.detail) for s in sessions.skipped]
        response.generation = self._next_generation(store, response)
        return response

    def _sync_sessions(self, paths: list[str] | None) -> SyncReport:
        """The session plane follows its transcripts, wherever Dory's output is (none: nothing to follow)."""
        root = self.settings.output_root
        if root is None:
            return SyncReport()
        return sync_sessions(root, self.resources.session_store(), IgnoreRules(self.settings.index.ignore), paths)

    def _next_generation(self, store: IndexStore, report: ReindexResponse) -> int:
        """Raise the index generation when the index changed, and wake readers waiting for it."""
        changed = report.new + report.changed + report.renamed + report.deleted
        if not (changed or report.sessions_indexed or report.sessions_deleted):
            return db.generation(store.conn)
        value = db.bump_generation(store.conn)
        with self.resources.generation_changed:
            self.resources.generation_changed.notify_all()
        return value

    def index_paths(self, paths: list[str]) -> ReindexResponse:
        """Bring just these notes into the index now (a loaded FAISS store follows removals)."""
        return self.apply_changes(paths=paths, vectors=self.resources.loaded_vectors())

    def recover_journal(self) -> list[str]:
        """Complete or roll back multi-file writes a crash interrupted, then index what they touched."""
        journal = self.journal()
        if not journal.pending():
            return []
        report, touched = journal.recover()
        self.index_paths(touched)
        return report

    def recover(self) -> list[str]:
        """What a start-up or a reindex does first: the journal, then a sweep of the whole corpus for
        temporary files left by crashed writes (the journal repairs only the folders it names; a
        corpus Dory must not write into is not swept, the output folder is). A
        note put back is indexed by the reconcile or reindex that follows."""
        return self.recover_journal() + sweep_writable(self.settings)

    def owned_vectors(self, warnings: list[str]) -> VectorStore | None:
        """The owner's FAISS store, reset when the embedding fingerprint changed; None without vectors."""
        if self.settings.embedder.backend == "none":
            return None
        try:
            fingerprint = self.resources.fingerprint()
        except DoryError as exc:
            warnings.append(f"vectors not built: {exc.message}")
            return None
        if vector_pass.reset_for_fingerprint(self.resources.store(), fingerprint):
            cfg = self.settings.index
            dims = self.resources.require_embedder().dims
            self.resources.replace_vectors(VectorStore(dims, cfg.vector_index, cfg.ivf_threshold))
        return self.resources.vectors()

    def save_vectors(self, vectors: VectorStore) -> None:
        """Persist FAISS and record that SQLite and FAISS agree."""
        with self.resources.vectors_lock:
            vector_pass.finish(self.resources.store(), vectors, self.resources.fingerprint(), self.settings.faiss_path)

    def store_vectors(self, vectors: VectorStore, fingerprint: str, batch: vector_pass.EmbeddedBatch) -> int:
        """Record chunk vectors computed elsewhere (the daemon's embedder thread); returns how many."""
        with self.resources.vectors_lock:
            return vector_pass.store_batch(self.resources.store(), vectors, fingerprint, batch)

    def store_turn_vectors(self, fingerprint: str, batch: list[tuple[str, np.ndarray]]) -> None:
        """Record session-turn vectors computed elsewhere (the daemon's embedder thread)."""
        self.resources.session_store().store_vectors(fingerprint, batch)

    def embed_pending(self, vectors: VectorStore, progress: Progress = no_progress) -> tuple[int, int]:
        """Embed every chunk without a vector (a reindex's vector pass, in this process)."""
        with self.resources.vectors_lock:
            return vector_pass.embed_pending(
                self.resources.store(),
                vectors,
                self.resources.require_embedder(),
                self.resources.fingerprint(),
                self.settings.faiss_path,
                progress,
            )

    def embed_session_turns(self, progress: Progress = no_progress) -> int:
        """Vectors for every session turn that has none (the owner's vector pass for the session plane)."""
        if self.settings.embedder.backend == "none":
            return 0
        return session_vectors.embed_pending(
            self.resources.session_store(), self.resources.require_embedder(), self.resources.fingerprint(), progress
        )


@contextmanager
def local_ownership(
    owner: IndexOwner, wait_s: float, on_wait: Callable[[str], None] | None = None
) -> Iterator[list[str]]:
    """Own the index in this process: take the writer lock (waiting up to `wait_s`), load FAISS as
    its owner and finish writes a crash interrupted. Yields the journal's report lines."""
    if not owner.turn.acquire(timeout=max(wait_s, TURN_WAIT_S)):
        raise IndexLocked("the index is being written by other threads of this process; try again")
    try:
        with WriterLock(owner.settings.lock_path, wait_s, on_wait), owner.resources.owning():
            yield owner.recover_journal()
    finally:
        owner.turn.release()


def sweep_writable(settings: Settings) -> list[str]:
    """Temporary files of crashed writes, swept where Dory writes (never in a read-only corpus)."""
    return [line for root in writable_roots(settings) for line in sweep_leftovers(root)]


def reindex_response(plan: Plan, started: float, planned: bool) -> ReindexResponse:
    paths = None
    if planned:
        paths = {
            "new": plan.new,
            "changed": plan.changed,
            "deleted": plan.deleted,
            "renamed": [f"{a} -> {b}" for a, b in plan.renamed],
            "touched": plan.touched,
        }
    warnings = [plan.deletions_withheld] if plan.deletions_withheld else []
    return ReindexResponse(
        new=len(plan.new),
        changed=len(plan.changed),
        renamed=len(plan.renamed),
        deleted=len(plan.deleted),
        touched=len(plan.touched),
        unchanged=plan.unchanged,
        skipped=[SkippedFile(path=s.path, reason=s.reason, detail=s.detail) for s in plan.skipped],
        chunks_written=0,
        vectors_embedded=0,
        vectors_reused=0,
        vectors_pending=0,
        seconds=round(time.monotonic() - started, 3),
        planned_paths=paths,
        warnings=warnings,
    )
