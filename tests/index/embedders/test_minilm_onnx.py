"""The onnx runtime (our own graph, run by onnxruntime) must give the numpy runtime's vectors.

Runs only where the `onnx` extra (onnxruntime and onnx) is installed; the message shown without it is
tested in test_embedder_factory.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dory.cpu import single_blas_thread
from dory.index.embedders.base import fingerprint_key
from dory.index.embedders.minilm import MiniLMEmbedder, resolve_runtime

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from dory.index.embedders.bert_onnx import OnnxBert, graph_file

TEXTS = [
    "A man is eating food.",
    "",
    "Keep FTS5 as a separate keyword mode and tune the fusion weight on real notes.",
    "word " * 400,  # truncated to 256 tokens
    "東京 12345678 foo_bar naïve café",
    "# Meeting notes\n\n- ship the wiki\n- fix `dory reindex --full`\n",
    "Vitamin D supplementation reduces the risk of acute respiratory infection in adults.",
    "How do I undo the last git commit but keep the changes?",
    "SELECT id, name FROM users WHERE created_at > '2024-01-01' ORDER BY name;",
    "The mitochondria is the powerhouse of the cell.",
    "Alice prefers tea over coffee in the morning; Bob drinks neither.",
    "def add(a: int, b: int) -> int:\n    return a + b\n",
    "Ünïcödé, emoji 🐟 and CJK 漢字 mixed with ASCII.",
    "tldr: extract audio tracks from CDs with cdparanoia",
    "a",
    "!!! ??? ...",
    "The quick brown fox jumps over the lazy dog. " * 20,
    "Decision: we keep the numpy encoder as the dependency-light fallback.",
    "https://example.com/path?query=1&other=two#fragment",
    "Resolvconf acts as an intermediary between programs that supply nameserver information and applications.",
]


@pytest.fixture(scope="module")
def onnx_embedder(model_dir: Path) -> MiniLMEmbedder:
    return MiniLMEmbedder(runtime="onnx")


@pytest.mark.model
def test_onnx_and_numpy_give_the_same_vectors(onnx_embedder: MiniLMEmbedder, minilm: MiniLMEmbedder) -> None:
    from_onnx = onnx_embedder.embed_documents(TEXTS)
    from_numpy = minilm.embed_documents(TEXTS)
    assert onnx_embedder.runtime == "onnx" and minilm.runtime == "numpy"
    assert from_onnx.dtype == np.float32 and from_onnx.shape == from_numpy.shape == (len(TEXTS), 384)
    assert (from_onnx * from_numpy).sum(axis=1).min() >= 0.9999
    np.testing.assert_allclose(from_onnx, from_numpy, atol=1e-5)
    for text, expected in zip(TEXTS[:5], from_numpy, strict=False):
        np.testing.assert_allclose(onnx_embedder.embed_query(text), expected, atol=1e-5)


@pytest.mark.model
def test_padding_does_not_change_a_vector(onnx_embedder: MiniLMEmbedder) -> None:
    """A short text batched with a long one (padded) gets the vector it gets alone."""
    alone = onnx_embedder.embed_documents([TEXTS[0]])[0]
    together = onnx_embedder.embed_documents([TEXTS[0], TEXTS[3]])[0]
    np.testing.assert_allclose(alone, together, atol=1e-6)


@pytest.mark.model
def test_onnx_has_the_numpy_fingerprint(onnx_embedder: MiniLMEmbedder, minilm: MiniLMEmbedder) -> None:
    assert fingerprint_key(onnx_embedder.fingerprint()) == fingerprint_key(minilm.fingerprint())


def test_auto_prefers_onnx_when_it_is_installed_and_torch_is_not() -> None:
    assert resolve_runtime("auto") == ("torch" if _has_torch() else "onnx")
    assert resolve_runtime("onnx") == "onnx"


@pytest.mark.model
def test_query_runs_on_one_thread_and_batches_on_the_process_count(model_dir: Path) -> None:
    encoder = OnnxBert.from_model_dir(model_dir)
    ids = np.array([[101, 7592, 102]], dtype=np.int64)
    mask = np.ones_like(ids)
    with single_blas_thread():
        one = encoder.encode(ids, mask)
    assert encoder.session(1).get_session_options().intra_op_num_threads == 1
    np.testing.assert_allclose(
        encoder.session(2).run(["pooled"], {"input_ids": ids, "attention_mask": mask})[0], one, atol=1e-6
    )
    assert encoder.session(2).get_session_options().intra_op_num_threads == 2


@pytest.mark.model
def test_the_graph_is_cached_and_a_damaged_cache_is_rebuilt(model_dir: Path, isolated_cache_dir: Path) -> None:
    cached = graph_file(model_dir)
    assert isinstance(cached, str) and Path(cached).parent.parent == isolated_cache_dir
    assert graph_file(model_dir) == cached  # the second call finds the file
    reference = OnnxBert(cached).encode(np.array([[101, 102]]), np.array([[1, 1]]))
    Path(cached).write_bytes(b"not an onnx graph")
    rebuilt = OnnxBert.from_model_dir(model_dir)
    np.testing.assert_array_equal(rebuilt.encode(np.array([[101, 102]]), np.array([[1, 1]])), reference)
    assert Path(cached).stat().st_size > 80_000_000


def _has_torch() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


@pytest.mark.model
def test_an_unwritable_cache_keeps_the_graph_in_memory(
    model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would be")
    monkeypatch.setenv("DORY_CACHE_DIR", str(blocker))
    model = graph_file(model_dir)
    assert isinstance(model, bytes) and len(model) > 80_000_000
    assert OnnxBert(model).encode(np.array([[101, 102]]), np.array([[1, 1]])).shape == (1, 384)
    assert [path.name for path in tmp_path.iterdir()] == ["not-a-folder"]
