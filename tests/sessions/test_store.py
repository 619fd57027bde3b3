"""The session plane's index: turns found by words, exact line ranges, scope filters, recency."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pytest

from dory.sessions.store import SessionScope, SessionStore
from dory.sessions.transcript import Session, new_message, parse_session, render_session, session_path

NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.UTC)


def transcript(session_id: str, agent: str, day: str, turns: list[tuple[str, str]]) -> tuple[str, Session]:
    """A session rendered to markdown and parsed back, as the indexer will see it (line ranges set)."""
    messages = [new_message(session_id, role, f"{day}T10:00:{n:02d}Z", text) for n, (role, text) in enumerate(turns)]
    session = Session(
        session_id=session_id,
        agent=agent,
        device="laptop",
        title=f"{agent} {session_id}",
        status="done",
        started=messages[0].time,
        updated=messages[-1].time,
        messages=messages,
        source_format="jsonl",
        source_path=None,
    )
    rel = session_path(session)
    return rel, parse_session(rel, render_session(session))


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    sessions = SessionStore(tmp_path / "sessions.sqlite", "porter unicode61 remove_diacritics 2")
    with sessions.conn:
        for sid, agent, day, turns in (
            (
                "s-old",
                "codex",
                "2026-09-01",
                [
                    ("user", "How do I rotate the nginx logs?"),
                    ("assistant", "Use logrotate with a weekly nginx stanza."),
                ],
            ),
            (
                "s-new",
                "claude-code",
                "2026-11-20",
                [
                    ("user", "The nginx logs fill the disk again"),
                    ("assistant", "Rotate the nginx logs daily with logrotate."),
                    ("user", "Thanks, and the postgres backups?"),
                ],
            ),
        ):
            rel, session = transcript(sid, agent, day, turns)
            sessions.upsert(rel, session, 100, 1, "sha256:x")
    yield sessions
    sessions.close()


def test_a_hit_points_at_the_exact_turn(store: SessionStore, tmp_path: Path) -> None:
    hits = store.search("postgres backups", SessionScope(), 5, NOW)
    assert [h.session_id for h in hits] == ["s-new"]
    rel, session = transcript(
        "s-new",
        "claude-code",
        "2026-11-20",
        [
            ("user", "The nginx logs fill the disk again"),
            ("assistant", "Rotate the nginx logs daily with logrotate."),
            ("user", "Thanks, and the postgres backups?"),
        ],
    )
    lines = render_session(session).decode().split("\n")
    turn = "\n".join(lines[hits[0].start_line - 1 : hits[0].end_line])
    assert hits[0].message_id in turn and "postgres backups" in turn and "logrotate" not in turn
    assert hits[0].path == rel and hits[0].role == "user"


def test_recency_breaks_ties_and_scope_filters(store: SessionStore) -> None:
    hits = store.search("rotate nginx logs logrotate", SessionScope(), 4, NOW)
    assert hits[0].session_id == "s-new"  # both answer it; the newer session comes first
    only_codex = store.search("nginx logs", SessionScope(agent="codex"), 5, NOW)
    assert {h.session_id for h in only_codex} == {"s-old"}
    assert store.search("nginx", SessionScope(since="2026-11-01"), 5, NOW)[0].session_id == "s-new"
    assert {h.session_id for h in store.search("nginx", SessionScope(until="2026-10-01"), 5, NOW)} == {"s-old"}
    assert store.search("nginx", SessionScope(session_id="nope"), 5, NOW) == []


def test_reindexing_a_session_replaces_its_rows(store: SessionStore) -> None:
    rel, session = transcript("s-old", "codex", "2026-09-01", [("user", "Only about kubernetes now")])
    with store.conn:
        store.upsert(rel, session, 50, 2, "sha256:y")
    assert store.counts() == {"sessions": 2, "messages": 4}
    assert {h.session_id for h in store.search("nginx", SessionScope(), 5, NOW)} == {"s-new"}
    with store.conn:
        store.delete(rel)
    assert store.counts() == {"sessions": 1, "messages": 3}
    assert store.search("kubernetes", SessionScope(), 5, NOW) == []
    assert store.search('"; DROP TABLE sessions; --', SessionScope(), 5, NOW) == []  # any text is safe


def test_a_newer_turn_beats_a_slightly_better_old_one(tmp_path: Path) -> None:
    sessions = SessionStore(tmp_path / "s.sqlite", "unicode61")
    try:
        with sessions.conn:
            for sid, day, text in (
                ("new", "2026-11-20", "the deploy key expired again today"),
                ("old", "2026-08-01", "deploy key expired"),
            ):
                rel, session = transcript(sid, "codex", day, [("user", text)])
                sessions.upsert(rel, session, 1, 1, "sha256:x")
        hits = sessions.search("deploy key expired", SessionScope(), 2, NOW)
        assert hits[0].score > hits[1].score and [h.session_id for h in hits] == ["new", "old"]
        # The old turn is the better BM25 match on its own: recency made the difference.
        assert (
            sessions.search("deploy key expired", SessionScope(), 2, NOW + dt.timedelta(days=3650))[0].session_id
            == "old"
        )
    finally:
        sessions.close()


def test_a_deleted_session_is_gone_from_vector_search_even_without_a_scope(tmp_path: Path) -> None:
    """Deleted means gone from every read path: the vector side once skipped the filter when no
    scope was given (issue 15, item 10)."""
    sessions = SessionStore(tmp_path / "sessions.sqlite", "porter unicode61 remove_diacritics 2")
    rel, session = transcript("s-gone", "codex", "2026-11-20", [("user", "my secret plan")])
    session.status = "deleted"
    keep_rel, kept = transcript("s-kept", "codex", "2026-11-20", [("user", "an ordinary plan")])
    with sessions.conn:
        sessions.upsert(rel, session, 100, 1, "sha256:x")
        sessions.upsert(keep_rel, kept, 100, 1, "sha256:y")
    pending = sessions.pending_vectors("fp", 10)
    vectors = [(text_hash, np.ones(4, dtype=np.float32) / 2) for text_hash, _ in pending]
    sessions.store_vectors("fp", vectors)
    found = sessions.vector(np.ones(4, dtype=np.float32) / 2, "fp", SessionScope(), 10)
    texts = {sessions.conn.execute("SELECT text FROM messages WHERE id = ?", (row,)).fetchone()[0] for row, _ in found}
    assert any("ordinary" in t for t in texts) and not any("secret" in t for t in texts)
    asked = sessions.vector(np.ones(4, dtype=np.float32) / 2, "fp", SessionScope(status="deleted"), 10)
    assert len(asked) == 1  # found only when deleted sessions are asked for
    sessions.close()
