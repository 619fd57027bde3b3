"""The daemon's writer: one thread that owns the index and makes every change to it.

Everything that writes SQLite or FAISS runs here, in order: watcher batches, reconciles, requests
from other processes (a `dory reindex` handed to the daemon), and vectors computed by the
background embedder. Readers in other threads and processes use their own connections (WAL) and
the last FAISS file, which is saved atomically at most every `faiss_save_s` and whenever the
writer goes idle.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar

from dory.daemon.changes import ChangeQueue
from dory.daemon.health import PartHealth, guarded
from dory.errors import DaemonNotRunning
from dory.index import vector_pass
from dory.index.store import now_iso
from dory.index.vectors import VectorStore
from dory.models import ReindexResponse
from dory.service import DoryService

log = logging.getLogger("dory.writer")
T = TypeVar("T")
_Task = tuple[Callable[[], Any], "Future[Any]"]


@dataclass
class WriterStats(PartHealth):
    batches: int = 0
    paths_applied: int = 0
    files_changed: int = 0
    reconciles: int = 0
    last_batch_at: str | None = None
    last_reconcile_at: str | None = None
    faiss_saved_at: str | None = None


class IndexWriter:
    def __init__(self, service: DoryService, changes: ChangeQueue, on_change: Callable[[], None]) -> None:
        self.service = service
        self.changes = changes
        self.on_change = on_change  # told after each batch that wrote chunks (the embedder wakes)
        self.vectors: VectorStore | None = None
        self.stats = WriterStats()
        self.busy = False
        self._tasks: queue.SimpleQueue[_Task | None] = queue.SimpleQueue()
        self._stopping = threading.Event()
        self._closed = False  # the thread has ended: nothing queued from now on will ever run
        self._thread = threading.Thread(
            target=guarded(self.stats, "writer", self._main), name="dory-writer", daemon=True
        )
        self._faiss_dirty = False  # FAISS changed in memory since it was last saved
        self._batch_files = service.settings.index.batch_files
        self._save_every = service.settings.daemon.faiss_save_s
        self._save_cost = 0.0
        self._last_save = 0.0  # monotonic time of the last FAISS save: saves are rate-limited, not delayed

    # -- life --------------------------------------------------------------------------------
    def start(self) -> list[str]:
        """Start the thread and load the vector store as owner (repairing it from the cache if a
        crash left it behind SQLite). Returns warnings (e.g. no embedder)."""
        self._thread.start()
        warnings: list[str] = []
        self.vectors = self.call(lambda: self.service.owner.owned_vectors(warnings))
        self.call(self.service.resources.session_store)  # created here, so readers can open it
        if self.service.resources.vectors_repaired:
            self._faiss_dirty = True  # persist the repaired index soon
        return warnings

    def stop(self, timeout_s: float = 60.0) -> None:
        """Finish what is queued (the current batch and paths already seen), save FAISS, stop."""
        self._stopping.set()
        self._tasks.put(None)
        self._thread.join(timeout_s)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        if self._stopping.is_set() or self._closed or not self._thread.is_alive():
            raise DaemonNotRunning("the daemon's writer is stopping")
        future: Future[T] = Future()
        self._tasks.put((fn, future))
        if self._closed:  # the thread ended between the check and the put: nobody will run it
            self._fail_queued()
        return future

    def call(self, fn: Callable[[], T], timeout_s: float | None = None) -> T:
        return self.submit(fn).result(timeout_s)

    def wake(self) -> None:
        self._tasks.put(None)

    # -- work --------------------------------------------------------------------------------
    def owned(self, fn: Callable[[], T]) -> T:
        """Run a change (a write, a job's proposal or page) on the writer thread, then save FAISS
        soon and wake the embedder."""

        def task() -> T:
            result = fn()
            self.changed_outside()
            return result

        if threading.current_thread() is self._thread:  # already the writer (a job's nested write)
            return task()
        return self.call(task)

    def request_reconcile(self, reason: str) -> None:
        log.info("reconcile requested: %s", reason)
        with contextlib.suppress(DaemonNotRunning):
            self.submit(self.reconcile_now)

    def reconcile_now(self, full: bool = False) -> ReindexResponse:
        """Compare the whole corpus with the index and apply the difference (writer thread only)."""
        report = self.service.owner.apply_changes(full=full, vectors=self.vectors)
        self.stats.reconciles += 1
        self.stats.last_reconcile_at = now_iso()
        self._after_write(report)
        return report

    def store_vectors(self, batch: vector_pass.EmbeddedBatch, fingerprint: str) -> int:
        """Record vectors computed by the embedder thread (runs on the writer thread)."""
        if self.vectors is None:
            return 0
        added = self.service.owner.store_vectors(self.vectors, fingerprint, batch)
        self._faiss_dirty = self._faiss_dirty or added > 0
        return added

    def changed_outside(self) -> None:
        """A write operation changed the index on this thread: save FAISS soon, wake the embedder."""
        self._faiss_dirty = self._faiss_dirty or self.vectors is not None
        self.on_change()

    def _apply(self, paths: list[str]) -> None:
        self.busy = True
        try:
            report = self.service.owner.apply_changes(paths=paths, vectors=self.vectors)
        except Exception as exc:  # a broken batch is reported; the next reconcile retries it
            self._error(f"indexing {len(paths)} changed paths failed: {exc}")
            log.exception("batch failed")
            return
        finally:
            self.busy = False
        self.stats.batches += 1
        self.stats.paths_applied += len(paths)
        self.stats.last_batch_at = now_iso()
        self._after_write(report)
        log.debug(
            "batch of %d paths: %d new, %d changed, %d renamed, %d deleted",
            len(paths),
            report.new,
            report.changed,
            report.renamed,
            report.deleted,
        )

    def _after_write(self, report: ReindexResponse) -> None:
        changed = report.new + report.changed + report.renamed + report.deleted
        self.stats.files_changed += changed
        for warning in report.warnings:
            self._error(warning)
        if changed:
            if self.vectors is not None and (report.changed or report.deleted):
                self._faiss_dirty = True
            self.on_change()

    def _error(self, message: str) -> None:
        log.warning("%s", message)
        self.stats.error(message)

    # -- the loop ----------------------------------------------------------------------------
    def _main(self) -> None:
        try:
            self._loop()
        finally:
            # Whether it stopped or died, callers still waiting get an answer instead of hanging
            # (a job waiting forever would also keep the process from exiting).
            self._closed = True
            self._fail_queued()

    def _fail_queued(self) -> None:
        while True:
            try:
                item = self._tasks.get_nowait()
            except queue.Empty:
                return
            if item is not None and item[1].set_running_or_notify_cancel():
                item[1].set_exception(DaemonNotRunning("the daemon's writer stopped before running this request"))

    def _loop(self) -> None:
        while True:
            self._run_queued_tasks()
            due = self.changes.take_due(self._batch_files)
            if due:
                self._apply(due)
                continue
            if self._stopping.is_set():
                self._drain()
                return
            self._save_faiss(force=False)
            try:
                item = self._tasks.get(timeout=self._wait_s())
            except queue.Empty:
                continue
            if item is not None:
                self._run(item)

    def _wait_s(self) -> float:
        wait = self.changes.seconds_until_due()
        timeout = 1.0 if wait is None else min(wait, 1.0)
        if self._faiss_dirty:
            timeout = min(timeout, max(0.0, self._last_save + self._save_interval() - time.monotonic()))
        return max(timeout, 0.001)

    def _run_queued_tasks(self) -> None:
        while True:
            try:
                item = self._tasks.get_nowait()
            except queue.Empty:
                return
            if item is not None:
                self._run(item)

    def _run(self, item: _Task) -> None:
        fn, future = item
        if not future.set_running_or_notify_cancel():
            return
        self.busy = True
        try:
            future.set_result(fn())
        except BaseException as exc:
            future.set_exception(exc)
        finally:
            self.busy = False

    def _drain(self) -> None:
        """On stop: apply every path already seen, run queued tasks, persist FAISS."""
        paths = self.changes.take_all()
        for start in range(0, len(paths), self._batch_files):
            self._apply(paths[start : start + self._batch_files])
        self._run_queued_tasks()
        self._save_faiss(force=True)

    def _save_faiss(self, force: bool) -> None:
        if self.vectors is None or not self._faiss_dirty:
            return
        if not force and time.monotonic() - self._last_save < self._save_interval():
            return
        started = time.monotonic()
        try:
            self.service.owner.save_vectors(self.vectors)
        except Exception as exc:  # disk full, permissions: keep serving, say so, retry later
            self._error(f"saving the vector index failed: {exc}")
            return
        self._faiss_dirty = False
        self._last_save = time.monotonic()
        self._save_cost = self._last_save - started
        self.stats.faiss_saved_at = now_iso()

    def _save_interval(self) -> float:
        # A large index costs a while to write; saving at most every ten save-times keeps that
        # under a tenth of the writer's time while a backlog is embedded.
        return max(self._save_every, 10 * self._save_cost)
