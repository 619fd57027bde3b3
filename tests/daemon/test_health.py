"""Watcher health inside a daemon running in this process: lost watchers re-arm, overflows reconcile."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from support.waiting import DEADLINE_S, wait_until

from dory.config import load_settings
from dory.daemon.process import Daemon
from dory.models import SearchRequest


@pytest.fixture
def daemon(tmp_path: Path):
    root = tmp_path / "corpus"
    (root / "notes").mkdir(parents=True)
    (root / "notes/a.md").write_text("# A\n\nalpha\n")
    # The state lives outside the corpus, so replacing the corpus folder leaves the index in place.
    settings = load_settings(
        root,
        {
            "embedder.backend": "none",
            "daemon.debounce_ms": 50,
            "daemon.heartbeat_s": 3600,
            "state_dir": str(tmp_path / "state"),
        },
        env={},
    )
    running = Daemon(settings)
    running.start()
    assert running.startup_done.wait(DEADLINE_S), "the start-up reconcile never finished"
    yield running
    running.stop()


def found(daemon: Daemon, word: str) -> bool:
    from dory.service import DoryService

    reader = DoryService(daemon.settings)
    try:
        return bool(reader.search(SearchRequest(query=word, mode="bm25")).hits)
    finally:
        reader.close()


def test_a_dead_watcher_is_reported_and_re_armed_by_the_heartbeat(daemon: Daemon) -> None:
    observer = daemon.watcher._observer
    observer.stop()
    observer.join(DEADLINE_S)
    assert not observer.is_alive()
    (daemon.settings.corpus / "notes/missed.md").write_text("# Missed\n\nwombat\n")
    snapshot = daemon.snapshot()
    assert snapshot["watcher"]["alive"] is True  # not yet noticed
    daemon._heartbeat()
    health = daemon.snapshot()["watcher"]
    assert health["alive"] is True and health["rearmed"] == 1
    assert "the observer thread is not running" in health["last_problem"]
    wait_until(lambda: found(daemon, "wombat"), what="the reconcile after re-arming")  # missed event caught
    (daemon.settings.corpus / "notes/after.md").write_text("# After\n\nnumbat\n")
    wait_until(lambda: found(daemon, "numbat"), what="events from the new watcher")


def test_an_inotify_overflow_triggers_a_reconcile(daemon: Daemon) -> None:
    before = daemon.writer.stats.reconciles
    logging.getLogger("watchdog.observers.inotify_c").warning("Inotify queue overflowed; filesystem events were lost")
    wait_until(lambda: daemon.writer.stats.reconciles == before + 1, what="a reconcile")
    assert daemon.snapshot()["watcher"]["overflows"] == 1


def test_a_replaced_corpus_folder_is_re_armed(daemon: Daemon, tmp_path: Path) -> None:
    root = daemon.settings.corpus
    root.rename(tmp_path / "old")
    (tmp_path / "old").rename(tmp_path / "older")
    (tmp_path / "older").rename(root)  # same inode: nothing to do
    assert daemon.watcher.check() is False
    moved = tmp_path / "moved"
    root.rename(moved)
    root.mkdir()
    (root / "notes").mkdir()
    (root / "notes/new.md").write_text("# New\n\nquokka\n")
    assert daemon.watcher.check() is True
    wait_until(lambda: found(daemon, "quokka"), what="the new folder indexed")


def test_writes_under_the_state_folder_are_not_counted_as_corpus_events(tmp_path: Path) -> None:
    """Issue 15, item 8: the daemon's own writes under .dory/ (its state file twice a second, the
    index, FAISS) were counted as watcher events, about 35,000 while idle."""
    root = tmp_path / "corpus"
    (root / "notes").mkdir(parents=True)
    (root / "notes/a.md").write_text("# A\n\nalpha\n")
    settings = load_settings(root, {"embedder.backend": "none", "daemon.heartbeat_s": 3600}, env={})
    running = Daemon(settings)
    running.start()
    try:
        assert running.startup_done.wait(DEADLINE_S), "the start-up reconcile never finished"
        before = running.watcher.health.events_seen
        for n in range(50):  # as Dory's own writes under its state folder would
            (settings.state_dir / f"scratch-{n}.tmp").write_text("x")
        (root / "notes/b.md").write_text("# B\n\nbravo\n")
        wait_until(lambda: found(running, "bravo"), DEADLINE_S, "the new note to be indexed")
        assert running.watcher.health.events_seen - before < 20  # the note's few events, not the 100+ above
    finally:
        running.stop()
