"""Transcripts on disk → the session index: new, changed, unchanged, broken and deleted files."""

from __future__ import annotations

import os
from pathlib import Path

from dory.corpus.paths import IgnoreRules
from dory.sessions.store import SessionScope, SessionStore
from dory.sessions.sync import sync_sessions
from dory.sessions.transcript import Session, new_message, render_session, session_path


def write_session(root: Path, sid: str, texts: list[str]) -> str:
    messages = [new_message(sid, "user", f"2026-11-20T10:00:{n:02d}Z", text) for n, text in enumerate(texts)]
    session = Session(
        session_id=sid,
        agent="codex",
        device="laptop",
        title=sid,
        status="done",
        started=messages[0].time,
        updated=messages[-1].time,
        messages=messages,
    )
    rel = session_path(session)
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_bytes(render_session(session))
    return rel


def test_sync_follows_the_transcripts(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    a = write_session(root, "alpha", ["the quarterly invoice is late"])
    b = write_session(root, "beta", ["rebuild the docker image"])
    (root / "knowledge").mkdir()
    (root / "knowledge/note.md").write_text("# Not a session\n\ninvoice\n")
    store = SessionStore(tmp_path / "s.sqlite", "unicode61")
    rules = IgnoreRules()
    try:
        first = sync_sessions(root, store, rules)
        assert sorted(first.indexed) == sorted([a, b]) and store.counts() == {"sessions": 2, "messages": 2}
        assert [h.path for h in store.search("invoice", SessionScope(), 5)] == [a]  # durable notes stay out

        again = sync_sessions(root, store, rules)
        assert (again.indexed, again.unchanged) == ([], 2)

        write_session(root, "alpha", ["the quarterly invoice is late", "it was paid on friday"])
        (root / b).write_text("---\ntitle: [broken\n---\n## user · m-000000000000\n\nx\n")
        changed = sync_sessions(root, store, rules, [a, b, "knowledge/note.md"])
        assert changed.indexed == [a] and [s.reason for s in changed.skipped] == ["broken_frontmatter"]
        assert store.search("friday", SessionScope(), 5)[0].path == a
        assert store.search("docker", SessionScope(), 5)[0].path == b  # a broken file keeps its old rows

        (root / b).unlink()
        gone = sync_sessions(root, store, rules, [b])
        assert gone.deleted == [b] and store.counts() == {"sessions": 1, "messages": 2}
    finally:
        store.close()


def test_a_hard_linked_transcript_is_skipped_like_a_note(tmp_path: Path) -> None:
    """Issue 15, item 6: transcripts follow the notes' policy (its other name may be outside the corpus)."""
    root = tmp_path / "corpus"
    a = write_session(root, "alpha", ["the quarterly invoice is late"])
    os.link(root / a, tmp_path / "elsewhere.md")
    store = SessionStore(tmp_path / "s.sqlite", "unicode61")
    try:
        report = sync_sessions(root, store, IgnoreRules())
        assert report.indexed == [] and [(s.path, s.reason) for s in report.skipped] == [(a, "hard_link")]
        assert store.counts() == {"sessions": 0, "messages": 0}
    finally:
        store.close()
