"""Fixtures for the daemon tests: real `dory ops watch` processes, killed if a test leaves them running."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from support.daemon import DaemonProcess, daemon_env

from dory.jobs import schedule as schedule_mod
from dory.jobs.schedule import Schedule


@pytest.fixture
def daemon_factory(dory_cmd: list[str]) -> Iterator[Callable[..., DaemonProcess]]:
    started: list[DaemonProcess] = []

    def make(root: Path, env: dict[str, str] | None = None) -> DaemonProcess:
        daemon = DaemonProcess(dory_cmd, root, env or daemon_env())
        started.append(daemon)
        return daemon

    yield make
    for daemon in started:
        if daemon.proc is not None and daemon.proc.poll() is None:
            daemon.proc.kill()
            daemon.proc.wait(30)


@pytest.fixture
def berlin_bounded(monkeypatch: pytest.MonkeyPatch) -> ZoneInfo:
    """Local time is Europe/Berlin (which has DST), and a schedule that would loop forever fails
    after 200 steps instead of hanging the test."""
    berlin = ZoneInfo("Europe/Berlin")
    monkeypatch.setattr(schedule_mod, "local_zone", lambda: berlin)
    original = Schedule.next_after
    calls = 0

    def bounded(self: Schedule, moment: dt.datetime) -> dt.datetime | None:
        nonlocal calls
        calls += 1
        if calls > 200:
            raise RuntimeError("the schedule did not terminate")
        return original(self, moment)

    monkeypatch.setattr(Schedule, "next_after", bounded)
    return berlin
