"""Schema migrations keep what an older index knows and redo what it cannot vouch for."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from dory.index import db

TOKENIZER = "porter unicode61"


def schema_3_index(path: Path) -> None:
    """An index as Dory wrote it before vectors were keyed by their input (schema 3)."""
    conn = sqlite3.connect(path)
    for migration in db.MIGRATIONS[:3]:
        conn.executescript(migration(TOKENIZER))
    conn.execute("PRAGMA user_version = 3")
    conn.execute(
        "INSERT INTO files(id, path, size, mtime_ns, sha256, title, line_count, indexed_at) "
        "VALUES (1, 'a.md', 10, 1, 'sha256:x', 'A', 3, '2026-01-01T00:00:00Z')"
    )
    conn.executemany(
        "INSERT INTO chunks(id, file_id, ordinal, start_line, end_line, heading_path, text, tokens, content_hash, "
        "has_vector) VALUES (?, 1, ?, 1, 1, '[]', 'text', 1, ?, ?)",
        [(5, 0, "h-embedded", 1), (6, 1, "h-waiting", 0), (9, 2, "h-deleted", 1)],
    )
    conn.execute("DELETE FROM chunks WHERE id = 9")
    conn.execute("INSERT INTO meta(key, value) VALUES ('chunker', 'v1:approx:400:50')")
    conn.commit()
    conn.close()


def test_schema_3_index_keeps_its_vectors_ids_and_re_reads_every_note(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    schema_3_index(path)
    conn = db.connect(path)
    db.migrate(conn, TOKENIZER)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == db.SCHEMA_VERSION == 4
    rows = conn.execute("SELECT id, content_hash, vector_hash FROM chunks ORDER BY id").fetchall()
    assert [tuple(row) for row in rows] == [(5, "h-embedded", "h-embedded"), (6, "h-waiting", None)]
    assert "has_vector" not in {row[1] for row in conn.execute("PRAGMA table_info(chunks)")}
    # Ids are never reused, so a FAISS file saved earlier cannot lend chunk 9's vector to a new chunk.
    assert conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'chunks'").fetchone()[0] == 9
    # A rename before schema 4 may have left a hash stale: the next reindex re-reads every note.
    assert db.get_meta(conn, "chunker") is None
    conn.close()
