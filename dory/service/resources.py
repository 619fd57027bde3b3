"""What the service's operations share, with explicit lifetimes and safe for many threads at once.

SQLite connections are per thread (each thread that asks gets its own connection to the WAL
database, so readers never share a cursor and never block the writer). The embedder and the token
counter are loaded once, under a lock, by whichever thread needs them first. The FAISS store is
shared: the index's owner changes it only while holding `vectors_lock`, and searches take the same
lock, so no search sees a half-applied change. `close()` ends every connection of every thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from dory.config import Settings
from dory.errors import BackendUnavailable, ModelUnavailable
from dory.index.store import IndexStore
from dory.memory.derived import Derived
from dory.search.recall_log import RecallLog

# The vector side (FAISS, the embedder, numpy) and the session plane load when first asked for:
# a bm25 search of durable memory touches neither (SPEC §11: a one-shot search in well under a second).
if TYPE_CHECKING:
    from dory.index.embedders import NamedCounter
    from dory.index.embedders.base import Embedder
    from dory.index.vectors import VectorStore
    from dory.sessions.store import SessionStore


class _Closeable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=_Closeable)


class PerThread(Generic[C]):
    """One object per thread (a SQLite connection's owner), all closed together."""

    def __init__(self, open_one: Callable[[], C]) -> None:
        self._open = open_one
        self._local = threading.local()
        self._lock = threading.Lock()
        self._all: list[C] = []

    def get(self) -> C:
        item: C | None = getattr(self._local, "item", None)
        if item is None:
            item = self._open()
            self._local.item = item
            with self._lock:
                self._all.append(item)
        return item

    def opened_here(self) -> bool:
        return getattr(self._local, "item", None) is not None

    def close(self) -> None:
        with self._lock:
            items, self._all = self._all, []
        for item in items:
            item.close()
        self._local = threading.local()


class Resources:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        cfg = settings.index
        self._stores = PerThread(lambda: IndexStore(settings.db_path, cfg.tokenizer, cfg.trigram, derived=Derived))
        self._session_stores = PerThread(lambda: _session_store(settings))
        self._recall_logs = PerThread(lambda: RecallLog(settings.recall_log_path))
        self._load_lock = threading.Lock()
        self._embedder: Embedder | None = None
        self._embedder_loaded = False
        self._counter: NamedCounter | None = None
        # Held by the owner while it changes FAISS, and by a search while it reads it.
        self.vectors_lock = threading.RLock()
        self._vectors: VectorStore | None = None
        self._loaded_stamp: tuple[int, int] | None = None
        self._owning = 0  # > 0 while this process owns the index (a daemon, or a write under the lock)
        # Set when the FAISS file was missing, damaged or behind SQLite and was rebuilt in memory.
        self.vectors_repaired = False
        # Notified when this process's owner raised the index generation (readers waiting for a
        # generation also poll, for owners in other processes).
        self.generation_changed = threading.Condition()

    # -- connections -------------------------------------------------------------------------
    def store(self) -> IndexStore:
        """This thread's connection to the index (created with its schema on first use)."""
        return self._stores.get()

    def session_store(self) -> SessionStore:
        return self._session_stores.get()

    def recall_log(self) -> RecallLog:
        return self._recall_logs.get()

    @contextmanager
    def existing_or_empty_store(self) -> Iterator[IndexStore]:
        """The index if it exists; else an empty in-memory one, so read-only questions (a plan, a
        status) never create an index on disk as a side effect."""
        if self.settings.db_path.exists():
            yield self.store()
            return
        cfg = self.settings.index
        empty = IndexStore(Path(":memory:"), cfg.tokenizer, cfg.trigram, derived=Derived)
        try:
            yield empty
        finally:
            empty.close()

    # -- models ------------------------------------------------------------------------------
    def embedder(self) -> Embedder | None:
        """The configured embedder (built once; the model itself loads on first use)."""
        with self._load_lock:
            if not self._embedder_loaded:
                from dory.index.embedders import EmbedderSettings, load_embedder

                e = self.settings.embedder
                self._embedder = load_embedder(
                    EmbedderSettings(
                        backend=e.backend,
                        runtime=e.runtime,
                        model_path=e.model_path,
                        url=e.url,
                        model=e.model,
                        api_key=e.api_key,
                        dims=e.dims,
                        batch_size=e.batch_size,
                        timeout_s=e.timeout_s,
                    )
                )
                self._embedder_loaded = True
            return self._embedder

    def require_embedder(self) -> Embedder:
        embedder = self.embedder()
        if embedder is None:
            raise BackendUnavailable("no embedder is configured (embedder.backend = none)")
        return embedder

    def fingerprint(self) -> str:
        from dory.index.embedders.base import fingerprint_key

        return fingerprint_key(self.require_embedder().fingerprint())

    def token_counter(self) -> NamedCounter:
        """The MiniLM wordpiece counter, else the approximation: chunk sizes and every token budget."""
        from dory.index.embedders import NamedCounter, default_token_counter
        from dory.index.embedders.tokens import APPROX_COUNTER_ID, approx_token_count

        with self._load_lock:
            if self._counter is None:
                try:
                    self._counter = default_token_counter(self.settings.embedder.model_path)
                except ModelUnavailable:
                    # A broken model must not stop the lexical pass; chunks are re-cut once it is fixed.
                    self._counter = NamedCounter(approx_token_count, APPROX_COUNTER_ID)
            return self._counter

    # -- the FAISS store ---------------------------------------------------------------------
    def vectors(self) -> VectorStore:
        """The FAISS store. While this process owns the index, the owner's store (checked against
        SQLite's record and rebuilt from the cache when they differ). Otherwise the last saved file
        as it is (a running daemon saves it within a second or so of a change), reloaded when the
        file is replaced; a missing or damaged file is rebuilt in memory from the cache. Reading
        never writes."""
        with self.vectors_lock:
            owner = self._owning > 0
            if self._vectors is not None and not owner and self._faiss_stamp() != self._loaded_stamp:
                self._vectors = None
            if self._vectors is None:
                self._vectors = self._load_vectors(owner)
            return self._vectors

    @contextmanager
    def owning(self) -> Iterator[None]:
        """This process owns the index meanwhile: FAISS is (re)loaded and checked as its owner."""
        with self.vectors_lock:
            self._owning += 1
            if self._owning == 1:
                self._vectors = None
        try:
            yield
        finally:
            with self.vectors_lock:
                self._owning -= 1
                if self._owning == 0:
                    self._vectors = None  # a reader reloads the saved file

    def replace_vectors(self, fresh: VectorStore) -> None:
        """The owner starts a new FAISS store (the embedding model changed)."""
        with self.vectors_lock:
            self._vectors = fresh

    def loaded_vectors(self) -> VectorStore | None:
        return self._vectors

    def _load_vectors(self, owner: bool) -> VectorStore:
        from dory.index import vector_pass
        from dory.index.vectors import VectorStore

        self._loaded_stamp = self._faiss_stamp()
        dims = self.require_embedder().dims
        cfg = self.settings.index
        fingerprint = self.fingerprint()
        store = self.store()
        usable = store.meta("fingerprint") == fingerprint
        try:
            vectors = VectorStore.load(self.settings.faiss_path, dims, cfg.vector_index, cfg.ivf_threshold)
            damaged = False
        except ValueError:
            vectors, damaged = VectorStore(dims, cfg.vector_index, cfg.ivf_threshold), True
        if usable and (damaged or (owner and not vector_pass.in_sync(store, vectors))):
            vector_pass.rebuild_from_cache(store, vectors, fingerprint, repair=owner)
            self.vectors_repaired = True
        return vectors

    def _faiss_stamp(self) -> tuple[int, int] | None:
        try:
            st = self.settings.faiss_path.stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_ino

    def close(self) -> None:
        self._recall_logs.close()
        self._stores.close()
        self._session_stores.close()


def _session_store(settings: Settings) -> SessionStore:
    from dory.sessions.store import SessionStore

    return SessionStore(settings.sessions_db_path, settings.index.tokenizer)
