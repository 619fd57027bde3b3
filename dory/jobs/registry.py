"""The job registry: every scheduled job, its default schedule and how it names a period.

A job is a function of a `JobContext` returning a `JobResult`. Later jobs (digests, dreaming,
maintenance, wiki) add a `JobSpec` to `JOBS`; the daemon, `dory ops jobs` and `dory ops run` read
only this table.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from dory.config import Settings
from dory.errors import NotFound
from dory.models import ReindexResponse


class IndexAccess(Protocol):
    """How a job changes the index: through the daemon's writer, or under the writer lock."""

    def reconcile(self) -> ReindexResponse: ...


@dataclass
class JobContext:
    settings: Settings
    period: str
    dry_run: bool
    index: IndexAccess


@dataclass
class JobResult:
    outputs: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def minute_period(fire: dt.datetime, with_seconds: bool) -> str:
    """The default period key: the scheduled fire time, local, to the minute (or second)."""
    return fire.strftime("%Y-%m-%dT%H:%M:%S" if with_seconds else "%Y-%m-%dT%H:%M")


@dataclass(frozen=True)
class JobSpec:
    name: str
    description: str
    default_schedule: str
    run: Callable[[JobContext], JobResult]
    # After downtime: run only the newest missed period, or every missed period (digests).
    catch_up: Literal["latest", "all"] = "latest"
    period_of: Callable[[dt.datetime, bool], str] = minute_period
    # A run that changes nothing is normal for reconcile; for a digest it is a warning.
    warn_if_empty: bool = False


def _reconcile(ctx: JobContext) -> JobResult:
    if ctx.dry_run:
        return JobResult(outputs={"dry_run": True})
    report = ctx.index.reconcile()
    outputs = {"new": report.new, "changed": report.changed, "renamed": report.renamed,
               "deleted": report.deleted, "touched": report.touched, "skipped": len(report.skipped)}
    return JobResult(outputs=outputs, warnings=list(report.warnings))


JOBS: dict[str, JobSpec] = {
    spec.name: spec for spec in (
        JobSpec("reconcile", "compare disk with the index and repair what the watcher missed",
                "*/10 * * * *", _reconcile),
    )
}


def get_job(name: str) -> JobSpec:
    try:
        return JOBS[name]
    except KeyError:
        raise NotFound(f"no job named {name!r}; jobs: {', '.join(sorted(JOBS))}", job=name) from None


def schedule_spec(settings: Settings, name: str) -> str:
    return settings.jobs.schedules().get(name, get_job(name).default_schedule)
