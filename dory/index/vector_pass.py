"""The vector pass: embed chunks that have no vector yet, reusing cached vectors by content hash.

FAISS and SQLite cannot share a transaction, so SQLite is the record: `chunks.has_vector` says
which chunks should be in FAISS and the `embeddings` table keeps every vector. When the FAISS file
disagrees with that record (a crash between the two writes, a deleted file), it is rebuilt from the
cache in seconds without embedding anything.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from dory.index.embedders.base import Embedder
from dory.index.indexer import Progress
from dory.index.store import IndexStore, embed_text, title_context
from dory.index.vectors import VectorStore

EMBED_BATCH = 128
SAVE_EVERY_BATCHES = 10


def vector_record(store: IndexStore) -> tuple[int, int]:
    row = store.conn.execute("SELECT count(*), coalesce(sum(id), 0) FROM chunks WHERE has_vector = 1").fetchone()
    return int(row[0]), int(row[1])


def in_sync(store: IndexStore, vectors: VectorStore) -> bool:
    ids = vectors.ids()
    return (len(ids), int(ids.sum()) if len(ids) else 0) == vector_record(store)


def rebuild_from_cache(store: IndexStore, vectors: VectorStore, fingerprint: str) -> int:
    """Refill FAISS from the embedding cache for every chunk marked as having a vector."""
    rows = store.conn.execute(
        "SELECT c.id, e.vector FROM chunks c JOIN embeddings e "
        "ON e.content_hash = c.content_hash AND e.fingerprint = ? WHERE c.has_vector = 1", (fingerprint,),
    ).fetchall()
    ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
    matrix = np.stack([np.frombuffer(row[1], dtype=np.float32) for row in rows]) if rows else \
        np.empty((0, vectors.dims), dtype=np.float32)
    with store.conn:
        # Chunks whose cached vector is gone go back to the pending queue.
        store.conn.execute(
            "UPDATE chunks SET has_vector = 0 WHERE has_vector = 1 AND content_hash NOT IN "
            "(SELECT content_hash FROM embeddings WHERE fingerprint = ?)", (fingerprint,),
        )
    vectors.rebuild(ids, matrix)
    return len(ids)


def reset_for_fingerprint(store: IndexStore, fingerprint: str) -> bool:
    """Vectors of two fingerprints never mix: a new fingerprint marks every chunk pending."""
    if store.meta("fingerprint") == fingerprint:
        return False
    with store.conn:
        store.conn.execute("UPDATE chunks SET has_vector = 0")
        store.set_meta("fingerprint", fingerprint)
    return True


def pending_count(store: IndexStore) -> int:
    return int(store.conn.execute("SELECT count(*) FROM chunks WHERE has_vector = 0").fetchone()[0])


def embed_pending(store: IndexStore, vectors: VectorStore, embedder: Embedder, fingerprint: str,
                  faiss_path: Path, progress: Progress) -> tuple[int, int]:
    """Give every pending chunk a vector. Returns (chunks embedded by the model, reused from cache)."""
    total = pending_count(store)
    embedded = reused = batches = 0
    while True:
        rows = _pending(store, EMBED_BATCH)
        if not rows:
            break
        hashes = sorted({row[1] for row in rows})
        cached = _cached(store, fingerprint, hashes)
        texts = {h: t for _, h, t in rows if h not in cached}
        if texts:
            fresh = embedder.embed_documents(list(texts.values()))
            cached.update(zip(texts.keys(), fresh, strict=True))
            embedded += len(texts)
        reused += len(rows) - len(texts)
        with store.conn:
            store.conn.executemany(
                "INSERT OR IGNORE INTO embeddings(fingerprint, content_hash, vector) VALUES (?, ?, ?)",
                [(fingerprint, h, np.asarray(cached[h], dtype=np.float32).tobytes()) for h in texts],
            )
            store.conn.executemany("UPDATE chunks SET has_vector = 1 WHERE id = ?", [(r[0],) for r in rows])
        vectors.add(np.array([r[0] for r in rows], dtype=np.int64), np.stack([cached[r[1]] for r in rows]))
        batches += 1
        if batches % SAVE_EVERY_BATCHES == 0:
            vectors.save(faiss_path)
        progress("vectors", embedded + reused, total)
    if vectors.needs_retype():
        rebuild_from_cache(store, vectors, fingerprint)
    vectors.save(faiss_path)
    return embedded, reused


def _pending(store: IndexStore, limit: int) -> list[tuple[int, str, str]]:
    rows = store.conn.execute(
        "SELECT c.id, c.content_hash, c.text, c.heading_path, f.title, f.frontmatter, f.path "
        "FROM chunks c JOIN files f ON f.id = c.file_id WHERE c.has_vector = 0 LIMIT ?", (limit,),
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
