"""The job registry: every scheduled job, its default schedule and how it names a period.

A job is a function of a `JobContext` returning a `JobResult`. The daemon, `dory ops jobs` and
`dory ops run` read only the `JOBS` table. Jobs read the corpus and a read-only index themselves
and hand every index change to its owner through `JobContext.index` (the daemon's writer thread,
or this process under the writer lock), so a slow job never holds up indexing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from dory.config import Settings
from dory.errors import ConfigError, NotFound
from dory.jobs import capture, digest_daily, digest_late, digest_weekly, dreaming, maintenance, migrate_inbox, wiki
from dory.jobs.job import JobContext, JobResult
from dory.jobs.periods import (
    check_day,
    check_past_day,
    check_week,
    fire_day,
    minute_period,
    previous_day,
    previous_week,
    run_key,
)
from dory.jobs.schedule import parse_schedule


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
    # A done period whose input changed since its run is due again (a day's digest after sessions
    # of that day arrived late); given the settings and the period's ledger row.
    input_changed: Callable[[Settings, dict[str, Any]], bool] | None = None
    # Jobs the daemon runs by itself rather than by cron (capture): what `dory ops jobs` shows as
    # the schedule, and whether it is on.
    driven: Callable[[Settings], tuple[str, bool]] | None = None
    # Each run takes whatever is there now (migrate-inbox): a run by hand is its own period, keyed by
    # its moment (never "already done" because a scheduled run came a minute before), and a run asked
    # for while one is going is skipped at once (that one covers it) instead of holding a scheduler
    # thread, or the heartbeat, until it ends.
    sweep: bool = False
    # Writes generated output (digests, proposals, reports, the wiki): off for a corpus without an
    # output folder (a vault added with `dory add --no-output`).
    writes_output: bool = False
    # Writes notes into the corpus folder (migrate-inbox): off for a corpus Dory must not write into.
    writes_notes: bool = False


def _reconcile(ctx: JobContext) -> JobResult:
    if ctx.dry_run:
        return JobResult(outputs={"dry_run": True})
    report = ctx.api.reconcile()
    outputs = {
        "new": report.new,
        "changed": report.changed,
        "renamed": report.renamed,
        "deleted": report.deleted,
        "touched": report.touched,
        "skipped": len(report.skipped),
    }
    return JobResult(outputs=outputs, warnings=list(report.warnings))


def _capture_driver(settings: Settings) -> tuple[str, bool]:
    cfg = settings.capture
    if not cfg.enabled:
        return "off ([capture] enabled = false)", False
    return f"every {cfg.sweep_s:g} s and when a transcript changes (daemon)", True


def _specs() -> dict[str, JobSpec]:
    specs = (
        JobSpec(
            "reconcile", "compare disk with the index and repair what the watcher missed", "*/10 * * * *", _reconcile
        ),
        JobSpec(
            "daily-digest",
            "yesterday's sessions → digests/daily/YYYY-MM-DD.md",
            "30 2 * * *",
            digest_daily.run,
            writes_output=True,
            catch_up="all",
            period_of=previous_day,
            daily_periods=True,
            warn_if_empty=True,
            check_period=check_past_day,
            input_changed=digest_late.input_changed,
        ),
        JobSpec(
            "weekly-digest",
            "last week's daily digests → digests/weekly/YYYY-Www.md",
            "0 3 * * 1",
            digest_weekly.run,
            writes_output=True,
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
            writes_output=True,
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
            writes_output=True,
            period_of=fire_day,
            daily_periods=True,
            check_period=check_day,
        ),
        JobSpec(
            "wiki-refresh",
            "compile wiki/ (family indexes, hot.md) from canonical pages",
            "off",
            wiki.run,
            writes_output=True,
            period_of=fire_day,
            daily_periods=True,
            after="dream",
            check_period=check_day,
        ),
        JobSpec(
            "migrate-inbox",
            "exports dropped into inbox/import/ → dory migrate, then moved to inbox/import/done/ or failed/",
            "*/2 * * * *",
            migrate_inbox.run,
            period_of=run_key,
            sweep=True,
            writes_notes=True,
        ),
        JobSpec(
            "capture",
            "new and grown Claude Code and Codex transcripts → logs/sessions/ (or a remote Dory)",
            "off",
            capture.run,
            period_of=run_key,
            driven=_capture_driver,
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
    """The job's cron line; "off" for a job that writes output when the corpus has no output folder, or
    notes when the corpus is read-only."""
    spec = get_job(name)
    if (spec.writes_output and settings.output_root is None) or (spec.writes_notes and settings.read_only):
        return "off"
    return settings.jobs.schedules().get(name, get_job(name).default_schedule)


def check_schedules(settings: Settings) -> None:
    """Every `[jobs]` entry names a job and parses as a schedule; raises ConfigError naming it."""
    for name, spec in (settings.jobs.model_extra or {}).items():
        if name.replace("_", "-") not in JOBS:
            raise ConfigError(f"[jobs] names an unknown job {name!r}; jobs: {', '.join(sorted(JOBS))}", job=name)
        parse_schedule(str(spec), name)


def followers(name: str) -> list[JobSpec]:
    """The jobs that run after `name` (wiki-refresh after dream)."""
    return [spec for spec in JOBS.values() if spec.after == name]
