"""Running jobs through the ledger: by schedule, by catch-up after downtime, or by hand.

The scheduler only decides *when to look*; this module decides *what to run*: the periods whose
fire time has passed since the job was last checked and that the ledger has not seen done. So a
fire time missed while the daemon was down or the machine slept is run on the next look (start-up,
the job's own trigger, or the heartbeat), exactly once.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import threading
import traceback
from collections.abc import Callable
from typing import Any

from dory.config import Settings
from dory.errors import UsageError
from dory.jobs.ledger import JobLedger
from dory.jobs.registry import JOBS, IndexAccess, JobContext, JobResult, JobSpec, get_job, schedule_spec
from dory.jobs.schedule import Schedule, local_zone, parse_schedule
from dory.models import JobRun

log = logging.getLogger("dory.jobs")
MIN_LOOK_BACK = dt.timedelta(hours=1)
PERIOD_KEY = re.compile(r"^[0-9A-Za-z:\-]{1,40}$")


def now_local() -> dt.datetime:
    return dt.datetime.now(local_zone())


class JobRunner:
    def __init__(self, settings: Settings, ledger: JobLedger, index: IndexAccess,
                 clock: Callable[[], dt.datetime] = now_local) -> None:
        self.settings = settings
        self.ledger = ledger
        self.index = index
        self.clock = clock
        self._locks = {name: threading.Lock() for name in JOBS}

    def schedule(self, name: str) -> Schedule:
        return parse_schedule(schedule_spec(self.settings, name), name)

    def current_period(self, name: str) -> str:
        """The period of the newest fire time at or before now (what a manual run means)."""
        spec, schedule = get_job(name), self.schedule(name)
        now = self.clock()
        if not schedule.enabled:
            return spec.period_of(now, True)
        latest = schedule.latest_at_or_before(now, self.settings.daemon.catch_up_days + 8)
        return spec.period_of(latest or now, schedule.has_seconds)

    # -- by hand -----------------------------------------------------------------------------
    def run(self, name: str, period: str | None = None, trigger: str = "manual", force: bool = False,
            dry_run: bool = False) -> JobRun:
        spec = get_job(name)
        period = period or self.current_period(name)
        validate_period(name, period)
        if dry_run:
            result, error = self._call(spec, period, dry_run=True)
            return JobRun(job=name, period=period, status="failed" if error else "dry_run", trigger=trigger,
                          outputs=result.outputs, warnings=result.warnings, error=error)
        with self._locks[name]:
            refusal = self.ledger.claim(name, period, trigger, force)
            if refusal is not None:
                return JobRun(job=name, period=period, status="skipped", trigger=trigger, reason=refusal)
            log.info("job %s: running period %s (%s)", name, period, trigger)
            result, error = self._call(spec, period, dry_run=False)
            status = "failed" if error else ("warning" if result.warnings else "ok")
            self.ledger.finish(name, period, status, result.outputs, result.warnings, error)
        if error:
            log.error("job %s (%s) failed: %s", name, period, error.splitlines()[0])
        return job_run(self.ledger.run(name, period) or {})

    def _call(self, spec: JobSpec, period: str, dry_run: bool) -> tuple[JobResult, str | None]:
        ctx = JobContext(self.settings, period, dry_run, self.index)
        try:
            result = spec.run(ctx)
        except Exception as exc:  # a job's failure is recorded in the ledger, never kills the daemon
            detail = "".join(traceback.format_exception_only(exc)).strip()
            log.debug("job %s traceback:\n%s", spec.name, traceback.format_exc())
            return JobResult(), detail
        if spec.warn_if_empty and not any(result.outputs.values()):
            result.warnings.append(f"{spec.name} produced nothing for {period}")
        return result, None

    # -- by schedule -------------------------------------------------------------------------
    def run_due(self, name: str, trigger: str = "schedule") -> list[JobRun]:
        """Run every period of `name` that came due since the last look and is not done yet."""
        schedule = self.schedule(name)
        if not schedule.enabled:
            return []
        spec = get_job(name)
        now = self.clock()
        # The scheduler wakes a little after each fire time, so even "no catch-up" looks back a bit.
        oldest = now - max(dt.timedelta(days=self.settings.daemon.catch_up_days), MIN_LOOK_BACK)
        since = self.ledger.checked_through(name)
        if since is None:
            # First look at this job: nothing is "missed" before Dory knew about it.
            self.ledger.set_checked_through(name, now)
            return []
        fires = schedule.fire_times(max(since, oldest), now)
        if spec.catch_up == "latest":
            fires = fires[-1:]
        runs = [self.run(name, spec.period_of(fire, schedule.has_seconds), trigger) for fire in fires]
        self.ledger.set_checked_through(name, now)
        return runs

    def run_all_due(self, trigger: str) -> list[JobRun]:
        return [run for name in JOBS for run in self.run_due(name, trigger)]


def job_run(row: dict[str, Any]) -> JobRun:
    """A ledger row as the public model (the ledger also keeps the pid, for crash detection)."""
    return JobRun(**{key: row[key] for key in JobRun.model_fields if key in row})


def validate_period(name: str, period: str) -> None:
    if not PERIOD_KEY.match(period):
        raise UsageError(f"period {period!r} for job {name} is not a date, week or time key "
                         "(letters, digits, '-', ':' and 'T' only)", job=name, period=period)
