"""The vector side of search on a real service: the query path runs numpy's BLAS on one thread."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from dory import cpu
from dory.config import load_settings
from dory.index.embedders.bert_numpy import NumpyBert
from dory.index.vectors import VectorStore
from dory.models import ReindexRequest, SearchRequest
from dory.service import DoryService

pytestmark = [
    pytest.mark.model,
    pytest.mark.skipif(cpu.blas_threads() is None, reason="numpy's BLAS is not an OpenBLAS found by ctypes"),
]


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DoryService]:
    root: Path = tmp_path_factory.mktemp("semantic") / "corpus"
    (root / "notes").mkdir(parents=True)
    (root / "notes/penguins.md").write_text("# Penguins\n\nEmperor penguins huddle together in Antarctic winter.\n")
    (root / "notes/bread.md").write_text("# Bread\n\nKnead the dough and let it rise overnight.\n")
    service = DoryService(load_settings(root, {"embedder.runtime": "numpy"}, env={}))
    assert service.reindex(ReindexRequest()).vectors_pending == 0
    yield service
    service.close()


@pytest.mark.parametrize("mode", ["hybrid", "vector"])
def test_embedding_and_vector_search_run_on_one_blas_thread(
    svc: DoryService, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, list[int | None]] = {"encode": [], "vectors": []}
    encode, search = NumpyBert.encode, VectorStore.search

    def recording_encode(self: NumpyBert, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        seen["encode"].append(cpu.blas_threads())
        return encode(self, ids, mask)

    def recording_search(self: VectorStore, *args: object, **kwargs: object) -> list[tuple[int, float]]:
        seen["vectors"].append(cpu.blas_threads())
        return search(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(NumpyBert, "encode", recording_encode)
    monkeypatch.setattr(VectorStore, "search", recording_search)
    before = cpu.blas_threads()
    assert cpu.set_blas_threads(2)
    try:
        res = svc.search(SearchRequest(query="birds that live in the cold", mode=mode))
        assert cpu.blas_threads() == 2
    finally:
        assert before is not None
        cpu.set_blas_threads(before)
    assert res.hits and res.hits[0].path == "notes/penguins.md"
    assert seen == {"encode": [1], "vectors": [1]}
