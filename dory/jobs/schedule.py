"""Job schedules: cron strings from `dory.toml`, and the fire times between two moments.

A schedule is a standard five-field crontab line ("*/10 * * * *"), a six-field line whose first
field is seconds ("*/3 * * * * *", for tests and fast loops), or "off". Numeric weekdays follow
crontab (0 and 7 are Sunday); APScheduler 3 counts from Monday, so they are translated to names.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

import tzlocal
from apscheduler.triggers.cron import CronTrigger

from dory.errors import ConfigError

OFF = "off"
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat", "sun")
_BARE_NUMBER = re.compile(r"(?<![/\d])\d+")
# Safety valve for very frequent schedules over a long gap: older fire times are dropped.
MAX_FIRE_TIMES = 10_000


@dataclass(frozen=True)
class Schedule:
    spec: str
    trigger: CronTrigger | None  # None when the job is off
    has_seconds: bool

    @property
    def enabled(self) -> bool:
        return self.trigger is not None

    def next_after(self, moment: dt.datetime) -> dt.datetime | None:
        if self.trigger is None:
            return None
        return self.trigger.get_next_fire_time(None, moment + dt.timedelta(microseconds=1))

    def fire_times(self, after: dt.datetime, until: dt.datetime) -> list[dt.datetime]:
        """Fire times t with after < t <= until, oldest first (at most MAX_FIRE_TIMES, the newest)."""
        times: list[dt.datetime] = []
        moment = self.next_after(after)
        while moment is not None and moment <= until:
            times.append(moment)
            if len(times) > MAX_FIRE_TIMES:
                times.pop(0)
            moment = self.next_after(moment)
        return times


def local_zone() -> dt.tzinfo:
    return tzlocal.get_localzone()


def parse_schedule(spec: str, job: str = "") -> Schedule:
    text = " ".join(spec.split())
    if text.lower() == OFF:
        return Schedule(OFF, None, False)
    fields = text.split(" ")
    if len(fields) not in (5, 6):
        raise ConfigError(
            f"jobs.{job}: {spec!r} is not a cron schedule (five fields, six with seconds first, or \"off\")",
            job=job, schedule=spec,
        )
    seconds = fields.pop(0) if len(fields) == 6 else "0"
    minute, hour, day, month, weekday = fields
    try:
        trigger = CronTrigger(second=seconds, minute=minute, hour=hour, day=day, month=month,
                              day_of_week=_crontab_weekdays(weekday), timezone=local_zone())
    except ValueError as exc:
        raise ConfigError(f"jobs.{job}: invalid cron schedule {spec!r}: {exc}", job=job, schedule=spec) from exc
    return Schedule(text, trigger, len(text.split(" ")) == 6)


def _crontab_weekdays(field: str) -> str:
    def name(match: re.Match[str]) -> str:
        number = int(match.group())
        if number > 7:
            raise ValueError(f"weekday {number} is out of range 0-7")
        return _WEEKDAYS[number]

    return _BARE_NUMBER.sub(name, field)
