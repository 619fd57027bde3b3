"""What every embedder offers, and small helpers they share.

An embedder turns text into unit-length float32 vectors. The index stores the embedder's
`fingerprint()` next to the vectors: when the fingerprint changes (another model, other prefixes,
other dimensions) the stored vectors are no longer comparable with new ones and must be rebuilt.
The fingerprint therefore describes *what the vectors mean*, never *how they were computed*: the
numpy and torch runtimes of the same model give the same fingerprint.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np

# Counts the wordpiece-like tokens of one text, without special tokens. The chunker uses it to keep
# chunks inside the embedder's window.
TokenCounter = Callable[[str], int]

Fingerprint = dict[str, str | int]


class NamedCounter(NamedTuple):
    """A token counter plus a stable identity, so the chunker can record which one cut its chunks."""

    count: TokenCounter
    identity: str


@runtime_checkable
class Embedder(Protocol):
    """The interface the indexer and search use. Vectors are float32 and L2-normalised."""

    @property
    def name(self) -> str:
        """Short human-readable backend name, e.g. "minilm-l6-v2"."""
        ...

    @property
    def dims(self) -> int:
        """Length of every vector this embedder returns."""
        ...

    def fingerprint(self) -> Fingerprint:
        """model, revision, dims, query_prefix, doc_prefix (plus anything else that changes vectors)."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens in `text` without special tokens."""
        ...

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """float32 array of shape (len(texts), dims), rows L2-normalised."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """float32 array of shape (dims,), L2-normalised."""
        ...


class PrefixedEmbedder:
    """Shared by the concrete embedders: prepend the query or document prefix, then `_embed`."""

    query_prefix = ""
    doc_prefix = ""

    def embed_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self._embed([self.query_prefix + text])[0]
        return vector

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self._embed([self.doc_prefix + text for text in texts])

    def _embed(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError


def fingerprint_key(fp: Fingerprint) -> str:
    """A stable string for comparing fingerprints: key order and whitespace never matter."""
    return json.dumps(fp, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def l2_normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """Scale each row to unit length; returns float32 (working in place if the input already is).

    An all-zero row cannot be normalised; it stays zero rather than becoming NaN.
    """
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    np.maximum(norms, np.float32(1e-12), out=norms)
    vectors /= norms
    return vectors
