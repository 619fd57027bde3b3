"""The MiniLM query path runs numpy's BLAS on one thread, and its vectors equal the multi-thread ones."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from dory import cpu
from dory.index.embedders.bert_numpy import NumpyBert
from dory.index.embedders.minilm import MiniLMEmbedder

pytestmark = [
    pytest.mark.model,
    pytest.mark.skipif(cpu.blas_threads() is None, reason="numpy's BLAS is not an OpenBLAS found by ctypes"),
]

TEXTS = [
    "how do I undo the last git commit",
    "Emperor penguins huddle together through the Antarctic winter to keep warm.",
    "Set-ExecutionPolicy changes the user preference for the PowerShell script execution policy.",
]


@pytest.fixture
def two_threads() -> Iterator[None]:
    before = cpu.blas_threads()
    cpu.set_blas_threads(2)
    yield
    assert before is not None
    cpu.set_blas_threads(before)


@pytest.fixture
def threads_seen_by_encoder(monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    """The BLAS thread count at each call of the real encoder (which still computes the vectors)."""
    seen: list[int | None] = []
    encode = NumpyBert.encode

    def recording(self: NumpyBert, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        seen.append(cpu.blas_threads())
        return encode(self, ids, mask)

    monkeypatch.setattr(NumpyBert, "encode", recording)
    return seen


@pytest.mark.usefixtures("two_threads")
def test_a_query_is_encoded_on_one_blas_thread(
    minilm: MiniLMEmbedder, threads_seen_by_encoder: list[int | None]
) -> None:
    minilm.embed_query(TEXTS[0])
    assert threads_seen_by_encoder == [1]
    assert cpu.blas_threads() == 2  # the process count is back once the query is done


@pytest.mark.usefixtures("two_threads")
def test_documents_keep_the_process_thread_count(
    minilm: MiniLMEmbedder, threads_seen_by_encoder: list[int | None]
) -> None:
    minilm.embed_documents(TEXTS)
    assert threads_seen_by_encoder and set(threads_seen_by_encoder) == {2}


@pytest.mark.usefixtures("two_threads")
def test_single_thread_vectors_equal_multi_thread_vectors(minilm: MiniLMEmbedder) -> None:
    many = minilm.embed_documents(TEXTS)  # no query prefix for MiniLM: the same input as a query
    one = np.stack([minilm.embed_query(text) for text in TEXTS])
    np.testing.assert_allclose(one, many, rtol=0, atol=1e-6)
