"""The MiniLM embedder on the real model (numpy runtime), checked against known facts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dory.errors import ConfigError, ModelUnavailable
from dory.index.embedders import EmbedderSettings, load_embedder
from dory.index.embedders.base import Embedder, fingerprint_key
from dory.index.embedders.minilm import MiniLMEmbedder, pad_batch, plan_micro_batches
from dory.index.embedders.tokens import MINILM_COUNTER_ID, approx_token_count, default_token_counter

# First 8 components of the vector for "A man is eating food." from an independent implementation
# (Hugging Face transformers BertModel + mean pooling + L2 norm, run once offline on the same weights).
EATING_FOOD_HEAD = [
    0.0332416,
    0.0044060,
    -0.0062770,
    0.0483787,
    -0.1387023,
    -0.0336174,
    0.1011283,
    -0.0543850,
]

LONG_TEXT = " ".join(f"word{i % 37} is followed by another sentence about topic {i}." for i in range(80))


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))  # inputs are unit vectors


@pytest.mark.model
def test_shapes_dtype_and_unit_norm(minilm: MiniLMEmbedder) -> None:
    docs = minilm.embed_documents(["first text", "second, longer text about gardens"])
    query = minilm.embed_query("gardens")
    assert docs.shape == (2, 384) and docs.dtype == np.float32
    assert query.shape == (384,) and query.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    assert abs(float(np.linalg.norm(query)) - 1.0) < 1e-5
    assert minilm.embed_documents([]).shape == (0, 384)
    assert isinstance(minilm, Embedder)


@pytest.mark.model
def test_matches_reference_implementation(minilm: MiniLMEmbedder) -> None:
    vector = minilm.embed_query("A man is eating food.")
    np.testing.assert_allclose(vector[:8], EATING_FOOD_HEAD, atol=2e-6)


@pytest.mark.model
def test_semantic_sanity(minilm: MiniLMEmbedder) -> None:
    eating, bread, baby, horse = minilm.embed_documents(
        [
            "A man is eating food.",
            "A man is eating a piece of bread.",
            "The girl is carrying a baby.",
            "A man is riding a horse.",
        ]
    )
    assert cos(eating, bread) > 0.7  # reference: 0.755
    assert cos(eating, bread) > cos(eating, baby) + 0.5  # reference: -0.105
    assert cos(eating, bread) > cos(eating, horse) + 0.3  # reference: 0.247

    paraphrase = minilm.embed_query("How do I bake sourdough bread at home?")
    note, unrelated = minilm.embed_documents(
        ["A home baker's guide to making a sourdough loaf.", "Quarterly tax filing deadlines for companies."]
    )
    assert cos(paraphrase, note) > cos(paraphrase, unrelated) + 0.3


@pytest.mark.model
def test_batching_by_length_does_not_change_vectors(minilm: MiniLMEmbedder) -> None:
    texts = ["short", LONG_TEXT, "a medium length sentence about databases and indexes", "", "x y z"]
    together = minilm.embed_documents(texts)
    one_by_one = np.stack([minilm.embed_documents([text])[0] for text in texts])
    np.testing.assert_allclose(together, one_by_one, atol=1e-5)


@pytest.mark.model
def test_padding_does_not_change_the_vector(minilm: MiniLMEmbedder) -> None:
    """Extra padding positions (mask 0) must not leak into attention or pooling."""
    encoder = minilm._get_encoder()  # the raw forward pass is what is being tested here
    ids = minilm._get_tokenizer().encode_batch(["padding must be invisible"])
    tight_ids, tight_mask = pad_batch(ids)
    padded_ids, padded_mask = pad_batch([ids[0], [101] + [1000] * 40 + [102]])
    tight = encoder.encode(tight_ids, tight_mask)[0]
    padded = encoder.encode(padded_ids, padded_mask)[0]
    np.testing.assert_allclose(tight, padded, atol=1e-5)


@pytest.mark.model
def test_empty_and_overlong_texts(minilm: MiniLMEmbedder) -> None:
    empty = minilm.embed_query("")
    assert np.isfinite(empty).all() and abs(float(np.linalg.norm(empty)) - 1.0) < 1e-5
    # Everything after the first 254 wordpieces is cut off (256 with [CLS] and [SEP]).
    assert minilm.count_tokens("x " * 600) == 600
    long_vector, cut_vector = minilm.embed_documents(["x " * 600, "x " * 254])
    np.testing.assert_allclose(long_vector, cut_vector, atol=1e-6)
    assert minilm.count_tokens(LONG_TEXT) > 256
    assert np.isfinite(minilm.embed_query(LONG_TEXT)).all()


@pytest.mark.model
def test_count_tokens(minilm: MiniLMEmbedder) -> None:
    assert minilm.count_tokens("Hello, world!") == 4  # hello , world !
    assert minilm.count_tokens("The quick brown fox jumps over the lazy dog.") == 10
    assert minilm.count_tokens("") == 0


@pytest.mark.model
def test_fingerprint_is_runtime_independent(minilm: MiniLMEmbedder) -> None:
    fingerprint = minilm.fingerprint()
    assert fingerprint["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert fingerprint["revision"] == "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
    assert fingerprint["dims"] == 384
    assert fingerprint["query_prefix"] == "" and fingerprint["doc_prefix"] == ""
    for runtime in ("numpy", "torch", "auto"):
        assert fingerprint_key(MiniLMEmbedder(runtime=runtime).fingerprint()) == fingerprint_key(fingerprint)


def test_construction_is_lazy_and_errors_come_on_use(tmp_path: Path) -> None:
    embedder = MiniLMEmbedder(model_path=tmp_path / "nowhere")  # no files touched yet
    assert embedder.fingerprint()["dims"] == 384
    with pytest.raises(ModelUnavailable, match="does not exist"):
        embedder.embed_query("x")
    with pytest.raises(ModelUnavailable, match="does not exist"):
        embedder.count_tokens("x")


def test_unknown_runtime_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown MiniLM runtime 'gpu'"):
        load_embedder(EmbedderSettings(runtime="gpu"))


@pytest.mark.model
def test_default_token_counter_uses_the_wordpiece_tokenizer(model_dir: Path) -> None:
    counter = default_token_counter()
    assert counter.identity == MINILM_COUNTER_ID
    assert counter.count("Hello, world!") == 4


@pytest.mark.model
def test_approximate_counter_is_close_to_the_real_one(minilm: MiniLMEmbedder) -> None:
    samples = [
        "Keep FTS5 as a separate keyword mode, make the fusion weight configurable, and tune it on real "
        "notes. Keyword queries, such as names and identifiers, are where BM25 should win.",
        "Yesterday I planted tomatoes, basil and two rows of carrots; the soil was cold after the rain.",
        "Set misfire_grace_time=None with coalesce=True so a job missed while asleep still runs.",
        "The watchdog observer reports a moved event when an editor saves atomically via rename.",
        "def embed_documents(self, texts: list[str]) -> np.ndarray: return self._embed(texts)",
    ]
    for text in samples:
        real = minilm.count_tokens(text)
        assert abs(approx_token_count(text) - real) <= 0.25 * real, text


def test_micro_batches_group_similar_lengths() -> None:
    lengths = [10, 250, 12, 240, 11]
    batches = plan_micro_batches(lengths, token_budget=512)
    assert batches == [[1, 3], [2, 4, 0]]  # longest first; each batch fits 512 padded tokens
    assert plan_micro_batches([900], token_budget=512) == [[0]]  # an oversized text still gets a batch
    assert sorted(i for batch in plan_micro_batches(lengths, 64) for i in batch) == [0, 1, 2, 3, 4]
