"""The background embedder: computes vectors for pending chunks while the writer stays free.

It reads pending chunks on its own read-only connection, embeds them (the slow part, outside any
lock or transaction), and hands the vectors to the writer thread, which records only those whose
chunk is still there with the same content. New text is therefore searchable by keywords at once
and by meaning as soon as this thread reaches it.

Threads: the daemon is background work on a machine someone is using, so on start this worker sets
numpy's BLAS to `dory.cpu.background_blas_threads()` (1 unless DORY_BLAS_THREADS says otherwise)
for the whole daemon process (OpenBLAS has one count per process). Two BLAS threads embed faster only
while a core is free; when other processes hold the cores they collapse (2 cores, 2 busy loops: 0.4
chunks/s on 2 threads against 2.6 on 1), and queries served by the same process then wait behind them.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from dataclasses import dataclass

from dory.cpu import background_blas_threads, set_blas_threads
from dory.daemon.health import PartHealth, guarded
from dory.daemon.writer import IndexWriter
from dory.errors import DaemonNotRunning
from dory.index import vector_pass
from dory.index.eta import RateWindow
from dory.index.store import IndexStore, now_iso
from dory.service import DoryService
from dory.sessions import vectors as session_vectors
from dory.sessions.store import SessionStore

log = logging.getLogger("dory.embed")
RETRY_AFTER_ERROR_S = 30.0


@dataclass
class EmbedStats(PartHealth):
    enabled: bool = False
    embedded: int = 0  # chunks the model embedded
    reused: int = 0  # chunks whose vector came from the cache (renames, re-saves)
    stored: int = 0
    turns_embedded: int = 0  # session turns
    last_batch_at: str | None = None
    # Chunks per second over the recent batches (None until enough were measured): `dory status`
    # divides the chunks still pending by it for its ETA.
    rate_per_s: float | None = None


class EmbedWorker:
    def __init__(self, service: DoryService, writer: IndexWriter) -> None:
        self.service = service
        self.writer = writer
        self.stats = EmbedStats()
        self._rate = RateWindow()  # only this thread touches it; the stats publish its result
        self.busy = False
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=guarded(self.stats, "embedder", self._loop), name="dory-embed", daemon=True
        )

    def start(self) -> None:
        if self.writer.vectors is None:
            return  # no embedder configured, or it could not load: lexical only
        self.stats.enabled = True
        set_blas_threads(background_blas_threads())  # process-wide; see the module docstring
        self._thread.start()

    def stop(self, timeout_s: float = 30.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def wake(self) -> None:
        self._wake.set()

    def _loop(self) -> None:
        settings = self.service.settings
        reader = IndexStore(settings.db_path, settings.index.tokenizer, readonly=True)
        turns = SessionStore(settings.sessions_db_path, settings.index.tokenizer, readonly=True)
        try:
            while not self._stop.is_set():
                self._wake.wait(timeout=5.0)
                self._wake.clear()
                self._drain(reader)
                self._drain_turns(turns)
        finally:
            reader.close()
            turns.close()

    def _drain_turns(self, reader: SessionStore) -> None:
        """Session turns after durable chunks: durable memory is what most searches read."""
        embedder = self.service.resources.embedder()
        if embedder is None:
            return
        fingerprint = self.service.resources.fingerprint()
        while not self._stop.is_set():
            self.busy = True
            try:
                limit = self.service.settings.daemon.embed_batch
                batch = session_vectors.embed_batch(reader, embedder, fingerprint, limit)
                if batch is None:
                    return
                self.writer.call(functools.partial(self.service.owner.store_turn_vectors, fingerprint, batch))
            except DaemonNotRunning:
                return
            except Exception as exc:  # as for chunks: keep the backlog, retry later
                self.stats.error(f"embedding session turns failed: {exc}")
                log.warning("embedding session turns failed: %s", exc)
                return
            finally:
                self.busy = False
            self.stats.turns_embedded += len(batch)

    def _drain(self, reader: IndexStore) -> None:
        embedder = self.service.resources.embedder()
        if embedder is None:
            return
        fingerprint = self.service.resources.fingerprint()
        limit = self.service.settings.daemon.embed_batch
        while not self._stop.is_set():
            self.busy = True
            started = time.monotonic()  # the batch's own time: idle gaps between batches are not slowness
            try:
                batch = vector_pass.embed_batch(reader, embedder, fingerprint, limit)
                if batch is None:
                    return
                stored = self.writer.call(functools.partial(self.writer.store_vectors, batch, fingerprint))
            except DaemonNotRunning:
                return
            except Exception as exc:  # an endpoint down, a broken model: keep the backlog, retry later
                self.stats.error(f"embedding failed: {exc}")
                log.warning("embedding failed, retrying in %.0f s: %s", RETRY_AFTER_ERROR_S, exc)
                self._stop.wait(RETRY_AFTER_ERROR_S)
                return
            finally:
                self.busy = False
            self.stats.embedded += len(batch.fresh)
            self.stats.reused += len(batch.rows) - len(batch.fresh)
            self.stats.stored += stored
            self.stats.last_batch_at = now_iso()
            self._rate.add(len(batch.rows), time.monotonic() - started)
            rate = self._rate.rate()
            self.stats.rate_per_s = None if rate is None else round(rate, 2)
            if stored == 0:
                return  # everything read had changed meanwhile; the writer wakes us again
