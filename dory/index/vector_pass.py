"""The vector pass: embed chunks whose vector is missing or stale, reusing cached vectors by hash.

A chunk's `content_hash` is the hash of exactly what the embedder is given (title context, heading
path, text); `vector_hash` is the hash its FAISS vector was computed from (NULL: none). A chunk is
pending while the two differ: it has no vector, or a rename changed its input (its old vector stays
searchable, counted as stale, until it is replaced).

FAISS and SQLite cannot share a transaction, so SQLite is the record: `vector_hash` says which
chunks should be in FAISS, and with which vector, and the `embeddings` table keeps every vector.
When the FAISS file disagrees with that record (a crash between the two writes, a deleted file),
it is rebuilt from the cache in seconds without embedding anything.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dory.index.embedders.base import Embedder
from dory.index.eta import Progress
from dory.index.store import IndexStore, embed_text, title_context
from dory.index.vectors import VectorStore

EMBED_BATCH = 128
SAVE_EVERY_BATCHES = 10
# Set (in SQLite) while FAISS holds vectors that SQLite says were replaced, until FAISS is saved:
# replacing keeps the chunk id, so comparing ids cannot see a crash between the two writes.
REPLACED_UNSAVED = "vectors_replaced_unsaved"


def vector_ids(store: IndexStore) -> np.ndarray:
    """The chunk ids SQLite says are in FAISS, sorted."""
    rows = store.conn.execute("SELECT id FROM chunks WHERE vector_hash IS NOT NULL ORDER BY id").fetchall()
    return np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))


def in_sync(store: IndexStore, vectors: VectorStore) -> bool:
    if store.meta(REPLACED_UNSAVED) is not None:
        return False
    return bool(np.array_equal(np.sort(vectors.ids()), vector_ids(store)))


def rebuild_from_cache(store: IndexStore, vectors: VectorStore, fingerprint: str, repair: bool = True) -> int:
    """Refill FAISS from the embedding cache for every chunk marked as having a vector. With
    `repair`, chunks whose cached vector is gone go back to the pending queue (owner only)."""
    rows = store.conn.execute(
        "SELECT c.id, e.vector FROM chunks c JOIN embeddings e ON e.content_hash = c.vector_hash AND e.fingerprint = ?",
        (fingerprint,),
    ).fetchall()
    ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
    matrix = (
        np.stack([np.frombuffer(row[1], dtype=np.float32) for row in rows])
        if rows
        else np.empty((0, vectors.dims), dtype=np.float32)
    )
    if repair:
        store.conn.execute(
            "UPDATE chunks SET vector_hash = NULL WHERE vector_hash NOT IN "
            "(SELECT content_hash FROM embeddings WHERE fingerprint = ?)",
            (fingerprint,),
        )
        store.conn.commit()
    vectors.rebuild(ids, matrix)
    return len(ids)


def reset_for_fingerprint(store: IndexStore, fingerprint: str) -> bool:
    """Vectors of two fingerprints never mix: a new fingerprint marks every chunk pending."""
    if store.meta("fingerprint") == fingerprint:
        return False
    with store.conn:
        store.conn.execute("UPDATE chunks SET vector_hash = NULL")
        store.set_meta("fingerprint", fingerprint)
    return True


def pending_count(store: IndexStore) -> int:
    """Chunks the vector pass has work for: no vector, or a stale one."""
    return int(store.conn.execute("SELECT count(*) FROM chunks WHERE vector_hash IS NOT content_hash").fetchone()[0])


@dataclass
class EmbeddedBatch:
    """Vectors for a batch of pending chunks, computed without touching the index."""

    rows: list[tuple[int, str]]  # (chunk id, content hash) as read
    vectors: dict[str, np.ndarray]  # content hash -> vector
    fresh: list[str]  # hashes the model embedded (the others came from the cache)


def embed_batch(
    store: IndexStore, embedder: Embedder, fingerprint: str, limit: int, exclude: frozenset[int] = frozenset()
) -> EmbeddedBatch | None:
    """Read up to `limit` pending chunks and embed those the cache does not know. Only reads."""
    rows = [row for row in _pending(store, limit + len(exclude)) if row[0] not in exclude][:limit]
    if not rows:
        return None
    cached = _cached(store, fingerprint, sorted({row[1] for row in rows}))
    texts = {h: t for _, h, t in rows if h not in cached}
    if texts:
        cached.update(zip(texts.keys(), embedder.embed_documents(list(texts.values())), strict=True))
    return EmbeddedBatch([(r[0], r[1]) for r in rows], cached, list(texts))


def store_batch(store: IndexStore, vectors: VectorStore, fingerprint: str, batch: EmbeddedBatch) -> int:
    """Record a batch: cache rows, `vector_hash`, FAISS (a stale vector is removed, then the new
    one added). A chunk that changed or vanished since it was read is left alone. Returns how many
    chunks got their vector."""
    with store.conn:
        store.conn.executemany(
            "INSERT OR IGNORE INTO embeddings(fingerprint, content_hash, vector) VALUES (?, ?, ?)",
            [(fingerprint, h, np.asarray(batch.vectors[h], dtype=np.float32).tobytes()) for h in batch.fresh],
        )
        done, replaced = _mark_stored(store, batch.rows)
    vectors.remove(replaced)
    if done:
        vectors.add(np.array([d[0] for d in done], dtype=np.int64), np.stack([batch.vectors[d[1]] for d in done]))
    return len(done)


def _mark_stored(store: IndexStore, rows: list[tuple[int, str]]) -> tuple[list[tuple[int, str]], list[int]]:
    """Set `vector_hash` of the chunks still as they were read; returns them and the ids among them
    whose stale vector FAISS must drop first."""
    done: list[tuple[int, str]] = []
    replaced: list[int] = []
    for chunk_id, h in rows:
        row = store.conn.execute(
            "SELECT vector_hash FROM chunks WHERE id = ? AND content_hash = ? AND vector_hash IS NOT content_hash",
            (chunk_id, h),
        ).fetchone()
        if row is None:
            continue
        store.conn.execute("UPDATE chunks SET vector_hash = content_hash WHERE id = ?", (chunk_id,))
        done.append((chunk_id, h))
        if row[0] is not None:
            replaced.append(chunk_id)
    if replaced:
        store.set_meta(REPLACED_UNSAVED, "1")
    return done, replaced


def embed_pending(
    store: IndexStore, vectors: VectorStore, embedder: Embedder, fingerprint: str, faiss_path: Path, progress: Progress
) -> tuple[int, int]:
    """Give every pending chunk a vector. Returns (chunks embedded by the model, reused from cache)."""
    total = pending_count(store)
    embedded = reused = batches = 0
    if total:
        progress("vectors", 0, total)  # the bar appears at once, and the first batch is timed too
    while (batch := embed_batch(store, embedder, fingerprint, EMBED_BATCH)) is not None:
        store_batch(store, vectors, fingerprint, batch)
        embedded += len(batch.fresh)
        reused += len(batch.rows) - len(batch.fresh)
        batches += 1
        if batches % SAVE_EVERY_BATCHES == 0:
            vectors.save(faiss_path)
        progress("vectors", embedded + reused, total)
    finish(store, vectors, fingerprint, faiss_path)
    return embedded, reused


def finish(store: IndexStore, vectors: VectorStore, fingerprint: str, faiss_path: Path) -> None:
    """Retype the index if it outgrew flat search, then persist it: FAISS on disk now agrees with
    SQLite, replaced vectors included."""
    if vectors.needs_retype():
        rebuild_from_cache(store, vectors, fingerprint)
    vectors.save(faiss_path)
    if store.meta(REPLACED_UNSAVED) is not None:
        with store.conn:
            store.conn.execute("DELETE FROM meta WHERE key = ?", (REPLACED_UNSAVED,))


def _pending(store: IndexStore, limit: int) -> list[tuple[int, str, str]]:
    rows = store.conn.execute(
        "SELECT c.id, c.content_hash, c.text, c.heading_path, f.title, f.frontmatter, f.path "
        # Newest first: what was just written is what people search for next.
        "FROM chunks c JOIN files f ON f.id = c.file_id WHERE c.vector_hash IS NOT c.content_hash "
        "ORDER BY c.id DESC LIMIT ?",
        (limit,),
    ).fetchall()
    out = []
    for row in rows:
        context = title_context(row["title"], json.loads(row["frontmatter"]), row["path"])
        out.append((row["id"], row["content_hash"], embed_text(context, json.loads(row["heading_path"]), row["text"])))
    return out


def _cached(store: IndexStore, fingerprint: str, hashes: list[str]) -> dict[str, np.ndarray]:
    marks = ",".join("?" * len(hashes))
    rows = store.conn.execute(
        f"SELECT content_hash, vector FROM embeddings WHERE fingerprint = ? AND content_hash IN ({marks})",
        [fingerprint, *hashes],
    ).fetchall()
    return {row[0]: np.frombuffer(row[1], dtype=np.float32) for row in rows}
