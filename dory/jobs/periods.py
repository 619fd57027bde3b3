"""Period arithmetic: which period a fire time belongs to, and checks of period keys.

A job's period names what one run covers: a minute (reconcile), a day (dreaming, maintenance,
wiki, the daily digest's yesterday) or an ISO week (the weekly digest)."""

from __future__ import annotations

import datetime as dt
import re

from dory.errors import UsageError
from dory.memory.frontmatter import parse_day


def minute_period(fire: dt.datetime, with_seconds: bool) -> str:
    """The default period key: the scheduled fire time, local, to the minute (or second)."""
    return fire.strftime("%Y-%m-%dT%H:%M:%S" if with_seconds else "%Y-%m-%dT%H:%M")


def run_key(fire: dt.datetime, with_seconds: bool) -> str:
    """One run's own key, to the millisecond (capture: a run is a sweep, not a period of work, and
    two runs in one second are two rows of the ledger)."""
    return fire.strftime("%Y-%m-%dT%H:%M:%S") + f"-{fire.microsecond // 1000:03d}"


def fire_day(fire: dt.datetime, with_seconds: bool) -> str:
    """The day the job fires on (dreaming, maintenance, wiki: once a day, whatever the cron)."""
    return fire.date().isoformat()


def previous_day(fire: dt.datetime, with_seconds: bool) -> str:
    """The day before the fire time: a daily digest at 02:30 digests yesterday."""
    return (fire.date() - dt.timedelta(days=1)).isoformat()


def previous_week(fire: dt.datetime, with_seconds: bool) -> str:
    """The last complete ISO week before the fire time (`2026-W46`)."""
    day = fire.date() - dt.timedelta(days=fire.isoweekday())  # the Sunday that ended it
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"


def check_day(period: str) -> None:
    if len(period) != 10 or parse_day(period) is None:
        raise UsageError(f"period {period!r} is not a day (YYYY-MM-DD)", period=period)


def check_past_day(period: str) -> None:
    """A day that has begun (a digest of a day to come would be recorded as done before it happened)."""
    check_day(period)
    if dt.date.fromisoformat(period) > dt.date.today():
        raise UsageError(f"{period} has not happened yet", period=period)


def check_week(period: str) -> None:
    match = re.fullmatch(r"(\d{4})-W(\d{2})", period)
    try:
        if match is None:
            raise ValueError
        dt.date.fromisocalendar(int(match[1]), int(match[2]), 1)
    except ValueError:
        raise UsageError(f"period {period!r} is not an ISO week (YYYY-Www, e.g. 2026-W46)", period=period) from None
    if week_days(period)[0] > dt.date.today():
        raise UsageError(f"{period} has not started yet", period=period)


def week_days(period: str) -> list[dt.date]:
    """The seven days of an ISO week key, Monday first."""
    year, week = int(period[:4]), int(period[6:8])
    monday = dt.date.fromisocalendar(year, week, 1)
    return [monday + dt.timedelta(days=i) for i in range(7)]
