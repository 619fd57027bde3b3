"""Receipts: which write requests were applied, and what they answered, so a retry is applied once.

A client that lost its answer (the daemon died mid-write, a deadline passed, a connection dropped)
sends the same request id again. The journal records the receipt after the files are written and
before it forgets the operation, and its crash recovery records the receipts of the operations it
rolls forward, so between the two there is no moment where a write is on disk but its receipt is
not. Receipts live in `<state>/receipts.sqlite`, beside the index and outside the corpus; a
receipt older than `KEEP_DAYS` is pruned (retries happen within minutes).

A request id the caller chose is bound to the request it was first sent with (a fingerprint of the
operation): the same id sent with another request is refused, never answered with the first
request's receipt.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from dory.errors import IdempotencyKeyReused
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
CREATE TABLE IF NOT EXISTS requests (
    request_id TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS requests_at ON requests(at);
"""
PRUNE = "DELETE FROM {table} WHERE at < strftime('%Y-%m-%dT%H:%M:%SZ', 'now', ?)"


class Receipts:
    def __init__(self, path: Path) -> None:
        self.path = path

    def _connect(self) -> sqlite3.Connection:
        conn = db.connect(self.path)
        conn.executescript(SCHEMA)
        return conn

    def bind(self, request_id: str, fingerprint: str) -> None:
        """Tie `request_id` to the request it is first sent with (before that request is applied, so
        a failed attempt binds it too: a retry repeats the request, it does not change it). Raises
        IdempotencyKeyReused when the id is already tied to another request."""
        conn = self._connect()
        try:
            with conn:
                conn.execute(
                    "INSERT OR IGNORE INTO requests (request_id, fingerprint, at) VALUES (?, ?, ?)",
                    (request_id, fingerprint, now_iso()),
                )
                bound = conn.execute("SELECT fingerprint FROM requests WHERE request_id = ?", (request_id,)).fetchone()
        finally:
            conn.close()
        if bound[0] != fingerprint:
            raise IdempotencyKeyReused(
                f"the request id {request_id!r} was already used for another request; "
                "a retry must send the same request, and a new request needs a new id",
                request_id=request_id,
            )

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
                for table in ("receipts", "requests"):
                    conn.execute(PRUNE.format(table=table), (f"-{KEEP_DAYS} days",))
        finally:
            conn.close()
