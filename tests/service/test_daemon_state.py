"""daemon_status: the daemon's record is trusted only while its pid holds the writer lock."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import pytest

from dory.config import Settings, load_settings
from dory.index.lock import WriterLock
from dory.service.daemon_state import daemon_status, write_state


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    root = tmp_path / "corpus"
    root.mkdir()
    s = load_settings(root, env={})
    s.state_dir.mkdir(parents=True)
    return s


def stamp(seconds_ago: float) -> str:
    moment = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=seconds_ago)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def record(**extra: Any) -> dict[str, Any]:
    return {
        "pid": os.getpid(),
        "started_at": stamp(100),
        "heartbeat_at": stamp(1),
        "idle": True,
        "pending_paths": 2,
        "watcher": {"ok": True},
        "not_a_status_field": 1,
        **extra,
    }


def test_nothing_running(settings: Settings) -> None:
    status = daemon_status(settings)
    assert (status.running, status.pid, status.note) == (False, None, None)


def test_another_writer_without_daemon(settings: Settings) -> None:
    with WriterLock(settings.lock_path):
        status = daemon_status(settings)
    assert not status.running
    assert status.note == f"the index is being written by another process (pid {os.getpid()})"


def test_live_daemon(settings: Settings) -> None:
    write_state(settings.daemon_state_path, record())
    assert [p.name for p in settings.state_dir.iterdir()] == ["daemon.json"]  # no temp file left
    with WriterLock(settings.lock_path):
        status = daemon_status(settings)
    assert status.running and status.pid == os.getpid()
    assert status.idle and status.pending_paths == 2 and status.watcher == {"ok": True}
    # Both ages grow with the time the test takes, so only their difference is checked: the stamps
    # were written 99 s apart (whole seconds, ages rounded to 0.1 s).
    assert status.uptime_s is not None and status.heartbeat_age_s is not None
    assert 98 <= status.uptime_s - status.heartbeat_age_s <= 100
    assert status.heartbeat_age_s >= 1
    assert status.note is None


def test_stale_record_of_a_dead_daemon(settings: Settings) -> None:
    write_state(settings.daemon_state_path, record(pid=999_999_999))
    status = daemon_status(settings)
    assert not status.running and status.pid == 999_999_999
    assert "stopped without cleaning up" in status.note
    with WriterLock(settings.lock_path):  # someone else (this process) holds the lock: still not that daemon
        assert not daemon_status(settings).running


@pytest.mark.parametrize("content", ["", "not json", "[1, 2]", '"text"'])
def test_unreadable_record_counts_as_none(settings: Settings, content: str) -> None:
    settings.daemon_state_path.write_text(content, encoding="utf-8")
    assert daemon_status(settings).running is False


def test_bad_timestamps_give_no_age(settings: Settings) -> None:
    write_state(settings.daemon_state_path, record(started_at="yesterday", heartbeat_at=None))
    with WriterLock(settings.lock_path):
        status = daemon_status(settings)
    assert status.running
    assert status.uptime_s is None and status.heartbeat_age_s is None


def test_write_state_replaces_atomically(settings: Settings) -> None:
    write_state(settings.daemon_state_path, {"pid": 1})
    write_state(settings.daemon_state_path, {"pid": 2, "when": dt.date(2024, 1, 1)})
    assert json.loads(settings.daemon_state_path.read_text()) == {"pid": 2, "when": "2024-01-01"}
