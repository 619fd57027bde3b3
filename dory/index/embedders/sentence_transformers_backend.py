"""A user-supplied local sentence-transformers model folder (bge-small, e5-small, …).

sentence-transformers (and torch) are optional and slow to import (~5 s), so the import happens on
the first embed call; construction only checks that the package exists and the folder looks right.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from dory.errors import ConfigError, ModelUnavailable

from .base import Fingerprint, PrefixedEmbedder, TokenCounter, l2_normalize_rows
from .tokens import approx_token_count

# Small files that identify a model folder; hashing them is cheap (the weights are not hashed).
_IDENTITY_FILES = ("config.json", "modules.json", "sentence_bert_config.json", "tokenizer.json")
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


class SentenceTransformersEmbedder(PrefixedEmbedder):
    """Runs a local sentence-transformers model folder through the sentence_transformers package."""

    name = "sentence-transformers"

    def __init__(self, model_path: str | os.PathLike[str], *, dims: int | None = None, batch_size: int = 32):
        self.folder = Path(model_path).expanduser()
        if not self.folder.is_dir():
            raise ConfigError(f"sentence-transformers model folder {self.folder} does not exist")
        if not (self.folder / "modules.json").is_file() and not (self.folder / "config.json").is_file():
            raise ConfigError(f"{self.folder} does not look like a sentence-transformers model folder")
        if importlib.util.find_spec("sentence_transformers") is None:
            raise ModelUnavailable(
                "the sentence-transformers backend needs the sentence_transformers package; "
                "run `pip install sentence-transformers` (CPU-only torch first: `pip install torch`)"
            )
        self.batch_size = batch_size
        self.query_prefix, self.doc_prefix = _read_prompts(self.folder)
        self._dims = dims or _read_pooling_dims(self.folder)
        self._model: Any = None
        self._lock = threading.Lock()
        self._counter: TokenCounter | None = None

    @property
    def dims(self) -> int:
        if self._dims is None:
            self._dims = int(self._get_model().get_sentence_embedding_dimension())
        return self._dims

    def fingerprint(self) -> Fingerprint:
        return {
            "model": f"sentence-transformers:{self.folder.name}",
            "revision": _folder_revision(self.folder),
            "dims": self.dims,
            "query_prefix": self.query_prefix,
            "doc_prefix": self.doc_prefix,
        }

    def count_tokens(self, text: str) -> int:
        """The folder's own tokenizer.json when it has one, else the deterministic approximation."""
        if self._counter is None:
            self._counter = _folder_token_counter(self.folder)
        return self._counter(text)

    def _embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        vectors = self._get_model().encode(
            texts, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False
        )
        return l2_normalize_rows(np.asarray(vectors, dtype=np.float32))

    def _get_model(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    from sentence_transformers import SentenceTransformer  # lazy: slow import

                    # A local folder path: sentence-transformers loads it without any download.
                    self._model = SentenceTransformer(str(self.folder), device="cpu")
        return self._model


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _read_prompts(folder: Path) -> tuple[str, str]:
    """(query prefix, document prefix) from config_sentence_transformers.json "prompts", if any."""
    prompts = _read_json(folder / "config_sentence_transformers.json").get("prompts") or {}
    if not isinstance(prompts, dict):
        return "", ""
    query = prompts.get("query", "")
    document = prompts.get("document", prompts.get("passage", ""))
    return (query if isinstance(query, str) else ""), (document if isinstance(document, str) else "")


def _read_pooling_dims(folder: Path) -> int | None:
    dims = _read_json(folder / "1_Pooling" / "config.json").get("word_embedding_dimension")
    return dims if isinstance(dims, int) else None


def _folder_revision(folder: Path) -> str:
    """A short hash of the folder's small identity files plus the weight files' sizes.

    Hashing hundreds of MB of weights on every start would be slow; a retrained model almost always
    changes config or size, and a user swapping weights in place can force a rebuild anyway.
    """
    digest = hashlib.sha256()
    for name in _IDENTITY_FILES:
        path = folder / name
        if path.is_file():
            digest.update(name.encode() + b"\0" + path.read_bytes())
    for name in _WEIGHT_FILES:
        path = folder / name
        if path.is_file():
            digest.update(f"{name}\0{path.stat().st_size}".encode())
    return digest.hexdigest()[:16]


def _folder_token_counter(folder: Path) -> TokenCounter:
    tokenizer_json = folder / "tokenizer.json"
    if not tokenizer_json.is_file():
        return approx_token_count
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_json))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids)
