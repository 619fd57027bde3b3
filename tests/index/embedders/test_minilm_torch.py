"""The torch runtime must give the numpy runtime's vectors (only runs where torch is installed)."""

from __future__ import annotations

import numpy as np
import pytest

from dory.index.embedders.base import fingerprint_key
from dory.index.embedders.minilm import MiniLMEmbedder

pytest.importorskip("torch")

TEXTS = [
    "A man is eating food.",
    "",
    "Keep FTS5 as a separate keyword mode and tune the fusion weight on real notes.",
    "word " * 400,  # truncated to 256 tokens
    "東京 12345678 foo_bar naïve café",
]


@pytest.mark.model
def test_torch_and_numpy_give_the_same_vectors(minilm: MiniLMEmbedder) -> None:
    torch_embedder = MiniLMEmbedder(runtime="torch")
    assert torch_embedder.runtime == "torch" and minilm.runtime == "numpy"
    from_torch = torch_embedder.embed_documents(TEXTS)
    from_numpy = minilm.embed_documents(TEXTS)
    assert from_torch.dtype == np.float32 and from_torch.shape == from_numpy.shape
    cosines = (from_torch * from_numpy).sum(axis=1)
    assert cosines.min() >= 0.9999
    np.testing.assert_allclose(from_torch, from_numpy, atol=1e-5)
    np.testing.assert_allclose(torch_embedder.embed_query(TEXTS[0]), from_numpy[0], atol=1e-5)
    assert fingerprint_key(torch_embedder.fingerprint()) == fingerprint_key(minilm.fingerprint())
