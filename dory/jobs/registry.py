"""The job registry: every scheduled job, its default schedule and how it names a period.

A job is a function of a `JobContext` returning a `JobResult`. The daemon, `dory ops jobs` and
`dory ops run` read only the `JOBS` table. Jobs read the corpus and a read-only index themselves
and hand every index change to its owner through `JobContext.index` (the daemon's writer thread,
or this process under the writer lock), so a slow job never holds up indexing.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from dory.config import Settings
from dory.errors import NotFound, UsageError
from dory.jobs.job import JobContext, JobResult
from dory.memory.frontmatter import parse_day


def minute_period(fire: dt.datetime, with_seconds: bool) -> str:
    """The default period key: the scheduled fire time, local, to the minute (or second)."""
    return fire.strftime("%Y-%m-%dT%H:%M:%S" if with_seconds else "%Y-%m-%dT%H:%M")


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


@dataclass(frozen=True)
class JobSpec:
    name: str
    description: str
    default_schedule: str
    run: Callable[[JobContext], JobResult]
    # After downtime: run only the newest missed period, or every missed period (digests).
    catch_up: Literal["latest", "all"] = "latest"
    period_of: Callable[[dt.datetime, bool], str] = minute_period
    # Periods of a day or more: missed periods are found day by day, not fire time by fire time
    # (a test's every-2-seconds cron over a week is 300,000 fire times but 7 periods).
    daily_periods: bool = False
    # A run that changes nothing is normal for reconcile; for a digest it is a warning.
    warn_if_empty: bool = False
    # Runs right after this job's successful runs, for the same day (the wiki after dreaming).
    after: str | None = None
    check_period: Callable[[str], None] | None = None


def _reconcile(ctx: JobContext) -> JobResult:
    if ctx.dry_run:
        return JobResult(outputs={"dry_run": True})
    report = ctx.index.reconcile()
    outputs = {
        "new": report.new,
        "changed": report.changed,
        "renamed": report.renamed,
        "deleted": report.deleted,
        "touched": report.touched,
        "skipped": len(report.skipped),
    }
    return JobResult(outputs=outputs, warnings=list(report.warnings))


def _specs() -> dict[str, JobSpec]:
    from dory.jobs import digest_daily, digest_weekly, dreaming, maintenance, wiki

    specs = (
        JobSpec(
            "reconcile", "compare disk with the index and repair what the watcher missed", "*/10 * * * *", _reconcile
        ),
        JobSpec(
            "daily-digest",
            "yesterday's sessions → digests/daily/YYYY-MM-DD.md",
            "30 2 * * *",
            digest_daily.run,
            catch_up="all",
            period_of=previous_day,
            daily_periods=True,
            warn_if_empty=True,
            check_period=check_past_day,
        ),
        JobSpec(
            "weekly-digest",
            "last week's daily digests → digests/weekly/YYYY-Www.md",
            "0 3 * * 1",
            digest_weekly.run,
            catch_up="all",
            period_of=previous_week,
            daily_periods=True,
            warn_if_empty=True,
            check_period=check_week,
        ),
        JobSpec(
            "dream",
            "new digests and often-recalled pages → proposals in inbox/proposed/",
            "30 3 * * *",
            dreaming.run,
            period_of=fire_day,
            daily_periods=True,
            warn_if_empty=True,
            check_period=check_day,
        ),
        JobSpec(
            "maintain",
            "health report under inbox/maintenance/ (links, stale pages, drift)",
            "0 4 * * *",
            maintenance.run,
            period_of=fire_day,
            daily_periods=True,
            check_period=check_day,
        ),
        JobSpec(
            "wiki-refresh",
            "compile wiki/ (family indexes, hot.md) from canonical pages",
            "off",
            wiki.run,
            period_of=fire_day,
            daily_periods=True,
            after="dream",
            check_period=check_day,
        ),
    )
    return {spec.name: spec for spec in specs}


JOBS: dict[str, JobSpec] = _specs()


def get_job(name: str) -> JobSpec:
    try:
        return JOBS[name]
    except KeyError:
        raise NotFound(f"no job named {name!r}; jobs: {', '.join(sorted(JOBS))}", job=name) from None


def schedule_spec(settings: Settings, name: str) -> str:
    return settings.jobs.schedules().get(name, get_job(name).default_schedule)


def followers(name: str) -> list[JobSpec]:
    """The jobs that run after `name` (wiki-refresh after dream)."""
    return [spec for spec in JOBS.values() if spec.after == name]
