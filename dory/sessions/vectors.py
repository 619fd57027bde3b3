"""Vectors for session turns: embedded in the background like durable chunks, cached by text hash.

The session plane is small next to durable memory (turns, not a whole vault), so its vectors live
in its own SQLite file and are searched exactly with one matrix product; no FAISS file to keep in
step with it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dory.index.embedders.base import Embedder
from dory.sessions.store import SessionStore

EMBED_BATCH = 64


def embed_batch(
    store: SessionStore, embedder: Embedder, fingerprint: str, limit: int = EMBED_BATCH
) -> list[tuple[str, np.ndarray]] | None:
    """Embed up to `limit` pending turns (read only); None when nothing is pending."""
    pending = store.pending_vectors(fingerprint, limit)
    if not pending:
        return None
    matrix = embedder.embed_documents([text for _, text in pending])
    return [(digest, matrix[i]) for i, (digest, _) in enumerate(pending)]


def embed_pending(
    store: SessionStore, embedder: Embedder, fingerprint: str, progress: Callable[[str, int, int], None] | None = None
) -> int:
    """Give every turn a vector; returns how many texts were embedded."""
    total = store.pending_count(fingerprint)
    done = 0
    if total and progress is not None:
        progress("session vectors", 0, total)  # as for chunks: the first batch is timed too
    while (batch := embed_batch(store, embedder, fingerprint)) is not None:
        store.store_vectors(fingerprint, batch)
        done += len(batch)
        if progress is not None:
            progress("session vectors", done, total)
    store.prune_vectors()
    return done
