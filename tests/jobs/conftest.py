"""Fixtures for the job tests: a local zone with DST and a schedule that cannot loop forever."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from dory.jobs import schedule as schedule_mod
from dory.jobs.schedule import Schedule


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
