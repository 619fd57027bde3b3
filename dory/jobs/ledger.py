"""The job ledger: one row per (job, period) in `<state>/jobs.sqlite`, so each period runs once.

A run is claimed by inserting (or re-opening) its row inside an immediate transaction; a second
claimer of the same period sees the row and backs off. A row left `running` by a process that no
longer exists (kill -9, power loss) is marked `interrupted` and may be claimed again, as may a
`failed` one until it has used MAX_ATTEMPTS. `checks` remembers, per job, up to which moment the
schedule has been looked at, which is how missed periods are found after downtime.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import threading
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from dory.index import db
from dory.index.store import now_iso

MAX_ATTEMPTS = 3
KEEP_ROWS_PER_JOB = 500
DONE = ("ok", "warning")

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    job TEXT NOT NULL,
    period TEXT NOT NULL,
    status TEXT NOT NULL,
    trigger TEXT NOT NULL,
    started TEXT NOT NULL,
    ended TEXT,
    attempts INTEGER NOT NULL DEFAULT 1,
    outputs TEXT NOT NULL DEFAULT '{}',
    warnings TEXT NOT NULL DEFAULT '[]',
    error TEXT,
    pid INTEGER NOT NULL,
    PRIMARY KEY (job, period)
);
CREATE INDEX IF NOT EXISTS runs_started ON runs(job, started);
CREATE TABLE IF NOT EXISTS checks (job TEXT PRIMARY KEY, checked_through TEXT NOT NULL);
"""


P = ParamSpec("P")
R = TypeVar("R")


def _locked(method: Callable[Concatenate[JobLedger, P], R]) -> Callable[Concatenate[JobLedger, P], R]:
    """The scheduler's threads share one connection; one statement group at a time."""

    @wraps(method)
    def wrapper(self: JobLedger, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with self._lock:
            return method(self, *args, **kwargs)

    return wrapper


def _now() -> str:
    """Microseconds, so runs started within one second still sort in order."""
    return now_iso("microseconds")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class JobLedger:
    def __init__(self, path: Path, readonly: bool = False) -> None:
        self._lock = threading.RLock()
        self.conn = db.connect(path, readonly=readonly)
        self.conn.isolation_level = None  # explicit BEGIN IMMEDIATE below
        if not readonly:
            self.conn.executescript(SCHEMA)

    @classmethod
    def open_existing(cls, path: Path) -> JobLedger | None:
        """A read-only ledger, or None when no job has ever run (reading never creates files)."""
        return cls(path, readonly=True) if path.exists() else None

    def close(self) -> None:
        self.conn.close()

    # -- claiming and finishing runs ---------------------------------------------------------
    @_locked
    def claim(self, job: str, period: str, trigger: str, force: bool = False) -> str | None:
        """Start a run. Returns None when claimed, else why not (already done, running, gave up)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            row = self.conn.execute(
                "SELECT status, attempts, pid FROM runs WHERE job = ? AND period = ?", (job, period)
            ).fetchone()
            refusal = None if row is None else _refusal(row, force)
            if refusal is None:
                self._open_row(job, period, trigger, row)
            self.conn.execute("COMMIT")
            return refusal
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    def _open_row(self, job: str, period: str, trigger: str, row: sqlite3.Row | None) -> None:
        attempts = 1 if row is None else row["attempts"] + 1
        self.conn.execute(
            "INSERT INTO runs(job, period, status, trigger, started, attempts, pid) "
            "VALUES (?, ?, 'running', ?, ?, ?, ?) "
            "ON CONFLICT(job, period) DO UPDATE SET status = 'running', trigger = excluded.trigger, "
            "started = excluded.started, ended = NULL, attempts = excluded.attempts, outputs = '{}', "
            "warnings = '[]', error = NULL, pid = excluded.pid",
            (job, period, trigger, _now(), attempts, os.getpid()),
        )

    @_locked
    def finish(
        self, job: str, period: str, status: str, outputs: dict[str, Any], warnings: list[str], error: str | None = None
    ) -> None:
        self.conn.execute(
            "UPDATE runs SET status = ?, ended = ?, outputs = ?, warnings = ?, error = ? WHERE job = ? AND period = ?",
            (
                status,
                _now(),
                json.dumps(outputs, ensure_ascii=False, default=str),
                json.dumps(warnings, ensure_ascii=False),
                error,
                job,
                period,
            ),
        )
        self.conn.execute(
            "DELETE FROM runs WHERE job = ? AND period NOT IN "
            "(SELECT period FROM runs WHERE job = ? ORDER BY started DESC LIMIT ?)",
            (job, job, KEEP_ROWS_PER_JOB),
        )

    @_locked
    def mark_interrupted(self) -> int:
        """Rows left `running` by dead processes (a crash mid-job) become `interrupted`."""
        rows = self.conn.execute("SELECT job, period, pid FROM runs WHERE status = 'running'").fetchall()
        dead = [(r["job"], r["period"]) for r in rows if not pid_alive(r["pid"])]
        for job, period in dead:
            self.conn.execute(
                "UPDATE runs SET status = 'interrupted', ended = ?, error = ? WHERE job = ? AND period = ?",
                (_now(), "the process running this job died", job, period),
            )
        return len(dead)

    # -- reading -----------------------------------------------------------------------------
    @_locked
    def run(self, job: str, period: str) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT * FROM runs WHERE job = ? AND period = ?", (job, period)).fetchone()
        return None if row is None else _as_dict(row)

    @_locked
    def counts(self) -> dict[tuple[str, str], int]:
        """(job, status) -> how many runs the ledger holds (for /metrics)."""
        rows = self.conn.execute("SELECT job, status, count(*) FROM runs GROUP BY job, status").fetchall()
        return {(row[0], row[1]): row[2] for row in rows}

    @_locked
    def last_run(self, job: str) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT * FROM runs WHERE job = ? ORDER BY started DESC LIMIT 1", (job,)).fetchone()
        return None if row is None else _as_dict(row)

    @_locked
    def history(self, job: str, limit: int = 20) -> list[dict[str, Any]]:
        rows = self.conn.execute("SELECT * FROM runs WHERE job = ? ORDER BY started DESC LIMIT ?", (job, limit))
        return [_as_dict(row) for row in rows]

    @_locked
    def deferred(self, job: str, wait: dt.timedelta) -> list[str]:
        """Periods of `job` left deferred at least `wait` ago, oldest first."""
        rows = self.conn.execute(
            "SELECT period, ended FROM runs WHERE job = ? AND status = 'deferred' ORDER BY period", (job,)
        ).fetchall()
        now = dt.datetime.now(dt.UTC)
        return [row["period"] for row in rows if row["ended"] and now - dt.datetime.fromisoformat(row["ended"]) >= wait]

    @_locked
    def done_since(self, job: str, first_period: str) -> list[dict[str, Any]]:
        """Done runs (ok, warning) of `job` for periods from `first_period` on, oldest first."""
        rows = self.conn.execute(
            "SELECT * FROM runs WHERE job = ? AND status IN (?, ?) AND period >= ? ORDER BY period",
            (job, *DONE, first_period),
        )
        return [_as_dict(row) for row in rows]

    # -- schedule checks ---------------------------------------------------------------------
    @_locked
    def checked_through(self, job: str) -> dt.datetime | None:
        row = self.conn.execute("SELECT checked_through FROM checks WHERE job = ?", (job,)).fetchone()
        return None if row is None else dt.datetime.fromisoformat(row[0])

    @_locked
    def set_checked_through(self, job: str, moment: dt.datetime) -> None:
        self.conn.execute(
            "INSERT INTO checks(job, checked_through) VALUES (?, ?) "
            "ON CONFLICT(job) DO UPDATE SET checked_through = excluded.checked_through",
            (job, moment.isoformat()),
        )


def _refusal(row: sqlite3.Row, force: bool) -> str | None:
    status = row["status"]
    if status == "running" and pid_alive(row["pid"]):
        return f"already running (pid {row['pid']})"
    if force:
        return None
    if status in DONE:
        return "already done for this period"
    if status == "failed" and row["attempts"] >= MAX_ATTEMPTS:
        return f"failed {row['attempts']} times; run it by hand with --force"
    return None


def _as_dict(row: sqlite3.Row) -> dict[str, Any]:
    out = dict(row)
    out["outputs"] = json.loads(out["outputs"])
    out["warnings"] = json.loads(out["warnings"])
    return out
