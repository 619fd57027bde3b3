"""Running jobs through the ledger: by schedule, by catch-up after downtime, or by hand.

The scheduler only decides *when to look*; this module decides *what to run*: the periods whose
fire time has passed since the job was last checked and that the ledger has not seen done. So a
fire time missed while the daemon was down or the machine slept is run on the next look (start-up,
the job's own trigger, or the heartbeat), exactly once.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import re
import threading
import traceback
from collections.abc import Callable
from typing import Any

from dory.config import Settings
from dory.errors import UsageError
from dory.jobs.job import JobAPI, JobContext, JobResult
from dory.jobs.ledger import JobLedger
from dory.jobs.registry import JOBS, JobSpec, followers, get_job, schedule_spec
from dory.jobs.schedule import Schedule, local_zone, parse_schedule
from dory.models import JobRun

log = logging.getLogger("dory.jobs")
MIN_LOOK_BACK = dt.timedelta(hours=1)
# A deferred period (a session was still being written) is looked at again after this long.
DEFER_RETRY = dt.timedelta(minutes=5)
PERIOD_KEY = re.compile(r"^[0-9A-Za-z:\-]{1,40}$")


def now_local() -> dt.datetime:
    return dt.datetime.now(local_zone())


class JobRunner:
    def __init__(
        self, settings: Settings, ledger: JobLedger, api: JobAPI, clock: Callable[[], dt.datetime] = now_local
    ) -> None:
        self.settings = settings
        self.ledger = ledger
        self.api = api
        self.clock = clock
        self._locks = {name: threading.Lock() for name in JOBS}
        # The nightly jobs look for due periods one at a time, in registry order at start-up, so a
        # dream run never reads the digests while a catch-up is still writing them.
        self._nightly = threading.RLock()

    def schedule(self, name: str) -> Schedule:
        return parse_schedule(schedule_spec(self.settings, name), name)

    def current_period(self, name: str) -> str:
        """The period of the newest fire time at or before now (what a manual run means), or of now
        itself for a job that is off or sweeps whatever is there (migrate-inbox)."""
        spec, schedule = get_job(name), self.schedule(name)
        now = self.clock()
        if not schedule.enabled or spec.sweep:
            return spec.period_of(now, True)
        latest = schedule.latest_at_or_before(now, self.settings.daemon.catch_up_days + 8)
        return spec.period_of(latest or now, schedule.has_seconds)

    # -- by hand -----------------------------------------------------------------------------
    def run(
        self,
        name: str,
        period: str | None = None,
        trigger: str = "manual",
        force: bool = False,
        dry_run: bool = False,
        fix: bool = False,
    ) -> JobRun:
        spec = get_job(name)
        period = period or self.current_period(name)
        validate_period(spec, period)
        force = force or fix  # a fix is asked for by hand, for a period that may be done already
        if dry_run:
            result, error = self._call(spec, period, dry_run=True, fix=fix)
            return JobRun(
                job=name,
                period=period,
                status="failed" if error else "dry_run",
                trigger=trigger,
                outputs=result.outputs,
                warnings=result.warnings,
                error=error,
                reason=result.defer,
            )
        lock = self._locks[name]
        if not lock.acquire(blocking=not spec.sweep):
            return JobRun(job=name, period=period, status="skipped", trigger=trigger, reason="already running")
        try:
            refusal = self.ledger.claim(name, period, trigger, force)
            if refusal is not None:
                return JobRun(job=name, period=period, status="skipped", trigger=trigger, reason=refusal)
            log.info("job %s: running period %s (%s)", name, period, trigger)
            result, error = self._call(spec, period, dry_run=False, fix=fix)
            if result.defer:
                result.warnings.append(f"deferred: {result.defer}")
            self.ledger.finish(name, period, _status(result, error), result.outputs, result.warnings, error)
        finally:
            lock.release()
        if error:
            log.error("job %s (%s) failed: %s", name, period, error.splitlines()[0])
        run = job_run(self.ledger.run(name, period) or {})
        if run.status in ("ok", "warning"):
            for follower in followers(name):
                self.run(follower.name, follower.period_of(self.clock(), False), f"after {name}", force=force)
        return run

    def _call(self, spec: JobSpec, period: str, dry_run: bool, fix: bool) -> tuple[JobResult, str | None]:
        ctx = JobContext(self.settings, period, dry_run, self.api, fix)
        try:
            result = spec.run(ctx)
        except Exception as exc:  # a job's failure is recorded in the ledger, never kills the daemon
            detail = "".join(traceback.format_exception_only(exc)).strip()
            log.debug("job %s traceback:\n%s", spec.name, traceback.format_exc())
            return JobResult(), detail
        produced = any(result.outputs.get(key) for key in ("written", "unchanged", "kept_edited"))
        if spec.warn_if_empty and not produced and not result.defer:
            result.warnings.append(f"{spec.name} produced nothing for {period}")
        return result, None

    # -- by schedule -------------------------------------------------------------------------
    def run_due(self, name: str, trigger: str = "schedule") -> list[JobRun]:
        """Run every period of `name` that came due since the last look and is not done yet."""
        schedule = self.schedule(name)
        if not schedule.enabled:
            return []
        spec = get_job(name)
        with self._nightly if spec.daily_periods else contextlib.nullcontext():
            return self._run_due(spec, schedule, trigger)

    def _run_due(self, spec: JobSpec, schedule: Schedule, trigger: str) -> list[JobRun]:
        name = spec.name
        now = self.clock()
        # The scheduler wakes a little after each fire time, so even "no catch-up" looks back a bit.
        oldest = now - max(dt.timedelta(days=self.settings.daemon.catch_up_days), MIN_LOOK_BACK)
        since = self.ledger.checked_through(name)
        if since is None and not (spec.catch_up == "all" and spec.daily_periods):
            # First look at this job: nothing is "missed" before Dory knew about it (except the
            # digests: a new install digests the recent days its sessions cover).
            self.ledger.set_checked_through(name, now)
            return []
        # A digest's first look covers the catch-up window: a new install digests its recent days.
        start = oldest if since is None else max(since, oldest)
        fires = schedule.first_fire_each_day(start, now) if spec.daily_periods else schedule.fire_times(start, now)
        if spec.catch_up == "latest":
            fires = fires[-1:]
        periods = list(dict.fromkeys(spec.period_of(fire, schedule.has_seconds) for fire in fires))
        runs = [self.run(name, period, trigger) for period in periods]
        self.ledger.set_checked_through(name, now)
        return runs

    def run_deferred(self, name: str, trigger: str = "retry") -> list[JobRun]:
        """Run again the periods a job deferred (input not ready) once their wait is over."""
        return [self.run(name, period, trigger) for period in self.ledger.deferred(name, DEFER_RETRY)]

    def run_changed(self, name: str) -> list[JobRun]:
        """Run again the done periods, within the catch-up window, whose input changed since they
        ran (the daily digest of a day whose sessions arrived late)."""
        spec = get_job(name)
        if spec.input_changed is None or not self.schedule(name).enabled:
            return []
        first = (self.clock() - dt.timedelta(days=self.settings.daemon.catch_up_days)).date().isoformat()
        with self._nightly if spec.daily_periods else contextlib.nullcontext():
            stale = [
                row["period"] for row in self.ledger.done_since(name, first) if spec.input_changed(self.settings, row)
            ]
            return [self.run(name, period, "input changed", force=True) for period in stale]

    def run_all_due(self, trigger: str) -> list[JobRun]:
        return [
            run
            for name in JOBS
            for run in self.run_due(name, trigger) + self.run_deferred(name) + self.run_changed(name)
        ]


def job_run(row: dict[str, Any]) -> JobRun:
    """A ledger row as the public model (the ledger also keeps the pid, for crash detection)."""
    return JobRun(**{key: row[key] for key in JobRun.model_fields if key in row})


def validate_period(spec: JobSpec, period: str) -> None:
    if not PERIOD_KEY.match(period):
        raise UsageError(
            f"period {period!r} for job {spec.name} is not a date, week or time key "
            "(letters, digits, '-', ':' and 'T' only)",
            job=spec.name,
            period=period,
        )
    if spec.check_period is not None:
        spec.check_period(period)


def _status(result: JobResult, error: str | None) -> str:
    if error:
        return "failed"
    if result.defer:
        return "deferred"
    return "warning" if result.warnings else "ok"
