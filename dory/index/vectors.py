"""The FAISS side of the index: chunk vectors by chunk id, persisted atomically beside the database.

Small corpora use an exact `IndexIDMap2(IndexFlatIP)`; past `ivf_threshold` vectors the store is
rebuilt as `IndexIVFFlat` (inner product, nlist ≈ 4·√N). The file is only ever replaced whole
(temp file, fsync, rename), so a reader sees the old or the new index, never half of one.

Threads: a search runs FAISS on ONE OpenMP thread (`_one_omp_thread`). A single query gains nothing
from FAISS's threads, and when other processes hold the cores its spinning OpenMP team collapses
(IndexFlatIP at 100k, nq=1, on 2 cores already busy with other processes: p50 48 ms on 1 thread,
130 ms on 2; with 2 more busy loops 88 against 249 ms; scripts/bench/bench_search.py --threads-only).
libgomp keeps the thread count per calling thread, so this does not slow the writer thread's
rebuilds and IVF training, which keep every core. The flat index is searched by FAISS too: at 100k
vectors its one-thread scan beats a numpy product over the same memory, p50 7.3 against 14.4 ms
(one BLAS thread) idle and 14.3 against 26.4 ms with two busy loops (scripts/bench/bench_search.py).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import faiss
import numpy as np

IVF_NPROBE = 48


@contextmanager
def _one_omp_thread() -> Iterator[None]:
    """FAISS on one OpenMP thread for this calling thread only (libgomp's setting is per thread)."""
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


class VectorStore:
    def __init__(self, dims: int, kind: str = "auto", ivf_threshold: int = 200_000) -> None:
        self.dims = dims
        self.kind = kind
        self.ivf_threshold = ivf_threshold
        self.index: faiss.Index = self._empty_flat()

    def _empty_flat(self) -> faiss.Index:
        return faiss.IndexIDMap2(faiss.IndexFlatIP(self.dims))

    # -- persistence -------------------------------------------------------------------------
    @classmethod
    def load(cls, path: Path, dims: int, kind: str = "auto", ivf_threshold: int = 200_000) -> VectorStore:
        """Read the index file; raises ValueError when it is unreadable or of other dimensions."""
        store = cls(dims, kind, ivf_threshold)
        try:
            index = faiss.read_index(str(path))
        except RuntimeError as exc:
            raise ValueError(f"unreadable vector index {path}: {exc}") from exc
        if index.d != dims:
            raise ValueError(f"vector index has {index.d} dimensions, expected {dims}")
        store.index = index
        return store

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
        faiss.write_index(self.index, str(tmp))
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    # -- contents ----------------------------------------------------------------------------
    @property
    def ntotal(self) -> int:
        return int(self.index.ntotal)

    @property
    def is_ivf(self) -> bool:
        return isinstance(faiss.downcast_index(self.index), faiss.IndexIVF)

    def ids(self) -> np.ndarray:
        if self.is_ivf:
            invlists = faiss.extract_index_ivf(self.index).invlists
            assert invlists is not None  # an IVF index always owns its inverted lists
            parts = [
                faiss.rev_swig_ptr(invlists.get_ids(i), invlists.list_size(i)).copy()
                for i in range(invlists.nlist)
                if invlists.list_size(i)
            ]
            return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
        return faiss.vector_to_array(self._id_map().id_map).astype(np.int64)

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        if len(ids) == 0:
            return
        self.index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), np.asarray(ids, dtype=np.int64))

    def remove(self, ids: np.ndarray | list[int]) -> None:
        if len(ids) == 0 or self.ntotal == 0:
            return
        self.index.remove_ids(faiss.IDSelectorBatch(np.asarray(ids, dtype=np.int64)))

    def rebuild(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        """Replace everything, choosing the index type for the new size."""
        use_ivf = self.kind == "ivf" or (self.kind == "auto" and len(ids) >= self.ivf_threshold)
        if use_ivf and len(ids) >= 1000:
            nlist = min(4096, max(16, int(4 * math.sqrt(len(ids)))))
            quantizer = faiss.IndexFlatIP(self.dims)
            index = faiss.IndexIVFFlat(quantizer, self.dims, nlist, faiss.METRIC_INNER_PRODUCT)
            index.train(np.ascontiguousarray(vectors[: max(nlist * 50, 50_000)], dtype=np.float32))
            index.nprobe = IVF_NPROBE
            self.index = index
        else:
            self.index = self._empty_flat()
        self.add(ids, vectors)

    def needs_retype(self) -> bool:
        """True when the current index type no longer suits its size (flat grown past the threshold)."""
        return self.kind == "auto" and not self.is_ivf and self.ntotal >= self.ivf_threshold

    # -- search ------------------------------------------------------------------------------
    def search(self, query: np.ndarray, k: int, allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """Top-k (chunk id, cosine) pairs; `allowed` restricts the candidates to those chunk ids."""
        if self.ntotal == 0 or k <= 0:
            return []
        query = np.ascontiguousarray(query, dtype=np.float32).reshape(1, -1)
        # faiss's stubs type the parameter constructors without arguments: fields are set after.
        params = faiss.SearchParametersIVF() if self.is_ivf else faiss.SearchParameters()
        if isinstance(params, faiss.SearchParametersIVF):
            params.nprobe = IVF_NPROBE
        if allowed is not None:
            params.sel = faiss.IDSelectorBatch(np.asarray(allowed, dtype=np.int64))
        with _one_omp_thread():
            scores, ids = self.index.search(query, min(k, self.ntotal), params=params)
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0]

    def _id_map(self) -> faiss.IndexIDMap:
        """The index of a store that is not IVF: the IndexIDMap2 of `_empty_flat` (or read back from one)."""
        assert isinstance(self.index, faiss.IndexIDMap)
        return self.index
