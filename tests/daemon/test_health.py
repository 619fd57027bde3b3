"""The daemon's health tells the truth: parts that stop are reported (and the watcher re-armed), a
dead worker thread or a vanished corpus folder ends the daemon with a non-zero exit that says why,
and an inotify overflow counts once. Most tests run the daemon in this process; the fault is a real
component made to raise (monkeypatch), or a real event (a folder deleted, a kernel queue overflow).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.daemon import DaemonProcess, daemon_env
from support.waiting import DEADLINE_S, wait_until

from dory.config import Settings, load_settings
from dory.daemon.control import ControlServer
from dory.daemon.process import Daemon
from dory.errors import CorpusNotFound, DaemonNotRunning, DoryError
from dory.jobs.registry import JOBS
from dory.models import SearchRequest
from dory.service import DoryService
from dory.service.daemon_state import daemon_status

# No scheduled job in these tests: one firing meanwhile would add reconciles and log lines.
JOBS_OFF = {f"jobs.{name.replace('-', '_')}": "off" for name in JOBS}


def make_settings(tmp_path: Path, notes: int = 1, **overrides: Any) -> Settings:
    root = tmp_path / "corpus"
    (root / "notes").mkdir(parents=True)
    for n in range(notes):
        (root / f"notes/n{n}.md").write_text(f"# N{n}\n\nalpha\n")
    # The state lives outside the corpus, so replacing the corpus folder leaves the index in place.
    base = {
        "embedder.backend": "none",
        "daemon.debounce_ms": 50,
        "daemon.heartbeat_s": 3600,
        "state_dir": str(tmp_path / "state"),
        **JOBS_OFF,
    }
    return load_settings(root, base | overrides, env={})


@pytest.fixture
def daemon(tmp_path: Path):
    running = Daemon(make_settings(tmp_path))
    running.start()
    assert running.startup_done.wait(DEADLINE_S), "the start-up reconcile never finished"
    yield running
    running.stop()


def found(daemon: Daemon, word: str) -> bool:
    reader = DoryService(daemon.settings)
    try:
        return bool(reader.search(SearchRequest(query=word, mode="bm25")).hits)
    finally:
        reader.close()


def watchdog_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if type(t).__module__.startswith("watchdog.") and t.is_alive()]


def test_a_stopped_observer_is_reported_at_once_and_re_armed_by_the_heartbeat(daemon: Daemon) -> None:
    """Issue 15, item 8: the record said "alive" until the heartbeat (30 s by default) noticed."""
    observer = daemon.watcher._observer
    observer.stop()
    observer.join(DEADLINE_S)
    assert not observer.is_alive()
    (daemon.settings.corpus / "notes/missed.md").write_text("# Missed\n\nwombat\n")
    assert daemon.snapshot()["watcher"]["alive"] is False  # the record says so before any heartbeat
    daemon._heartbeat()
    health = daemon.snapshot()["watcher"]
    assert health["alive"] is True and health["rearmed"] == 1
    assert health["last_error"] == "the observer thread is not running" and health["last_error_at"]
    wait_until(lambda: found(daemon, "wombat"), what="the reconcile after re-arming")  # missed event caught
    (daemon.settings.corpus / "notes/after.md").write_text("# After\n\nnumbat\n")
    wait_until(lambda: found(daemon, "numbat"), what="events from the new watcher")


def test_a_dead_inotify_reader_is_reported_and_re_armed(daemon: Daemon) -> None:
    """watchdog reads the kernel queue in a thread of its own; when it died, the observer and its
    emitter lived on, the watcher counted as alive and was never re-armed: no event ever came."""
    reader = daemon.watcher._observer._inotify_fd
    reader.stop()
    reader.join(DEADLINE_S)
    assert daemon.snapshot()["watcher"]["alive"] is False
    (daemon.settings.corpus / "notes/unseen.md").write_text("# Unseen\n\nquokka\n")
    daemon._heartbeat()
    health = daemon.snapshot()["watcher"]
    assert health["alive"] is True and health["rearmed"] == 1
    assert health["last_error"] == "the inotify reader thread stopped"
    wait_until(lambda: found(daemon, "quokka"), what="the reconcile after re-arming")


def test_an_inotify_overflow_is_counted_once_and_reconciled_once(tmp_path: Path) -> None:
    """Issue 15, item 8: watchdog logs one overflow twice (the kernel event, then each recursive
    watch it rebuilds); both lines were counted, and two reconciles requested. The overflow here is
    real: watchdog's reader is held (it waits for the watch group's lock while we hold it), so
    the kernel queue fills past its limit."""
    running = Daemon(make_settings(tmp_path))
    running.start()
    assert running.startup_done.wait(DEADLINE_S), "the start-up reconcile never finished"
    before = running.writer.stats.reconciles
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    touched = [running.settings.corpus / "notes/n0.md", running.settings.corpus / "notes/x.md"]
    touched[1].write_text("# X\n\nx\n")
    group = next(iter(running.watcher._observer.emitters))._inotify
    with group._lock:
        # Two files in turn, so the kernel cannot merge repeated events; the reader may take one
        # buffer (at most 2,048 events) before it blocks on the lock.
        for n in range(limit + 4_096):
            os.utime(touched[n % 2])
    wait_until(lambda: running.watcher.health.overflows, what="the overflow to be seen")
    running.stop()  # joins watchdog's threads first: every log line of the overflow is in
    assert running.watcher.health.overflows == 1
    assert running.writer.stats.reconciles - before == 1  # the stop ran every queued reconcile


def test_a_heartbeat_after_the_watcher_stopped_never_re_arms_it(daemon: Daemon) -> None:
    """A heartbeat's check racing with the daemon's stop found the observer gone and armed a new
    one, which then ran on after the daemon had stopped."""
    daemon.watcher.stop()
    left = set(watchdog_threads())  # none of this daemon's; maybe another test's
    assert daemon.watcher.check() is False
    assert set(watchdog_threads()) <= left


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


# -- dead parts end the daemon -------------------------------------------------------------------
def injected(*args: Any) -> Any:
    raise RuntimeError("injected")


def break_writer(daemon: Daemon, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(daemon.changes, "take_due", injected)  # the writer's loop calls it each turn
    daemon.writer.wake()


def break_embedder(daemon: Daemon, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(daemon.service.resources, "fingerprint", injected)  # read outside its retry
    daemon.embedder.wake()


def break_control(daemon: Daemon, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ControlServer, "service_actions", injected)  # serve_forever calls it each poll


# The embedder needs a configured backend: an endpoint that is never called (no note, no chunk).
EMBEDDER = {
    "embedder.backend": "openai",
    "embedder.url": "http://127.0.0.1:9",
    "embedder.model": "m",
    "embedder.dims": 8,
}
PARTS = {
    "writer": (break_writer, {}, 1),
    "embedder": (break_embedder, EMBEDDER, 0),
    "control": (break_control, {}, 1),
}


@pytest.mark.parametrize("part", list(PARTS))
def test_a_dead_worker_thread_ends_the_daemon_with_an_error_its_record_keeps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, part: str
) -> None:
    """Issue 15, item 8: a worker thread that died was not reported, and the daemon lived on without
    it. Now its death is its last error, the daemon stops and raises (a non-zero exit, so systemd
    restarts it) and the record it leaves tells `dory status` which part died and why."""
    fault, overrides, notes = PARTS[part]
    daemon = Daemon(make_settings(tmp_path, notes, **overrides))
    outcome: list[object] = []

    def life() -> None:
        try:
            outcome.append(daemon.run(lambda: None))
        except DoryError as exc:
            outcome.append(exc)

    runner = threading.Thread(target=life, daemon=True)
    runner.start()
    assert daemon.startup_done.wait(DEADLINE_S), "the start-up reconcile never finished"
    fault(daemon, monkeypatch)
    runner.join(DEADLINE_S)
    assert not runner.is_alive(), "the daemon went on without its dead part"
    [error] = outcome
    assert isinstance(error, DoryError) and error.exit_code != 0
    assert error.message.startswith(f"the {part} thread died: RuntimeError: injected; exiting")
    status = daemon_status(daemon.settings)
    assert not status.running and status.exit_reason == error.message
    assert f"exited at {status.exited_at}: the {part} thread died" in (status.note or "")
    recorded = getattr(status, part)
    assert recorded["alive"] is False and recorded["last_error_at"]
    assert recorded["last_error"] == f"the {part} thread died: RuntimeError: injected"
    reader = DoryService(daemon.settings)
    try:
        assert status.note in reader.status().warnings  # what `dory status` prints
    finally:
        reader.close()


def test_before_stop_runs_while_the_service_is_still_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`dory serve` stops serving in `before_stop`: a request still running when the daemon closed the
    service under it could crash the process (a SIGSEGV at SIGTERM was seen once). The hook must run
    first, with the service still usable, and the daemon must stop even when the hook fails."""
    daemon = Daemon(make_settings(tmp_path))
    order: list[str] = []
    real_close = daemon.service.close

    def close() -> None:
        order.append("service closed")
        real_close()

    def before_stop() -> None:
        hits = daemon.service.search(SearchRequest(query="alpha", mode="bm25")).hits
        order.append(f"before_stop saw {len(hits)} hit")
        raise RuntimeError("the hook failed")

    monkeypatch.setattr(daemon.service, "close", close)
    with pytest.raises(RuntimeError, match="the hook failed"):
        daemon.run(lambda: "stop" if daemon.startup_done.wait(DEADLINE_S) else None, before_stop=before_stop)
    assert order == ["before_stop saw 1 hit", "service closed"]
    assert not daemon_status(daemon.settings).running


def test_callers_waiting_on_a_writer_that_dies_get_an_error_instead_of_hanging(
    daemon: Daemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request queued for the writer when it died waited forever (a job doing so also kept the
    process from ever exiting: the scheduler's threads are joined at exit)."""
    entered, release = threading.Event(), threading.Event()

    def stuck_then_broken(limit: int) -> list[str]:
        entered.set()
        release.wait(DEADLINE_S)
        raise RuntimeError("injected")

    monkeypatch.setattr(daemon.changes, "take_due", stuck_then_broken)
    daemon.writer.wake()
    assert entered.wait(DEADLINE_S)
    waiting = daemon.writer.submit(lambda: "never run")  # queued while the writer is inside its loop
    release.set()
    with pytest.raises(DaemonNotRunning):
        waiting.result(DEADLINE_S)
    wait_until(lambda: not daemon.snapshot()["writer"]["alive"], what="the writer thread to end")
    assert daemon.snapshot()["writer"]["last_error"] == "the writer thread died: RuntimeError: injected"
    with pytest.raises(DaemonNotRunning):
        daemon.writer.submit(lambda: "refused at once")


def test_the_record_can_be_made_before_the_index_exists(tmp_path: Path) -> None:
    """On a first start the record is published before the start-up reconcile creates the index:
    opening it raised (a StorageError since the storage errors got their own codes, where
    sqlite3.Error was expected), so no record was written and each attempt logged a traceback."""
    daemon = Daemon(make_settings(tmp_path))
    assert not daemon.settings.db_path.exists()
    assert daemon.snapshot()["vectors_pending"] == 0


def scheduler_with_error(daemon: Daemon) -> dict[str, Any] | None:
    part = daemon.snapshot()["scheduler"]
    return part if part["last_error"] else None


def test_a_failed_scheduled_job_run_is_the_schedulers_last_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 15, item 8: the run is failed in the ledger; the scheduler part says so too, with the time."""
    monkeypatch.setitem(JOBS, "daily-digest", dataclasses.replace(JOBS["daily-digest"], run=injected))
    # The daily digest catches up on the last days at start-up (a new ledger: its first look).
    daemon = Daemon(make_settings(tmp_path, **{"jobs.daily_digest": "30 2 * * *"}))
    daemon.start()
    try:
        scheduler = wait_until(lambda: scheduler_with_error(daemon), what="a failed digest run")
        assert re.fullmatch(r"job daily-digest failed for [-0-9]+: RuntimeError: injected", scheduler["last_error"])
        assert scheduler["alive"] is True and scheduler["last_error_at"]
    finally:
        daemon.stop()


def test_a_scheduled_call_that_raises_is_the_schedulers_last_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    daemon = Daemon(make_settings(tmp_path, **{"daemon.heartbeat_s": 0.5}))
    daemon.start()
    try:
        monkeypatch.setattr(daemon.watcher, "check", injected)  # the heartbeat's first step
        scheduler = wait_until(lambda: scheduler_with_error(daemon), what="the heartbeat to raise")
        assert scheduler["last_error"] == "scheduled call heartbeat raised RuntimeError: injected"
        assert (
            daemon.snapshot()["last_error"] == f"scheduler at {scheduler['last_error_at']}: {scheduler['last_error']}"
        )
    finally:
        daemon.stop()


# -- the corpus folder goes away -----------------------------------------------------------------
def delete(root: Path, tmp_path: Path) -> None:
    shutil.rmtree(root)


def move_away(root: Path, tmp_path: Path) -> None:
    root.rename(tmp_path / "moved-away")  # the state folder inside it goes along


@pytest.mark.parametrize(
    ("remove", "state_elsewhere"), [(delete, True), (move_away, False)], ids=["deleted", "moved-with-state"]
)
def test_a_corpus_folder_that_goes_away_ends_the_daemon_non_zero_saying_why(
    tmp_path: Path,
    daemon_factory: Callable[..., DaemonProcess],
    remove: Callable[[Path, Path], None],
    state_elsewhere: bool,
) -> None:
    """Issue 15, item 8: the daemon lived on as a zombie, watching nothing and reporting nothing.
    Now it exits with corpus_not_found (exit 2: systemd restarts it, the journal says why)."""
    root = tmp_path / "corpus"
    (root / "notes").mkdir(parents=True)
    (root / "notes/a.md").write_text("# A\n\nalpha\n")
    env = daemon_env(**{f"DORY_{key.upper().replace('.', '_')}": value for key, value in JOBS_OFF.items()})
    if state_elsewhere:
        env["DORY_STATE_DIR"] = str(tmp_path / "state")
    daemon = daemon_factory(root, env).start()
    pid = daemon.proc.pid
    remove(root, tmp_path)
    wait_until(lambda: daemon.proc.poll() is not None, what="the daemon to exit")
    assert daemon.proc.returncode == CorpusNotFound.exit_code
    message = f"the corpus folder {root.resolve()} was deleted or moved; exiting"
    log = daemon.log.read_text()
    assert f"CRITICAL dory.daemon: {message}" in log and f"error [corpus_not_found]: {message}" in log
    if state_elsewhere:  # the record survives with the corpus gone, and says why the daemon ended
        status = daemon.status()
        assert not status.running and status.pid == pid and status.exit_reason == message
