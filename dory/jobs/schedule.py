"""Job schedules: cron strings from `dory.toml`, and the fire times between two moments.

A schedule is a standard five-field crontab line ("*/10 * * * *"), a six-field line whose first
field is seconds ("*/3 * * * * *", for tests and fast loops), or "off". Crontab semantics are kept
where APScheduler 3 differs: weekdays count from Sunday (0 and 7; APScheduler counts from Monday,
so the field is expanded to day names), and a line restricting both the day of the month and the
weekday fires when *either* matches (two triggers combined).

Times step forward in UTC: adding a microsecond to a local wall-clock time loses the "second
02:30" of a DST fall-back night, after which APScheduler returns the same fire time forever.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

import tzlocal
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.combining import OrTrigger
from apscheduler.triggers.cron import CronTrigger

from dory.errors import ConfigError

OFF = "off"
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_WEEKDAY_ITEM = re.compile(r"^(?:(\*)|(\w+)(?:-(\w+))?)(?:/(\d+))?$")
# Safety valve for very frequent schedules over a long gap: older fire times are dropped.
MAX_FIRE_TIMES = 10_000


@dataclass(frozen=True)
class Schedule:
    spec: str
    trigger: BaseTrigger | None  # None when the job is off
    has_seconds: bool

    @property
    def enabled(self) -> bool:
        return self.trigger is not None

    def next_after(self, moment: dt.datetime) -> dt.datetime | None:
        if self.trigger is None:
            return None
        zone = moment.tzinfo or local_zone()
        after = moment.astimezone(dt.UTC)
        start = after + dt.timedelta(microseconds=1)
        for _ in range(3):
            fire: dt.datetime | None = self.trigger.get_next_fire_time(None, start.astimezone(zone))
            if fire is None or fire.astimezone(dt.UTC) > after:
                return fire
            start += dt.timedelta(hours=1)  # a repeated DST hour answered with the same time: step past it
        return None

    def fire_times(self, after: dt.datetime, until: dt.datetime) -> list[dt.datetime]:
        """Fire times t with after < t <= until, oldest first (at most MAX_FIRE_TIMES, the newest)."""
        times: list[dt.datetime] = []
        moment = self.next_after(after)
        while moment is not None and moment.astimezone(dt.UTC) <= until.astimezone(dt.UTC):
            if times and moment.astimezone(dt.UTC) <= times[-1].astimezone(dt.UTC):
                break  # never loop on a time that does not advance
            times.append(moment)
            if len(times) > MAX_FIRE_TIMES:
                times.pop(0)
            moment = self.next_after(moment)
        return times

    def first_fire_each_day(self, after: dt.datetime, until: dt.datetime) -> list[dt.datetime]:
        """The first fire time t of each local day with after < t <= until, oldest first: the fire
        times that matter for jobs whose period is a day or longer."""
        zone = after.tzinfo or local_zone()
        times: list[dt.datetime] = []
        moment = after
        while (fire := self.next_after(moment)) is not None and fire.astimezone(dt.UTC) <= until.astimezone(dt.UTC):
            times.append(fire)
            next_day = fire.astimezone(zone).date() + dt.timedelta(days=1)
            midnight = dt.datetime.combine(next_day, dt.time(), zone)
            moment = max(fire, midnight - dt.timedelta(microseconds=1))
        return times

    def latest_at_or_before(self, moment: dt.datetime, max_days: float) -> dt.datetime | None:
        """The newest fire time <= moment, looking back at most max_days (cheap for fast schedules)."""
        for span in (dt.timedelta(minutes=2), dt.timedelta(hours=2), dt.timedelta(days=2), dt.timedelta(days=max_days)):
            fires = self.fire_times(moment - span, moment)
            if fires:
                return fires[-1]
        return None


def local_zone() -> dt.tzinfo:
    return tzlocal.get_localzone()


def parse_schedule(spec: str, job: str = "") -> Schedule:
    text = " ".join(spec.split())
    if text.lower() == OFF:
        return Schedule(OFF, None, False)
    fields = text.split(" ")
    if len(fields) not in (5, 6):
        raise ConfigError(
            f'jobs.{job}: {spec!r} is not a cron schedule (five fields, six with seconds first, or "off")',
            job=job,
            schedule=spec,
        )
    seconds = fields.pop(0) if len(fields) == 6 else "0"
    minute, hour, day, month, weekday = fields
    try:
        weekdays = _crontab_weekdays(weekday)
        common = {"second": seconds, "minute": minute, "hour": hour, "month": month, "timezone": local_zone()}
        trigger: BaseTrigger
        if day != "*" and weekday != "*":
            # crontab: either the day of the month or the weekday matching is enough
            trigger = OrTrigger([CronTrigger(day=day, **common), CronTrigger(day_of_week=weekdays, **common)])
        else:
            trigger = CronTrigger(day=day, day_of_week=weekdays, **common)
    except ValueError as exc:
        raise ConfigError(f"jobs.{job}: invalid cron schedule {spec!r}: {exc}", job=job, schedule=spec) from exc
    return Schedule(text, trigger, len(text.split(" ")) == 6)


def _crontab_weekdays(field: str) -> str:
    """A crontab weekday field (0-7, Sunday = 0 or 7, names, ranges, steps) as APScheduler day names."""
    days: set[int] = set()
    for item in field.lower().split(","):
        match = _WEEKDAY_ITEM.match(item)
        if match is None:
            raise ValueError(f"weekday {item!r} is not understood")
        star, first, last, step = match.groups()
        low, high = (0, 6) if star else (_weekday(first), _weekday(last) if last else None)
        if high is None:
            high = 6 if step else low
        if high < low:
            raise ValueError(f"weekday range {item!r} runs backwards")
        days.update(day % 7 for day in range(low, high + 1, int(step or 1)))
    if days == set(range(7)):
        return "*"
    return ",".join(_WEEKDAYS[day] for day in sorted(days))


def _weekday(token: str) -> int:
    if token.isdigit():
        number = int(token)
        if number > 7:
            raise ValueError(f"weekday {number} is out of range 0-7")
        return number
    if token[:3] in _WEEKDAYS and len(token) >= 3:
        return _WEEKDAYS.index(token[:3])
    raise ValueError(f"weekday {token!r} is not a number 0-7 or a day name")
