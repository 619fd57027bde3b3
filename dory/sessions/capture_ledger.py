"""What capture remembers per harness transcript: `<state>/capture.sqlite` (disposable: deleting it
makes the next run read every transcript again, which adds nothing, since ingest is idempotent).

Per file: how far it was read (the end of its last complete line), where that line starts and its
hash (a different line there means the file was rewritten), where the next read starts parsing (the
message that may still grow), size and mtime (an unchanged file is not opened), and the status of
its sessions when last delivered (an `active` one is read once more when it goes quiet, to be
marked done). Also the shipping state: failed attempts in a row and when to try again.
"""

from __future__ import annotations

import sqlite3
from dataclasses import astuple, dataclass
from pathlib import Path

from dory.index import db

SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY,
    harness TEXT NOT NULL,
    consumed INTEGER NOT NULL,
    tail_start INTEGER NOT NULL,
    tail_hash TEXT NOT NULL,
    resume INTEGER NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    status TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS shipping (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    failures INTEGER NOT NULL,
    next_try REAL NOT NULL,
    last_error TEXT
);
"""


@dataclass(frozen=True)
class FileMark:
    path: str
    harness: str
    consumed: int  # bytes read: the end of the last complete line
    tail_start: int  # where that line starts
    tail_hash: str  # sha256 of that line
    resume: int  # where the next read starts parsing
    size: int
    mtime_ns: int
    status: str  # "active" while the file's session may still be going on


@dataclass(frozen=True)
class ShippingState:
    failures: int = 0
    next_try: float = 0.0  # epoch seconds
    last_error: str | None = None


class CaptureLedger:
    def __init__(self, path: Path, readonly: bool = False) -> None:
        self.conn = db.connect(path, readonly=readonly)
        if not readonly:
            with self.conn:
                self.conn.executescript(SCHEMA)

    @classmethod
    def open_existing(cls, path: Path) -> CaptureLedger | None:
        """A read-only ledger, or None when capture never ran (reading never creates files)."""
        return cls(path, readonly=True) if path.exists() else None

    def close(self) -> None:
        self.conn.close()

    def mark(self, path: str) -> FileMark | None:
        row = self.conn.execute("SELECT * FROM files WHERE path = ?", (path,)).fetchone()
        return None if row is None else FileMark(*row)

    def save(self, mark: FileMark) -> None:
        with self.conn:
            self.conn.execute("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", astuple(mark))

    def forget_missing(self) -> int:
        """Drop the marks of transcripts that are gone (Claude Code deletes old ones)."""
        gone = [row[0] for row in self.conn.execute("SELECT path FROM files") if not Path(row[0]).exists()]
        with self.conn:
            self.conn.executemany("DELETE FROM files WHERE path = ?", [(path,) for path in gone])
        return len(gone)

    def counts(self) -> dict[str, int]:
        """Transcripts followed, per harness."""
        try:
            rows = self.conn.execute("SELECT harness, count(*) FROM files GROUP BY harness").fetchall()
        except sqlite3.OperationalError:  # a read-only look before the first run made the tables
            return {}
        return {row[0]: row[1] for row in rows}

    def shipping(self) -> ShippingState:
        try:
            row = self.conn.execute("SELECT failures, next_try, last_error FROM shipping WHERE id = 1").fetchone()
        except sqlite3.OperationalError:
            return ShippingState()
        return ShippingState() if row is None else ShippingState(*row)

    def set_shipping(self, state: ShippingState) -> None:
        with self.conn:
            self.conn.execute(
                "INSERT OR REPLACE INTO shipping VALUES (1, ?, ?, ?)",
                (state.failures, state.next_try, state.last_error),
            )
