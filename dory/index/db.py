"""The SQLite side of the index: connection settings, schema and its migrations.

One file (`<state>/index.sqlite`) in WAL mode so readers never block the writer. The schema version
lives in `PRAGMA user_version`; each migration is applied once, in order, inside a transaction.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from dory.errors import (
    BackendUnavailable,
    DiskFull,
    DoryError,
    IndexLocked,
    ReadOnlyStorage,
    StorageError,
    storage_error,
)

BUSY_TIMEOUT_MS = 10_000


def _schema_v1(tokenizer: str) -> str:
    return f"""
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    title TEXT NOT NULL,
    doc_type TEXT,
    status TEXT,
    canonical INTEGER NOT NULL DEFAULT 0,
    source_kind TEXT,
    tags TEXT NOT NULL DEFAULT '[]',
    aliases TEXT NOT NULL DEFAULT '[]',
    doc_date TEXT,
    frontmatter TEXT NOT NULL DEFAULT '{{}}',
    frontmatter_error TEXT,
    line_count INTEGER NOT NULL,
    indexed_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS files_sha ON files(sha256);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    heading_path TEXT NOT NULL,
    text TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    has_vector INTEGER NOT NULL DEFAULT 0,
    UNIQUE (file_id, ordinal)
);
CREATE INDEX IF NOT EXISTS chunks_pending ON chunks(has_vector) WHERE has_vector = 0;
CREATE INDEX IF NOT EXISTS chunks_hash ON chunks(content_hash);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    title, aliases, headings, path, body,
    tokenize = '{tokenizer}'
);
CREATE TABLE IF NOT EXISTS embeddings (
    fingerprint TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (fingerprint, content_hash)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS skipped (
    path TEXT PRIMARY KEY,
    size INTEGER,
    mtime_ns INTEGER,
    reason TEXT NOT NULL,
    detail TEXT NOT NULL,
    seen_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


TRIGRAM_TABLE = "CREATE VIRTUAL TABLE IF NOT EXISTS chunks_tri USING fts5(body, tokenize = 'trigram')"


def _chunk_ids_never_reused(tokenizer: str) -> str:
    """v2: chunk ids come from AUTOINCREMENT. A plain rowid reuses the largest id after a delete,
    and a reader holding a FAISS file saved a moment earlier would map the deleted chunk's vector
    onto the new chunk."""
    return """
CREATE TABLE chunks_v2 (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    heading_path TEXT NOT NULL,
    text TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    has_vector INTEGER NOT NULL DEFAULT 0,
    UNIQUE (file_id, ordinal)
);
INSERT INTO chunks_v2 SELECT * FROM chunks;
DROP TABLE chunks;
ALTER TABLE chunks_v2 RENAME TO chunks;
CREATE INDEX chunks_pending ON chunks(has_vector) WHERE has_vector = 0;
CREATE INDEX chunks_hash ON chunks(content_hash);
"""


def _links_and_claims(tokenizer: str) -> str:
    """v3: the link graph and the claim store, both derived from notes by the indexer. Rows hang
    off their file row, so re-indexing or deleting a note replaces or removes them. Clearing the
    chunker mark makes the next reindex re-read every note, filling the new tables."""
    return """
CREATE TABLE links (
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    target_key TEXT NOT NULL,
    heading TEXT,
    label TEXT,
    line INTEGER NOT NULL
);
CREATE INDEX links_file ON links(file_id);
CREATE INDEX links_key ON links(target_key);
CREATE TABLE link_names (
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    kind TEXT NOT NULL
);
CREATE INDEX link_names_file ON link_names(file_id);
CREATE INDEX link_names_name ON link_names(name);
CREATE TABLE claim_events (
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    claim_id TEXT NOT NULL,
    entity TEXT NOT NULL,
    kind TEXT NOT NULL,
    event TEXT NOT NULL,
    statement TEXT NOT NULL,
    reason TEXT,
    agent TEXT,
    at TEXT NOT NULL,
    ends TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX claim_events_file ON claim_events(file_id);
CREATE INDEX claim_events_entity ON claim_events(entity);
CREATE TABLE claims (
    claim_id TEXT PRIMARY KEY,
    entity TEXT NOT NULL,
    kind TEXT NOT NULL,
    statement TEXT NOT NULL,
    status TEXT NOT NULL,
    valid_from TEXT NOT NULL,
    valid_to TEXT,
    ended_by TEXT,
    evidence TEXT NOT NULL
);
CREATE INDEX claims_entity ON claims(entity, status);
DELETE FROM meta WHERE key = 'chunker'
"""


def _vectors_keyed_by_input(tokenizer: str) -> str:
    """v4: `chunks.vector_hash` names the embedded input (title context, heading path and text, as
    `content_hash` does) that the chunk's FAISS vector was computed from; NULL when it has none. It
    replaces the `has_vector` flag, which could not tell a vector computed from an input that has
    since changed (a rename that changes the title context keeps the chunk rows). Clearing the
    chunker mark re-reads every note, so a hash a rename left stale before this version is redone."""
    return """
ALTER TABLE chunks ADD COLUMN vector_hash TEXT;
UPDATE chunks SET vector_hash = content_hash WHERE has_vector = 1;
DROP INDEX chunks_pending;
ALTER TABLE chunks DROP COLUMN has_vector;
CREATE INDEX chunks_pending ON chunks(id) WHERE vector_hash IS NOT content_hash;
DELETE FROM meta WHERE key = 'chunker'
"""


MIGRATIONS = (_schema_v1, _chunk_ids_never_reused, _links_and_claims, _vectors_keyed_by_input)
SCHEMA_VERSION = len(MIGRATIONS)


def storage_problem(exc: sqlite3.Error | OSError, path: Path) -> DoryError:
    """The real cause of a failure to open or write a database: a lock held by another process, a
    read-only or full disk, missing permissions; each with its own code (never all `index_locked`)."""
    if isinstance(exc, OSError):
        return storage_error(exc, str(path))
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return IndexLocked(f"{path} stayed locked by another process: {exc}")
    if "readonly" in text or "read-only" in text:
        return ReadOnlyStorage(
            f"{path} cannot be written ({exc}); is the disk or the folder read-only?", path=str(path)
        )
    if "disk is full" in text:
        return DiskFull(f"{path} cannot be written ({exc}); free some disk space", path=str(path))
    if "unable to open" in text:
        return StorageError(f"{path} cannot be opened ({exc}); check the folder exists and is writable", path=str(path))
    return BackendUnavailable(f"{path}: {exc}")


def connect(path: Path, readonly: bool = False) -> sqlite3.Connection:
    """Open the index database; read-only connections never create or migrate it."""
    try:
        return _connect(path, readonly)
    except (sqlite3.OperationalError, OSError) as exc:
        raise storage_problem(exc, path) from exc


def _connect(path: Path, readonly: bool) -> sqlite3.Connection:
    if readonly:
        uri = f"file:{path}?mode=ro"
        conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    if not readonly:
        _wal(conn, path)
        conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def _wal(conn: sqlite3.Connection, path: Path) -> None:
    """Switch to WAL. SQLite does not apply the busy timeout to this switch, so a database another
    process is creating at the same moment is waited for here, as long as any other lock."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                conn.close()
                raise storage_problem(exc, path) from exc
            time.sleep(0.05)


def migrate(conn: sqlite3.Connection, tokenizer: str) -> None:
    """Bring the schema to SCHEMA_VERSION, one migration per immediate transaction. The version is
    re-read under the write lock, so two processes opening an old (or new) index at the same moment
    apply each migration once."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise BackendUnavailable(
            f"index schema {version} is newer than this Dory ({SCHEMA_VERSION}); "
            "upgrade Dory or delete the .dory folder and run `dory reindex --full`"
        )
    for number in range(version, SCHEMA_VERSION):
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise storage_problem(exc, Path(conn_path(conn))) from exc
        try:
            if conn.execute("PRAGMA user_version").fetchone()[0] == number:
                for statement in MIGRATIONS[number](tokenizer).split(";\n"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number + 1}")
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:  # SQLite may have rolled back already (a full disk does)
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.OperationalError):
                raise storage_problem(exc, Path(conn_path(conn))) from exc
            raise


def conn_path(conn: sqlite3.Connection) -> str:
    """The file behind a connection (for messages)."""
    row = conn.execute("PRAGMA database_list").fetchone()
    return str(row[2]) if row is not None else "the index"


def get_meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else row[0]


def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value)
    )


def generation(conn: sqlite3.Connection) -> int:
    """The index generation: a counter the owner raises after each committed change of the index.
    A reader that sees generation N sees every change made up to it (see `bump_generation`)."""
    return int(get_meta(conn, "generation") or 0)


def bump_generation(conn: sqlite3.Connection) -> int:
    """Raise the generation, in its own transaction after the change it marks was committed, so the
    new number is never visible before the rows it stands for. Owner only (one writer)."""
    with conn:
        value = generation(conn) + 1
        set_meta(conn, "generation", str(value))
    return value
