"""The session plane's own index: `<state>/sessions.sqlite`, apart from durable memory.

Transcripts under `logs/sessions/` are indexed here, one row per message with its exact line range,
so recall can point at the turn that said something and raw transcripts never leak into durable
answers. Ranking is BM25 over the message text, nudged towards recent sessions: between two equally
good matches the newer one wins, but recency never lifts a weak match over a strong one by much.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from pathlib import Path

from dory.index import db
from dory.search.query import fts_match, parse_query
from dory.sessions.transcript import Session

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    session_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    device TEXT NOT NULL,
    title TEXT NOT NULL,
    status TEXT NOT NULL,
    started TEXT,
    updated TEXT,
    message_count INTEGER NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_sid ON sessions(session_id);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_row INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    message_id TEXT NOT NULL,
    role TEXT NOT NULL,
    kind TEXT NOT NULL,
    time TEXT,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_session ON messages(session_row);
"""
# How much a brand-new session is favoured over an old one with the same BM25 score, and how fast
# that favour fades (halves every RECENCY_HALF_LIFE_DAYS).
RECENCY_WEIGHT = 0.5
RECENCY_HALF_LIFE_DAYS = 14.0
# BM25 candidates read before the recency nudge re-orders them.
CANDIDATES_PER_HIT = 5


@dataclass(frozen=True)
class SessionScope:
    agent: str | None = None
    device: str | None = None
    session_id: str | None = None
    status: str | None = None
    since: str | None = None  # YYYY-MM-DD, compared with the session's last update
    until: str | None = None


@dataclass(frozen=True)
class SessionHit:
    path: str
    session_id: str
    agent: str
    title: str
    message_id: str
    role: str
    time: str | None
    start_line: int
    end_line: int
    text: str
    score: float


class SessionStore:
    def __init__(self, path: Path, tokenizer: str, readonly: bool = False) -> None:
        self.conn = db.connect(path, readonly=readonly)
        if not readonly:
            with self.conn:
                self.conn.executescript(SCHEMA)
                self.conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(text, title, "
                                  f"tokenize = '{tokenizer}')")

    def close(self) -> None:
        self.conn.close()

    def counts(self) -> dict[str, int]:
        row = self.conn.execute("SELECT (SELECT count(*) FROM sessions), (SELECT count(*) FROM messages)").fetchone()
        return {"sessions": row[0], "messages": row[1]}

    def indexed(self) -> dict[str, tuple[int, int, str]]:
        """{path: (size, mtime_ns, sha256)} of every indexed transcript."""
        rows = self.conn.execute("SELECT path, size, mtime_ns, sha256 FROM sessions")
        return {row[0]: (row[1], row[2], row[3]) for row in rows}

    def upsert(self, rel: str, session: Session, size: int, mtime_ns: int, sha256: str) -> None:
        """Replace a transcript's rows (the caller owns the transaction)."""
        self.delete(rel)
        row = self.conn.execute(
            "INSERT INTO sessions(path, session_id, agent, device, title, status, started, updated, message_count, "
            "size, mtime_ns, sha256) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (rel, session.session_id, session.agent, session.device, session.title, session.status, session.started,
             session.updated, len(session.messages), size, mtime_ns, sha256),
        ).lastrowid
        for ordinal, message in enumerate(session.messages):
            message_row = self.conn.execute(
                "INSERT INTO messages(session_row, ordinal, message_id, role, kind, time, start_line, end_line, text) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (row, ordinal, message.id, message.role, message.kind, message.time, message.start_line,
                 message.end_line, message.text),
            ).lastrowid
            self.conn.execute("INSERT INTO messages_fts(rowid, text, title) VALUES (?, ?, ?)",
                              (message_row, message.text, session.title))

    def delete(self, rel: str) -> None:
        row = self.conn.execute("SELECT id FROM sessions WHERE path = ?", (rel,)).fetchone()
        if row is None:
            return
        self.conn.execute("DELETE FROM messages_fts WHERE rowid IN (SELECT id FROM messages WHERE session_row = ?)",
                          (row[0],))
        self.conn.execute("DELETE FROM sessions WHERE id = ?", (row[0],))

    def search(self, query: str, scope: SessionScope, limit: int, now: dt.datetime | None = None) -> list[SessionHit]:
        match = fts_match(parse_query(query))
        if match is None:
            return []
        where, params = _scope_sql(scope)
        rows = self.conn.execute(
            "SELECT s.path, s.session_id, s.agent, s.title, s.updated, m.message_id, m.role, m.time, m.start_line, "
            "m.end_line, m.text, bm25(messages_fts, 1.0, 0.5) AS rank FROM messages_fts "
            "JOIN messages m ON m.id = messages_fts.rowid JOIN sessions s ON s.id = m.session_row "
            f"WHERE messages_fts MATCH ? AND {where} ORDER BY rank LIMIT ?",
            (match, *params, limit * CANDIDATES_PER_HIT),
        ).fetchall()
        now = now or dt.datetime.now(dt.UTC)
        hits = [SessionHit(r["path"], r["session_id"], r["agent"], r["title"], r["message_id"], r["role"], r["time"],
                           r["start_line"], r["end_line"], r["text"],
                           -r["rank"] * (1 + RECENCY_WEIGHT * _freshness(r["time"] or r["updated"], now)))
                for r in rows]
        hits.sort(key=lambda hit: -hit.score)
        return hits[:limit]


def _freshness(stamp: str | None, now: dt.datetime) -> float:
    """1 for now, halving every RECENCY_HALF_LIFE_DAYS; 0 for an unknown time."""
    if not stamp:
        return 0.0
    try:
        then = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    if then.tzinfo is None:
        then = then.replace(tzinfo=dt.UTC)
    age_days = max((now - then).total_seconds() / 86400, 0.0)
    return math.pow(0.5, age_days / RECENCY_HALF_LIFE_DAYS)


def _scope_sql(scope: SessionScope) -> tuple[str, list[str]]:
    clauses, params = ["1 = 1"], []
    for column, value in (("s.agent", scope.agent), ("s.device", scope.device), ("s.session_id", scope.session_id),
                          ("s.status", scope.status)):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    if scope.since:
        clauses.append("substr(s.updated, 1, 10) >= ?")
        params.append(scope.since)
    if scope.until:
        clauses.append("substr(s.started, 1, 10) <= ?")
        params.append(scope.until)
    return " AND ".join(clauses), params

