"""The job ledger: one run per (job, period), crash recovery, retry limits, pruning, schedule checks."""

from __future__ import annotations

import datetime as dt
import itertools
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dory.jobs import ledger as ledger_mod
from dory.jobs.ledger import MAX_ATTEMPTS, JobLedger, pid_alive


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[JobLedger]:
    led = JobLedger(tmp_path / "state" / "jobs.sqlite")
    yield led
    led.close()


@pytest.fixture
def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert not pid_alive(proc.pid)
    return proc.pid


def set_pid(ledger: JobLedger, job: str, period: str, pid: int) -> None:
    ledger.conn.execute("UPDATE runs SET pid = ? WHERE job = ? AND period = ?", (pid, job, period))


def test_claim_and_finish_once_per_period(ledger: JobLedger) -> None:
    assert ledger.claim("reconcile", "2024-01-01T00:10", "schedule") is None
    row = ledger.run("reconcile", "2024-01-01T00:10")
    assert row is not None
    assert (row["status"], row["trigger"], row["attempts"], row["pid"]) == ("running", "schedule", 1, os.getpid())
    assert row["ended"] is None
    ledger.finish("reconcile", "2024-01-01T00:10", "ok", {"new": 2}, [])
    row = ledger.run("reconcile", "2024-01-01T00:10")
    assert (row["status"], row["outputs"], row["warnings"], row["error"]) == ("ok", {"new": 2}, [], None)
    assert row["ended"] is not None
    assert ledger.claim("reconcile", "2024-01-01T00:10", "manual") == "already done for this period"
    # another period, or the same period of another job, is independent
    assert ledger.claim("reconcile", "2024-01-01T00:20", "schedule") is None
    assert ledger.claim("digest", "2024-01-01T00:10", "schedule") is None


def test_warning_counts_as_done(ledger: JobLedger) -> None:
    ledger.claim("reconcile", "p1", "schedule")
    ledger.finish("reconcile", "p1", "warning", {}, ["empty"])
    assert ledger.claim("reconcile", "p1", "schedule") == "already done for this period"
    assert ledger.run("reconcile", "p1")["warnings"] == ["empty"]


def test_running_row_of_a_live_process_is_refused_even_with_force(ledger: JobLedger) -> None:
    assert ledger.claim("reconcile", "p1", "schedule") is None
    refusal = f"already running (pid {os.getpid()})"
    assert ledger.claim("reconcile", "p1", "manual") == refusal
    assert ledger.claim("reconcile", "p1", "manual", force=True) == refusal
    assert ledger.mark_interrupted() == 0
    assert ledger.run("reconcile", "p1")["status"] == "running"


def test_running_row_of_a_dead_process_is_interrupted_and_claimable(ledger: JobLedger, dead_pid: int) -> None:
    ledger.claim("reconcile", "p1", "schedule")
    ledger.claim("reconcile", "p2", "schedule")  # still ours: stays running
    set_pid(ledger, "reconcile", "p1", dead_pid)
    assert ledger.mark_interrupted() == 1
    row = ledger.run("reconcile", "p1")
    assert row["status"] == "interrupted"
    assert row["error"] == "the process running this job died"
    assert row["ended"] is not None
    assert ledger.run("reconcile", "p2")["status"] == "running"
    assert ledger.mark_interrupted() == 0  # idempotent
    assert ledger.claim("reconcile", "p1", "schedule") is None
    row = ledger.run("reconcile", "p1")
    assert (row["status"], row["attempts"], row["pid"], row["error"], row["ended"]) == (
        "running",
        2,
        os.getpid(),
        None,
        None,
    )


def test_dead_running_row_is_claimable_even_before_mark_interrupted(ledger: JobLedger, dead_pid: int) -> None:
    ledger.claim("reconcile", "p1", "schedule")
    set_pid(ledger, "reconcile", "p1", dead_pid)
    assert ledger.claim("reconcile", "p1", "schedule") is None
    assert ledger.run("reconcile", "p1")["attempts"] == 2


def test_failed_runs_are_retried_until_max_attempts(ledger: JobLedger) -> None:
    assert MAX_ATTEMPTS == 3
    for attempt in range(1, MAX_ATTEMPTS + 1):
        assert ledger.claim("reconcile", "p1", "schedule") is None
        assert ledger.run("reconcile", "p1")["attempts"] == attempt
        ledger.finish("reconcile", "p1", "failed", {}, [], error=f"boom {attempt}")
    row = ledger.run("reconcile", "p1")
    assert (row["status"], row["error"]) == ("failed", "boom 3")
    assert ledger.claim("reconcile", "p1", "schedule") == "failed 3 times; run it by hand with --force"
    assert ledger.claim("reconcile", "p1", "manual", force=True) is None
    row = ledger.run("reconcile", "p1")
    assert (row["status"], row["attempts"], row["trigger"], row["error"]) == ("running", 4, "manual", None)


def test_force_reruns_a_done_period_and_resets_the_row(ledger: JobLedger) -> None:
    ledger.claim("reconcile", "p1", "schedule")
    ledger.finish("reconcile", "p1", "warning", {"new": 1}, ["w"])
    assert ledger.claim("reconcile", "p1", "manual", force=True) is None
    row = ledger.run("reconcile", "p1")
    assert (row["status"], row["attempts"], row["trigger"]) == ("running", 2, "manual")
    assert (row["outputs"], row["warnings"], row["ended"]) == ({}, [], None)


def test_finish_keeps_outputs_as_json(ledger: JobLedger) -> None:
    ledger.claim("reconcile", "p1", "schedule")
    when = dt.date(2024, 1, 2)
    ledger.finish("reconcile", "p1", "ok", {"note": "ü", "when": when, "list": [1, 2]}, ["ä"])
    row = ledger.run("reconcile", "p1")
    assert row["outputs"] == {"note": "ü", "when": "2024-01-02", "list": [1, 2]}
    assert row["warnings"] == ["ä"]


def test_reading_unknown_rows(ledger: JobLedger) -> None:
    assert ledger.run("reconcile", "nope") is None
    assert ledger.last_run("reconcile") is None
    assert ledger.history("reconcile") == []
    assert ledger.checked_through("reconcile") is None


def test_checked_through_roundtrip(ledger: JobLedger) -> None:
    tz = dt.timezone(dt.timedelta(hours=-5))
    first = dt.datetime(2024, 1, 1, 3, 4, 5, 123456, tzinfo=tz)
    ledger.set_checked_through("reconcile", first)
    assert ledger.checked_through("reconcile") == first
    assert ledger.checked_through("reconcile").utcoffset() == dt.timedelta(hours=-5)
    later = first + dt.timedelta(days=1)
    ledger.set_checked_through("reconcile", later)
    assert ledger.checked_through("reconcile") == later
    assert ledger.checked_through("other") is None


@pytest.fixture
def ticking_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Give every ledger timestamp its own second so ordering is deterministic."""
    ticks = itertools.count()
    base = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    monkeypatch.setattr(
        ledger_mod, "_now", lambda: (base + dt.timedelta(seconds=next(ticks))).strftime("%Y-%m-%dT%H:%M:%SZ")
    )


@pytest.mark.usefixtures("ticking_clock")
def test_pruning_keeps_the_newest_rows_per_job(ledger: JobLedger, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ledger_mod, "KEEP_ROWS_PER_JOB", 3)
    for n in range(6):
        ledger.claim("reconcile", f"p{n}", "schedule")
        ledger.finish("reconcile", f"p{n}", "ok", {}, [])
    ledger.claim("other", "q0", "schedule")
    ledger.finish("other", "q0", "ok", {}, [])
    assert [row["period"] for row in ledger.history("reconcile", limit=10)] == ["p5", "p4", "p3"]
    assert [row["period"] for row in ledger.history("other")] == ["q0"]  # pruning is per job
    assert ledger.last_run("reconcile")["period"] == "p5"
    assert [row["period"] for row in ledger.history("reconcile", limit=2)] == ["p5", "p4"]
    # a pruned period is unknown again: it could be claimed
    assert ledger.run("reconcile", "p0") is None


def test_open_existing_never_creates_the_file(tmp_path: Path) -> None:
    path = tmp_path / "missing" / "jobs.sqlite"
    assert JobLedger.open_existing(path) is None
    assert not path.exists()
    assert not path.parent.exists()


def test_open_existing_reads_but_cannot_write(tmp_path: Path) -> None:
    path = tmp_path / "jobs.sqlite"
    writer = JobLedger(path)
    writer.claim("reconcile", "p1", "schedule")
    writer.finish("reconcile", "p1", "ok", {"new": 1}, [])
    reader = JobLedger.open_existing(path)
    assert reader is not None
    try:
        assert reader.run("reconcile", "p1")["outputs"] == {"new": 1}
        with pytest.raises(sqlite3.OperationalError):
            reader.claim("reconcile", "p2", "schedule")
    finally:
        reader.close()
        writer.close()


def test_two_ledgers_on_one_file_claim_a_period_once(tmp_path: Path) -> None:
    path = tmp_path / "jobs.sqlite"
    a, b = JobLedger(path), JobLedger(path)
    try:
        assert a.claim("reconcile", "p1", "schedule") is None
        assert b.claim("reconcile", "p1", "schedule") == f"already running (pid {os.getpid()})"
        a.finish("reconcile", "p1", "ok", {}, [])
        assert b.claim("reconcile", "p1", "schedule") == "already done for this period"
    finally:
        a.close()
        b.close()


def test_pid_alive() -> None:
    assert pid_alive(os.getpid())
    assert pid_alive(1)  # init exists; PermissionError or success both mean alive
