"""VectorStore: the FAISS side on its own (ids, removal, filters, persistence, index type by size)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dory.index.vectors import VectorStore


def unit_rows(n: int, dims: int = 16, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, dims)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_search_returns_chunk_ids_and_honours_filters_and_removal() -> None:
    vectors = unit_rows(50)
    store = VectorStore(16)
    store.add(np.arange(1000, 1050), vectors)
    assert store.search(vectors[7], 1)[0][0] == 1007
    allowed = np.array([1010, 1011])
    assert {i for i, _ in store.search(vectors[7], 5, allowed)} == {1010, 1011}
    store.remove([1007])
    assert 1007 not in {i for i, _ in store.search(vectors[7], 50)}
    assert store.ntotal == 49


def test_save_replaces_the_file_atomically_and_load_checks_dimensions(tmp_path: Path) -> None:
    path = tmp_path / "v.faiss"
    store = VectorStore(16)
    store.add(np.arange(5), unit_rows(5))
    store.save(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v.faiss"]  # no temp file left behind
    assert VectorStore.load(path, 16).ntotal == 5
    with pytest.raises(ValueError, match="expected 32"):
        VectorStore.load(path, 32)
    path.write_bytes(b"garbage")
    with pytest.raises(ValueError, match="unreadable vector index"):
        VectorStore.load(path, 16)


def test_index_type_is_chosen_by_size() -> None:
    vectors = unit_rows(1500, dims=16, seed=1)
    small = VectorStore(16, "auto", ivf_threshold=2000)
    small.rebuild(np.arange(1500), vectors)
    assert not small.is_ivf
    large = VectorStore(16, "auto", ivf_threshold=1000)
    large.rebuild(np.arange(1500), vectors)
    assert large.is_ivf
    assert large.search(vectors[3], 1)[0][0] == 3
    assert sorted(large.ids().tolist()) == list(range(1500))
    large.remove([3])
    assert large.ntotal == 1499


def test_flat_store_grown_past_the_threshold_asks_to_be_retyped() -> None:
    store = VectorStore(16, "auto", ivf_threshold=1000)
    store.add(np.arange(1200), unit_rows(1200))
    assert store.needs_retype()


def test_an_ivf_search_runs_faiss_on_one_thread_of_this_thread_only() -> None:
    """libgomp keeps the count per thread: the search limits and restores its own, nobody else's."""
    import threading

    import faiss

    from dory.index.vectors import _one_omp_thread

    vectors = unit_rows(2000)
    store = VectorStore(16, kind="ivf")
    store.rebuild(np.arange(2000), vectors)
    assert store.is_ivf

    def in_another_thread() -> int:
        seen: list[int] = []
        other = threading.Thread(target=lambda: seen.append(faiss.omp_get_max_threads()))
        other.start()
        other.join()
        return seen[0]

    default, before = in_another_thread(), faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(2)
    try:
        with _one_omp_thread():
            assert faiss.omp_get_max_threads() == 1
            assert in_another_thread() == default
        assert faiss.omp_get_max_threads() == 2
        assert store.search(vectors[5], 1)[0][0] == 5
        assert faiss.omp_get_max_threads() == 2
    finally:
        faiss.omp_set_num_threads(before)
