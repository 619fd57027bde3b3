"""Receipts: which write requests were applied, and what they answered, so a retry is applied once.

A client that lost its answer (the daemon died mid-write, a deadline passed, a connection dropped)
sends the same request id again. The journal records the receipt after the files are written and
before it forgets the operation, and its crash recovery records the receipts of the operations it
rolls forward, so between the two there is no moment where a write is on disk but its receipt is
not. Receipts live in `<state>/receipts.sqlite`, beside the index and outside the corpus; a
receipt older than `KEEP_DAYS` is pruned (retries happen within minutes).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from dory.index import db
from dory.index.store import now_iso

KEEP_DAYS = 7
SCHEMA = """
CREATE TABLE IF NOT EXISTS receipts (
    request_id TEXT PRIMARY KEY,
    op TEXT NOT NULL,
    response TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS receipts_at ON receipts(at);
"""


class Receipts:
    def __init__(self, path: Path) -> None:
        self.path = path

    def _connect(self) -> sqlite3.Connection:
        conn = db.connect(self.path)
        conn.executescript(SCHEMA)
        return conn

    def get(self, request_id: str | None) -> dict[str, Any] | None:
        """The recorded answer to this request, or None if it was never applied."""
        if request_id is None or not self.path.exists():
            return None
        conn = self._connect()
        try:
            row = conn.execute("SELECT response FROM receipts WHERE request_id = ?", (request_id,)).fetchone()
        finally:
            conn.close()
        return None if row is None else dict(json.loads(row[0]))

    def record(self, request_id: str, op: str, response: dict[str, Any]) -> None:
        conn = self._connect()
        try:
            with conn:
                conn.execute(
                    "INSERT OR REPLACE INTO receipts (request_id, op, response, at) VALUES (?, ?, ?, ?)",
                    (request_id, op, json.dumps(response, default=str), now_iso()),
                )
                conn.execute(
                    "DELETE FROM receipts WHERE at < strftime('%Y-%m-%dT%H:%M:%SZ', 'now', ?)", (f"-{KEEP_DAYS} days",)
                )
        finally:
            conn.close()
