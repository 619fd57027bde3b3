"""The recall log (dory/search/recall_log.py): which notes searches bring back, counted by distinct query
(case and spacing do not make a new query), session turns left out, only the top hits kept, the passage
recalled most often chosen; what dreaming already read; and recording that never fails a search, whether
the log's path is a folder, a broken file or a database another process holds locked.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dory.index import db
from dory.models import ReindexRequest, SearchHit, SearchRequest, SessionTurn
from dory.search.recall_log import TOP_HITS, Recalled, RecallLog, query_key, record_quietly
from dory.service import DoryService

Service = Callable[[dict[str, str | bytes]], DoryService]


def hit(path: str, start: int = 1, end: int = 5, turn: bool = False) -> SearchHit:
    return SearchHit(
        path=path,
        title=path,
        chunk_id=f"{path}:{start}",
        start_line=start,
        end_line=end,
        heading_path=[],
        snippet="…",
        evidence_class="session" if turn else "note",
        confidence="medium",
        score=1.0,
        turn=SessionTurn(session_id="s-1", message_id="m-0123456789ab", agent="codex", role="user") if turn else None,
    )


@pytest.fixture
def log(tmp_path: Path) -> Iterator[RecallLog]:
    opened = RecallLog(tmp_path / "state" / "recall.sqlite")
    yield opened
    opened.close()


def events(path: Path) -> list[tuple[str, str, str, int, int, int]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT query_key, query, path, start_line, end_line, rank FROM recall_events ORDER BY id"
        ).fetchall()
    finally:
        conn.close()


def test_query_keys_ignore_case_and_spacing() -> None:
    assert query_key("  Borrow   CHECKER\t rules \n") == "borrow checker rules"
    assert query_key("borrow checker rules") == query_key("BORROW checker  rules")


def test_distinct_queries_are_counted_case_and_space_insensitively(log: RecallLog) -> None:
    for query in ("borrow checker", "Borrow Checker", "  borrow   checker ", "BORROW CHECKER"):
        log.record(query, [hit("knowledge/rust.md")])
    assert log.frequent(2) == []  # one question asked four ways is one query
    [once] = log.frequent(1)
    assert (once.path, once.queries, once.events) == ("knowledge/rust.md", 1, 4)

    log.record("lifetimes", [hit("knowledge/rust.md")])
    log.record("ownership rules", [hit("knowledge/rust.md")])
    [rust] = log.frequent(3)
    assert (rust.path, rust.queries, rust.events) == ("knowledge/rust.md", 3, 6)
    assert len(rust.samples) == 3  # one sample per distinct query
    assert {query_key(s) for s in rust.samples} == {"borrow checker", "lifetimes", "ownership rules"}
    assert "lifetimes" in rust.samples and "ownership rules" in rust.samples  # as typed


def test_session_turn_hits_are_not_recorded_and_only_the_top_hits_are(log: RecallLog, tmp_path: Path) -> None:
    hits = [
        hit("logs/sessions/codex/desk/2026-11-18-s-1.md", turn=True),
        hit("knowledge/a.md"),
        hit("knowledge/b.md"),
        hit("knowledge/c.md", 3, 9),
        hit("knowledge/d.md"),
    ]
    log.record("which notes", hits)
    rows = events(tmp_path / "state" / "recall.sqlite")
    # The top three hits are looked at; the session turn among them is left out (ranks keep their places).
    assert [(r[2], r[5]) for r in rows] == [("knowledge/a.md", 2), ("knowledge/b.md", 3)]
    assert TOP_HITS == 3
    log.record("more notes", hits[1:])
    rows = events(tmp_path / "state" / "recall.sqlite")
    assert [(r[2], r[3], r[4], r[5]) for r in rows[2:]] == [
        ("knowledge/a.md", 1, 5, 1),
        ("knowledge/b.md", 1, 5, 2),
        ("knowledge/c.md", 3, 9, 3),
    ]
    assert "knowledge/d.md" not in {r[2] for r in rows}


def test_a_search_with_no_hits_or_only_turns_records_nothing(log: RecallLog, tmp_path: Path) -> None:
    log.record("nothing", [])
    log.record("only turns", [hit("logs/sessions/x.md", turn=True)])
    assert events(tmp_path / "state" / "recall.sqlite") == []
    assert log.frequent(1) == []


def test_the_passage_recalled_by_most_distinct_queries_is_chosen(log: RecallLog) -> None:
    log.record("intro", [hit("knowledge/rust.md", 1, 4)])
    for _ in range(5):  # one query repeated: many events, one query
        log.record("repeated question", [hit("knowledge/rust.md", 20, 30)])
    for query in ("ownership", "borrowing", "lifetimes"):
        log.record(query, [hit("knowledge/rust.md", 10, 18)])
    [rust] = log.frequent(2)
    assert (rust.queries, rust.events, rust.start_line, rust.end_line) == (5, 9, 10, 18)


def test_a_tie_between_passages_takes_the_first(log: RecallLog) -> None:
    log.record("one", [hit("knowledge/rust.md", 40, 50)])
    log.record("two", [hit("knowledge/rust.md", 12, 20)])
    [rust] = log.frequent(2)
    assert (rust.start_line, rust.end_line) == (12, 20)


def test_frequent_orders_by_distinct_queries_then_events_then_path(log: RecallLog) -> None:
    for query in ("q1", "q2", "q3"):
        log.record(query, [hit("knowledge/three.md")])
    for query in ("q1", "q2", "q2"):
        log.record(query, [hit("knowledge/b-two.md")])
    for query in ("q1", "q2"):
        log.record(query, [hit("knowledge/a-two.md")])
    log.record("q1", [hit("knowledge/one.md")])
    assert [(r.path, r.queries, r.events) for r in log.frequent(2)] == [
        ("knowledge/three.md", 3, 3),
        ("knowledge/b-two.md", 2, 3),
        ("knowledge/a-two.md", 2, 2),
    ]
    assert [r.path for r in log.frequent(2, limit=1)] == ["knowledge/three.md"]
    assert all(isinstance(r, Recalled) for r in log.frequent(1))


def test_dreamed_remembers_the_hash_each_digest_was_read_at(log: RecallLog, tmp_path: Path) -> None:
    rel = "digests/daily/2026-11-18.md"
    assert not log.dreamed(rel, "aaa")
    log.mark_dreamed(rel, "aaa")
    assert log.dreamed(rel, "aaa")
    assert not log.dreamed(rel, "bbb")  # the digest changed: read it again
    assert not log.dreamed("digests/daily/2026-11-19.md", "aaa")
    log.mark_dreamed(rel, "bbb")
    assert log.dreamed(rel, "bbb") and not log.dreamed(rel, "aaa")
    log.close()
    reopened = RecallLog(tmp_path / "state" / "recall.sqlite")  # it is kept on disk
    try:
        assert reopened.dreamed(rel, "bbb")
    finally:
        reopened.close()


# -- recording never fails a search ------------------------------------------------------------------------
def test_record_quietly_records_and_skips_empty_results(tmp_path: Path) -> None:
    path = tmp_path / "state" / "recall.sqlite"
    log = RecallLog(path)
    record_quietly(log, "nothing found", [])
    assert not path.exists()  # no hits: the log is not even opened
    record_quietly(log, "Borrow Checker", [hit("knowledge/rust.md")])
    log.close()
    assert events(path) == [("borrow checker", "Borrow Checker", "knowledge/rust.md", 1, 5, 1)]


def test_record_quietly_never_raises_when_the_log_path_is_a_folder(tmp_path: Path) -> None:
    path = tmp_path / "state" / "recall.sqlite"
    path.mkdir(parents=True)
    record_quietly(RecallLog(path), "borrow checker", [hit("knowledge/rust.md")])
    assert path.is_dir() and list(path.iterdir()) == []


def test_record_quietly_never_raises_when_the_log_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "recall.sqlite"
    path.write_bytes(b"this is not a sqlite database at all, just some bytes" * 100)
    before = path.read_bytes()
    record_quietly(RecallLog(path), "borrow checker", [hit("knowledge/rust.md")])
    assert path.read_bytes() == before


def test_record_quietly_never_raises_when_the_log_is_locked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(db, "BUSY_TIMEOUT_MS", 50)  # do not wait the real ten seconds for the lock
    path = tmp_path / "recall.sqlite"
    log = RecallLog(path)
    assert log.conn is not None  # created before another process takes the lock
    holder = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        holder.execute(
            "INSERT INTO recall_events(query_key, query, path, start_line, end_line, rank, at) "
            "VALUES ('held', 'held', 'knowledge/held.md', 1, 2, 1, 'now')"
        )
        record_quietly(log, "borrow checker", [hit("knowledge/rust.md")])
        holder.execute("ROLLBACK")
    finally:
        holder.close()
    assert events(path) == []  # the locked write was skipped, not queued or half done
    record_quietly(log, "borrow checker", [hit("knowledge/rust.md")])  # and the log works once released
    log.close()
    assert [e[2] for e in events(path)] == ["knowledge/rust.md"]


def test_a_search_still_answers_when_its_recall_log_cannot_be_written(lexical_service: Service) -> None:
    svc = lexical_service({"knowledge/rust.md": "# Rust\n\nThe borrow checker keeps one owner per value.\n"})
    svc.reindex(ReindexRequest())
    svc.settings.recall_log_path.mkdir(parents=True)
    response = svc.search(SearchRequest(query="borrow checker"))
    assert [h.path for h in response.hits] == ["knowledge/rust.md"]


def test_a_search_with_record_false_records_nothing(lexical_service: Service) -> None:
    svc = lexical_service({"knowledge/rust.md": "# Rust\n\nThe borrow checker keeps one owner per value.\n"})
    svc.reindex(ReindexRequest())
    assert svc.search(SearchRequest(query="borrow checker", record=False)).hits
    assert not svc.settings.recall_log_path.exists()
    assert svc.search(SearchRequest(query="borrow checker")).hits
    assert [e[2] for e in events(svc.settings.recall_log_path)] == ["knowledge/rust.md"]
