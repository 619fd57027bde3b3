"""The vector side of search: embed the query, ask the FAISS store, honour the fingerprint rule."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

import numpy as np

from dory.cpu import single_blas_thread
from dory.errors import BackendUnavailable
from dory.index.embedders.base import Embedder
from dory.index.store import IndexStore
from dory.index.vector_pass import pending_count
from dory.index.vectors import VectorStore


class LiveVectors:
    """Vectors usable for search, or the reason they are not (raised as BackendUnavailable)."""

    def __init__(
        self,
        store: IndexStore,
        embedder: Callable[[], Embedder],
        vectors: Callable[[], VectorStore],
        fingerprint: Callable[[], str],
        lock: AbstractContextManager[object],
    ) -> None:
        """`lock` is held while FAISS is searched: the index's owner holds it while it changes FAISS."""
        self._store = store
        self._embedder = embedder
        self._vectors = vectors
        self._fingerprint = fingerprint
        self._lock = lock

    def search(self, query: str, k: int, allowed: np.ndarray | None) -> list[tuple[int, float]]:
        stored = self._store.meta("fingerprint")
        if stored is None:
            raise BackendUnavailable("no vectors have been built yet; run `dory reindex`")
        if stored != self._fingerprint():
            raise BackendUnavailable(
                "the embedding model changed since vectors were built; `dory reindex` rebuilds them"
            )
        # The query path embeds with numpy's BLAS on one thread (FAISS keeps to one thread itself):
        # threads gain little here and collapse when other processes hold the cores (dory/cpu.py).
        with single_blas_thread():
            query_vector = self._embedder().embed_query(query)  # outside the lock: the slow part
            with self._lock:
                return self._vectors().search(query_vector, k, allowed)

    def pending(self) -> int:
        return pending_count(self._store)
