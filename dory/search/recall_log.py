"""Recall events: which notes searches bring back, so dreaming can promote what agents keep needing.

Every durable search that returns hits records its top hits (path, line range, the normalised
query) in `<state>/recall.sqlite`. The log is history, not derived from the corpus, so it lives
apart from the index a reindex rebuilds. Recording never fails a search: a locked or broken log is
skipped. Dreaming asks for notes recalled by several *distinct* queries (one agent repeating one
question is not evidence that a note matters) and remembers what it already dreamed.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from dory.errors import DoryError
from dory.index import db
from dory.index.store import now_iso
from dory.models import SearchHit

TOP_HITS = 3
BUSY_MS = 250
SCHEMA = """
CREATE TABLE IF NOT EXISTS recall_events (
    id INTEGER PRIMARY KEY,
    query_key TEXT NOT NULL,
    query TEXT NOT NULL,
    path TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    rank INTEGER NOT NULL,
    at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS recall_path ON recall_events(path);
CREATE TABLE IF NOT EXISTS dreamed (path TEXT PRIMARY KEY, sha256 TEXT NOT NULL, at TEXT NOT NULL);
"""


@dataclass(frozen=True)
class Recalled:
    path: str
    queries: int  # distinct queries that returned it
    events: int
    start_line: int  # the passage recalled most often
    end_line: int
    samples: list[str]  # a few of the queries, as typed


def query_key(query: str) -> str:
    return " ".join(query.lower().split())


class RecallLog:
    """Opened on first use and kept open, so a long-running server logs each search with one insert."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = db.connect(self.path)
            conn.executescript(SCHEMA)
            conn.execute(f"PRAGMA busy_timeout = {BUSY_MS}")  # a search never waits long for the log
            self._conn = conn
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def record(self, query: str, hits: list[SearchHit]) -> None:
        rows = [
            (query_key(query), query[:500], h.path, h.start_line, h.end_line, rank, now_iso())
            for rank, h in enumerate(hits[:TOP_HITS], start=1)
            if h.turn is None
        ]
        with self.conn:
            self.conn.executemany(
                "INSERT INTO recall_events(query_key, query, path, start_line, end_line, rank, at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                rows,
            )

    def frequent(self, min_queries: int, limit: int = 20) -> list[Recalled]:
        """Notes returned by at least `min_queries` distinct queries, most queries first."""
        rows = self.conn.execute(
            "SELECT path, count(DISTINCT query_key) AS queries, count(*) AS events FROM recall_events "
            "GROUP BY path HAVING queries >= ? ORDER BY queries DESC, events DESC, path LIMIT ?",
            (min_queries, limit),
        ).fetchall()
        return [self._recalled(row["path"], row["queries"], row["events"]) for row in rows]

    def _recalled(self, path: str, queries: int, events: int) -> Recalled:
        span = self.conn.execute(
            "SELECT start_line, end_line FROM recall_events WHERE path = ? GROUP BY start_line, end_line "
            "ORDER BY count(DISTINCT query_key) DESC, start_line LIMIT 1",
            (path,),
        ).fetchone()
        samples = [
            row[0]
            for row in self.conn.execute(
                "SELECT query FROM recall_events WHERE path = ? GROUP BY query_key ORDER BY min(at), query LIMIT 5",
                (path,),
            )
        ]
        return Recalled(path, queries, events, span[0], span[1], samples)

    # -- what dreaming already read ----------------------------------------------------------
    def dreamed(self, path: str, sha256: str) -> bool:
        row = self.conn.execute("SELECT sha256 FROM dreamed WHERE path = ?", (path,)).fetchone()
        return row is not None and row[0] == sha256

    def mark_dreamed(self, path: str, sha256: str) -> None:
        with self.conn:
            self.conn.execute(
                "INSERT INTO dreamed(path, sha256, at) VALUES (?, ?, ?) ON CONFLICT(path) DO UPDATE "
                "SET sha256 = excluded.sha256, at = excluded.at",
                (path, sha256, now_iso()),
            )


def record_quietly(log: RecallLog, query: str, hits: list[SearchHit]) -> None:
    """Record a search's hits; a busy or broken log never fails the search."""
    if not hits:
        return
    try:
        log.record(query, hits)
    except (sqlite3.Error, OSError, DoryError):
        log.close()  # opened again (and retried) on the next search
