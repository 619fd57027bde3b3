"""Scheduled jobs and the daemon: job runs, run requests, the job list and the daemon's status."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from dory.models.common import _Model


class JobRun(_Model):
    """One run of a scheduled job (or why it did not run)."""

    job: str
    period: str
    status: Literal["ok", "warning", "deferred", "failed", "running", "interrupted", "skipped", "dry_run"]
    trigger: str
    started: str | None = None
    ended: str | None = None
    attempts: int = 0
    outputs: dict[str, Any] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    error: str | None = None
    reason: str | None = None  # why a run was skipped


class DaemonStatus(_Model):
    """What `dory ops watch` reports about itself (through `<state>/daemon.json`)."""

    running: bool
    pid: int | None = None
    started_at: str | None = None
    uptime_s: float | None = None
    heartbeat_at: str | None = None
    heartbeat_age_s: float | None = None
    idle: bool = False  # nothing queued, nothing being written or embedded
    pending_paths: int = 0  # changed paths waiting for their debounce
    vectors_pending: int = 0
    # Each part: `alive` (its thread runs), its counters, `last_error` and `last_error_at`.
    watcher: dict[str, Any] = Field(default_factory=dict)
    output_watcher: dict[str, Any] | None = None  # a read-only vault's output folder, watched too
    writer: dict[str, Any] = Field(default_factory=dict)
    embedder: dict[str, Any] = Field(default_factory=dict)
    scheduler: dict[str, Any] = Field(default_factory=dict)
    control: dict[str, Any] = Field(default_factory=dict)
    capture: dict[str, Any] = Field(default_factory=dict)  # `enabled` false while [capture] is off
    last_error: str | None = None  # the most recent of the parts' last errors
    exited_at: str | None = None  # a daemon that could not go on (a part died, the corpus went)...
    exit_reason: str | None = None  # ...says why in the record it leaves
    http_url: str | None = None  # where `dory serve` answers, when the daemon serves HTTP
    note: str | None = None  # e.g. a stale record left by a daemon that died


class Readiness(_Model):
    """What /readyz answers (the same facts as `dory status`): each part's check, and how far the
    index is behind the corpus."""

    ready: bool
    checks: dict[str, bool]
    generation: int
    pending_paths: int
    vectors_pending: int
    last_error: str | None = None


class JobRunRequest(_Model):
    job: str = Field(min_length=1, max_length=64)
    period: str | None = Field(None, min_length=1, max_length=64)
    force: bool = False
    dry_run: bool = False
    fix: bool = Field(False, description="maintain: also make the safe mechanical fixes (implies force)")


class JobInfo(_Model):
    name: str
    description: str
    schedule: str
    enabled: bool
    next_run: str | None
    last_run: JobRun | None
    recent_runs: list[JobRun] = Field(default_factory=list)  # newest first, a handful
    warnings: list[str] = Field(default_factory=list)


class JobsResponse(_Model):
    daemon_running: bool
    jobs: list[JobInfo]
