"""The session plane's own index: `<state>/sessions.sqlite`, apart from durable memory.

Transcripts under `logs/sessions/` are indexed here, one row per message with its exact line range,
so recall can point at the turn that said something and raw transcripts never leak into durable
answers. Ranking is BM25 over the message text, nudged towards recent sessions: between two equally
good matches the newer one wins, but recency never lifts a weak match over a strong one by much.

Longer than ~400 lines: every SQL statement of the session plane lives here on purpose (as
index/store.py does for durable memory), so the schema has one reader and one writer.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dory.index import db
from dory.search.query import fts_match, parse_query
from dory.sessions.transcript import Session
from dory.sessions.turn_text import turn_texts

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
    date TEXT,
    header TEXT NOT NULL DEFAULT '',
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
    text TEXT NOT NULL,
    embed_text TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    weight REAL NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS messages_session ON messages(session_row);
CREATE INDEX IF NOT EXISTS messages_hash ON messages(text_hash);
CREATE INDEX IF NOT EXISTS messages_mid ON messages(message_id);
CREATE TABLE IF NOT EXISTS embeddings (
    text_hash TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (text_hash, fingerprint)
);
"""
# The frontmatter key holding agents' weights for messages (`dory context mark`).
WEIGHTS_KEY = "weights"
# `date` is when the session took place (Session.date); `header` the opening of a foreign-layout
# transcript (title, date line), kept as metadata and never indexed as a turn. A turn's `text` is its
# own words; `embed_text` is what is embedded (turn_text.py), and `text_hash` is the hash of that,
# the key of the vector cache.
# The session index is disposable: a file of another version is rebuilt from the transcripts.
SCHEMA_VERSION = 4
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
    path: str | None = None  # a glob over transcript paths; a trailing "/" means everything below


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
    row: int = -1  # the turn's row in this index (for fusion), not stable across rebuilds


class SessionStore:
    def __init__(self, path: Path, tokenizer: str, readonly: bool = False) -> None:
        self.conn = db.connect(path, readonly=readonly)
        self._matrix: tuple[tuple[int, int, int, str], np.ndarray, np.ndarray] | None = None
        if not readonly:
            with self.conn:
                if self.conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                    for table in ("messages_fts", "embeddings", "messages", "sessions"):
                        self.conn.execute(f"DROP TABLE IF EXISTS {table}")
                self.conn.executescript(SCHEMA)
                # A turn's words and its session's day (turn_text.py); a hit points at the turn's own lines.
                self.conn.execute(
                    f"CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(text, tokenize = '{tokenizer}')"
                )
                self.conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

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
        weights = parse_weights(session.extra.get(WEIGHTS_KEY))
        self.delete(rel)
        row = self.conn.execute(
            "INSERT INTO sessions(path, session_id, agent, device, title, status, started, updated, date, header, "
            "message_count, size, mtime_ns, sha256) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                rel,
                session.session_id,
                session.agent,
                session.device,
                session.title,
                session.status,
                session.started,
                session.updated,
                session.date(),
                session.header,
                len(session.turns()),
                size,
                mtime_ns,
                sha256,
            ),
        ).lastrowid
        for ordinal, (message, indexed) in enumerate(zip(session.turns(), turn_texts(session), strict=True)):
            message_row = self.conn.execute(
                "INSERT INTO messages(session_row, ordinal, message_id, role, kind, time, start_line, end_line, text, "
                "embed_text, text_hash, weight) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    row,
                    ordinal,
                    message.id,
                    message.role,
                    message.kind,
                    message.time,
                    message.start_line,
                    message.end_line,
                    message.text,
                    indexed.embedded,
                    text_hash(indexed.embedded),
                    weights.get(message.id, 0.0),
                ),
            ).lastrowid
            self.conn.execute("INSERT INTO messages_fts(rowid, text) VALUES (?, ?)", (message_row, indexed.lexical))

    def delete(self, rel: str) -> None:
        row = self.conn.execute("SELECT id FROM sessions WHERE path = ?", (rel,)).fetchone()
        if row is None:
            return
        self.conn.execute(
            "DELETE FROM messages_fts WHERE rowid IN (SELECT id FROM messages WHERE session_row = ?)", (row[0],)
        )
        self.conn.execute("DELETE FROM sessions WHERE id = ?", (row[0],))

    def sessions(
        self, agent: str | None, status: str | None, since: str | None, include_deleted: bool, limit: int
    ) -> tuple[list[sqlite3.Row], int]:
        """Sessions newest first (path, session_id, agent, device, title, status, started, updated,
        message_count, date) and how many match in all."""
        clauses, params = ["1 = 1"], []
        for column, value in (("agent", agent), ("status", status)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if not include_deleted and status != "deleted":
            clauses.append("status != 'deleted'")
        if since:
            clauses.append("substr(coalesce(updated, started, ''), 1, 10) >= ?")
            params.append(since)
        where = " AND ".join(clauses)
        total = self.conn.execute(f"SELECT count(*) FROM sessions WHERE {where}", params).fetchone()[0]
        rows = self.conn.execute(
            "SELECT path, session_id, agent, device, title, status, started, updated, message_count, date "
            f"FROM sessions WHERE {where} ORDER BY coalesce(updated, started, '') DESC, path LIMIT ?",
            (*params, limit),
        ).fetchall()
        return rows, total

    def overlapping(self, first_day: str, last_day: str) -> list[sqlite3.Row]:
        """Sessions (not deleted) active at some point between two UTC days (YYYY-MM-DD, inclusive):
        started on or before the last and last updated on or after the first. (path, session_id,
        agent, status, started, updated), by path."""
        return self.conn.execute(
            "SELECT path, session_id, agent, status, started, updated FROM sessions WHERE status != 'deleted' "
            "AND substr(coalesce(started, updated, ''), 1, 10) <= ? "
            "AND substr(coalesce(updated, started, ''), 1, 10) >= ? "
            "ORDER BY path",
            (last_day, first_day),
        ).fetchall()

    def turn_ids_between(self, first: str, last: str) -> list[str]:
        """Ids of the turns (sessions not deleted) whose time, or without one the session's last
        update, lies in [first, last): UTC, `YYYY-MM-DDTHH:MM:SS`."""
        moment = "substr(coalesce(m.time, s.updated, s.started, ''), 1, 19)"
        rows = self.conn.execute(
            f"SELECT m.message_id FROM messages m JOIN sessions s ON s.id = m.session_row "
            f"WHERE s.status != 'deleted' AND {moment} >= ? AND {moment} < ? ORDER BY m.message_id",
            (first, last),
        )
        return [row[0] for row in rows]

    def changed_since(self, mtime_ns: int) -> bool:
        """Whether some transcript was last written after `mtime_ns` (as indexed)."""
        return (
            self.conn.execute("SELECT 1 FROM sessions WHERE mtime_ns > ? LIMIT 1", (mtime_ns,)).fetchone() is not None
        )

    def find(self, ident: str, prefix: bool) -> list[tuple[str, str]]:
        """(path, session_id) of the sessions with this id, or (prefix) whose id starts with it."""
        if not prefix:
            rows = self.conn.execute(
                "SELECT path, session_id FROM sessions WHERE session_id = ? ORDER BY path", (ident,)
            )
        else:
            pattern = ident.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            rows = self.conn.execute(
                "SELECT path, session_id FROM sessions WHERE session_id LIKE ? ESCAPE '\\' ORDER BY session_id LIMIT 6",
                (pattern,),
            )
        return [(row[0], row[1]) for row in rows]

    def paths_holding(self, message_id: str, path: str | None = None) -> list[str]:
        """The transcripts holding a message id (narrowed to `path` when given)."""
        sql = "SELECT DISTINCT s.path FROM messages m JOIN sessions s ON s.id = m.session_row WHERE m.message_id = ?"
        params = [message_id]
        if path is not None:
            sql += " AND s.path = ?"
            params.append(path)
        return [row[0] for row in self.conn.execute(sql + " ORDER BY s.path", params)]

    def recent(self, status: str, limit: int) -> list[tuple[str, str, str, str | None]]:
        """(path, title, agent, updated) of the newest sessions with this status."""
        rows = self.conn.execute(
            "SELECT path, title, agent, updated FROM sessions WHERE status = ? "
            "ORDER BY coalesce(updated, started, '') DESC, path LIMIT ?",
            (status, limit),
        )
        return [(row[0], row[1], row[2], row[3]) for row in rows]

    # -- lexical -----------------------------------------------------------------------------
    def search(self, query: str, scope: SessionScope, limit: int, now: dt.datetime | None = None) -> list[SessionHit]:
        """Turns by BM25 with the recency nudge."""
        return self.hits([(row, score) for row, score in self.lexical(query, scope, limit, now)])

    def lexical(
        self, query: str, scope: SessionScope, limit: int, now: dt.datetime | None = None
    ) -> list[tuple[int, float]]:
        """(message row, score) best first."""
        match = fts_match(parse_query(query))
        if match is None:
            return []
        where, params = _scope_sql(scope)
        rows = self.conn.execute(
            "SELECT m.id, m.time, s.updated, bm25(messages_fts) AS rank FROM messages_fts "
            "JOIN messages m ON m.id = messages_fts.rowid JOIN sessions s ON s.id = m.session_row "
            f"WHERE messages_fts MATCH ? AND {where} ORDER BY rank LIMIT ?",
            (match, *params, limit * CANDIDATES_PER_HIT),
        ).fetchall()
        now = now or dt.datetime.now(dt.UTC)
        scored = [(r[0], -r[3] * (1 + RECENCY_WEIGHT * _freshness(r[1] or r[2], now))) for r in rows]
        scored.sort(key=lambda item: -item[1])
        return scored[:limit]

    def hits(self, ranked: list[tuple[int, float]]) -> list[SessionHit]:
        if not ranked:
            return []
        marks = ",".join("?" * len(ranked))
        rows = {
            r["id"]: r
            for r in self.conn.execute(
                "SELECT m.id, s.path, s.session_id, s.agent, s.title, m.message_id, m.role, m.time, m.start_line, "
                f"m.end_line, m.text FROM messages m JOIN sessions s ON s.id = m.session_row WHERE m.id IN ({marks})",
                [row for row, _ in ranked],
            )
        }
        return [
            SessionHit(
                r["path"],
                r["session_id"],
                r["agent"],
                r["title"],
                r["message_id"],
                r["role"],
                r["time"],
                r["start_line"],
                r["end_line"],
                r["text"],
                score,
                row,
            )
            for row, score in ranked
            if (r := rows.get(row)) is not None
        ]

    # -- vectors -----------------------------------------------------------------------------
    def pending_vectors(self, fingerprint: str, limit: int) -> list[tuple[str, str]]:
        """(text hash, text) of turns with no vector for this fingerprint yet."""
        rows = self.conn.execute(
            "SELECT text_hash, min(embed_text) FROM messages WHERE text_hash NOT IN "
            "(SELECT text_hash FROM embeddings WHERE fingerprint = ?) GROUP BY text_hash LIMIT ?",
            (fingerprint, limit),
        )
        return [(row[0], row[1]) for row in rows]

    def pending_count(self, fingerprint: str) -> int:
        count: int = self.conn.execute(
            "SELECT count(DISTINCT text_hash) FROM messages WHERE text_hash NOT IN "
            "(SELECT text_hash FROM embeddings WHERE fingerprint = ?)",
            (fingerprint,),
        ).fetchone()[0]
        return count

    def store_vectors(self, fingerprint: str, vectors: list[tuple[str, np.ndarray]]) -> None:
        with self.conn:
            self.conn.executemany(
                "INSERT OR REPLACE INTO embeddings(text_hash, fingerprint, vector) VALUES (?, ?, ?)",
                [(digest, fingerprint, np.asarray(vector, dtype=np.float32).tobytes()) for digest, vector in vectors],
            )

    def prune_vectors(self) -> int:
        """Drop cached vectors no turn uses any more."""
        with self.conn:
            return self.conn.execute(
                "DELETE FROM embeddings WHERE text_hash NOT IN (SELECT text_hash FROM messages)"
            ).rowcount

    def vector(self, query: np.ndarray, fingerprint: str, scope: SessionScope, limit: int) -> list[tuple[int, float]]:
        """(message row, cosine) of the nearest embedded turns in scope, best first."""
        ids, matrix = self._vectors(fingerprint)
        if not len(ids):
            return []
        scores = matrix @ np.asarray(query, dtype=np.float32)
        # Always filtered, even with no scope: the scope's SQL is also what hides deleted sessions.
        where, params = _scope_sql(scope)
        rows = self.conn.execute(
            f"SELECT m.id FROM messages m JOIN sessions s ON s.id = m.session_row WHERE {where}", params
        ).fetchall()
        keep = np.isin(ids, np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows)))
        ids, scores = ids[keep], scores[keep]
        top = np.argsort(-scores, kind="stable")[:limit]
        return [(int(ids[i]), float(scores[i])) for i in top]

    def _vectors(self, fingerprint: str) -> tuple[np.ndarray, np.ndarray]:
        """Every embedded turn's vector, read once and kept until the index changes."""
        row = self.conn.execute(
            "SELECT count(*), coalesce(max(id), 0), (SELECT count(*) FROM embeddings) FROM messages"
        ).fetchone()
        stamp = (row[0], row[1], row[2], fingerprint)
        if self._matrix is None or self._matrix[0] != stamp:
            rows = self.conn.execute(
                "SELECT m.id, e.vector FROM messages m JOIN embeddings e ON e.text_hash = m.text_hash "
                "AND e.fingerprint = ? ORDER BY m.id",
                (fingerprint,),
            ).fetchall()
            ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
            matrix = (
                np.stack([np.frombuffer(row[1], dtype=np.float32) for row in rows])
                if rows
                else np.empty((0, 0), dtype=np.float32)
            )
            self._matrix = (stamp, ids, matrix)
        return self._matrix[1], self._matrix[2]


def parse_weights(value: object) -> dict[str, float]:
    """Agent weights as kept in a transcript's frontmatter: `weights: "m-<id>=2 m-<id>=0.5"`."""
    weights: dict[str, float] = {}
    for item in str(value or "").split():
        message, _, number = item.partition("=")
        try:
            weights[message] = float(number)
        except ValueError:
            continue
    return weights


def render_weights(weights: dict[str, float]) -> str:
    return " ".join(f"{message}={weight:g}" for message, weight in sorted(weights.items()) if weight)


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


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
    if scope.status != "deleted":
        clauses.append("s.status != 'deleted'")  # a deleted session is found only when asked for
    for column, value in (
        ("s.agent", scope.agent),
        ("s.device", scope.device),
        ("s.session_id", scope.session_id),
        ("s.status", scope.status),
    ):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    if scope.path:
        clauses.append("s.path GLOB ?")
        params.append(scope.path + "*" if scope.path.endswith("/") else scope.path)
    if scope.since:
        clauses.append("substr(s.updated, 1, 10) >= ?")
        params.append(scope.since)
    if scope.until:
        clauses.append("substr(s.started, 1, 10) <= ?")
        params.append(scope.until)
    return " AND ".join(clauses), params
