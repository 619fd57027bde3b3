"""load_embedder, the sentence-transformers error paths and the shared helpers."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from dory.errors import ConfigError, ModelUnavailable
from dory.index.embedders import EmbedderSettings, load_embedder
from dory.index.embedders.base import fingerprint_key
from dory.index.embedders.minilm import RUNTIMES, MiniLMEmbedder, resolve_runtime
from dory.index.embedders.tokens import APPROX_COUNTER_ID, approx_token_count, default_token_counter

HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_ST = importlib.util.find_spec("sentence_transformers") is not None
HAS_ONNX = all(importlib.util.find_spec(name) is not None for name in ("onnxruntime", "onnx"))


def test_none_backend_gives_no_embedder() -> None:
    assert load_embedder(EmbedderSettings(backend="none")) is None


def test_default_backend_is_minilm_and_costs_nothing_to_build() -> None:
    embedder = load_embedder(EmbedderSettings())
    assert isinstance(embedder, MiniLMEmbedder)
    assert embedder.name == "minilm-l6-v2" and embedder.dims == 384


def test_unknown_backend_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown embedder backend 'word2vec'") as info:
        load_embedder(EmbedderSettings(backend="word2vec"))
    assert info.value.code == "config_error"


def test_fingerprint_key_ignores_key_order() -> None:
    assert fingerprint_key({"b": 1, "a": "x"}) == fingerprint_key({"a": "x", "b": 1}) == '{"a":"x","b":1}'
    assert fingerprint_key({"dims": 384}) != fingerprint_key({"dims": 768})


@pytest.mark.skipif(HAS_TORCH, reason="checks the message shown when torch is missing")
def test_torch_runtime_without_torch_is_explained() -> None:
    assert resolve_runtime("auto") == ("onnx" if HAS_ONNX else "numpy")
    with pytest.raises(ModelUnavailable, match="pip install torch"):
        resolve_runtime("torch")


def test_sentence_transformers_needs_a_folder(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="needs model_path"):
        load_embedder(EmbedderSettings(backend="sentence-transformers"))
    with pytest.raises(ConfigError, match="does not exist"):
        load_embedder(EmbedderSettings(backend="sentence-transformers", model_path=str(tmp_path / "nope")))
    with pytest.raises(ConfigError, match="does not look like a sentence-transformers model folder"):
        load_embedder(EmbedderSettings(backend="sentence-transformers", model_path=str(tmp_path)))


@pytest.mark.skipif(HAS_ST, reason="checks the message shown when sentence-transformers is missing")
def test_sentence_transformers_missing_package_is_explained(tmp_path: Path) -> None:
    (tmp_path / "modules.json").write_text(json.dumps([]))
    with pytest.raises(ModelUnavailable, match="pip install sentence-transformers") as info:
        load_embedder(EmbedderSettings(backend="sentence-transformers", model_path=str(tmp_path)))
    assert info.value.code == "model_unavailable"


def test_approximate_counter_is_deterministic_and_bert_like() -> None:
    assert approx_token_count("") == 0
    assert approx_token_count("Hello, world!") == 4  # hello , world !
    assert approx_token_count("東京") == 2  # one token per CJK character, as in BERT
    assert approx_token_count("internationalization") > 1  # long words cost several pieces
    text = "Some text, with punctuation; and numbers 12345."
    assert approx_token_count(text) == approx_token_count(text)


def test_default_counter_for_a_missing_explicit_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailable, match="model_path setting"):
        default_token_counter(tmp_path / "missing")
    assert APPROX_COUNTER_ID == "approx:v1"  # recorded by the chunker; changing it re-cuts chunks


@pytest.mark.parametrize("missing", ["onnxruntime", "onnx"])
def test_onnx_runtime_without_its_packages_is_explained(missing: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A None entry in sys.modules makes a package absent for find_spec and import alike."""
    monkeypatch.setitem(sys.modules, missing, None)
    assert resolve_runtime("auto") == ("torch" if HAS_TORCH else "numpy")
    with pytest.raises(
        ModelUnavailable, match=r"runtime 'onnx' was requested .* `pip install 'dory-memory\[onnx\]'`"
    ) as info:
        resolve_runtime("onnx")
    assert info.value.code == "model_unavailable"
    embedder = load_embedder(EmbedderSettings(runtime="onnx"))  # construction stays free ...
    with pytest.raises(ModelUnavailable, match="runtime 'onnx' was requested"):
        embedder.embed_query("x")  # ... the error comes on use


def test_onnx_is_a_runtime_setting() -> None:
    assert "onnx" in RUNTIMES
    embedder = load_embedder(EmbedderSettings(runtime="onnx"))
    assert isinstance(embedder, MiniLMEmbedder)
