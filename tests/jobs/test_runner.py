"""JobRunner: catch-up after downtime, once per period, failures recorded, manual and dry runs."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from dory.config import Settings, load_settings
from dory.errors import NotFound, UsageError
from dory.jobs import registry
from dory.jobs.ledger import JobLedger
from dory.jobs.registry import JobContext, JobResult, JobSpec, get_job
from dory.jobs.runner import JobRunner, validate_period
from dory.jobs.schedule import local_zone
from dory.models import ReindexResponse


def make_settings(root: Path, **overrides: Any) -> Settings:
    return load_settings(root, overrides, env={})


def local(*args: int) -> dt.datetime:
    return dt.datetime(*args, tzinfo=local_zone())


class Clock:
    def __init__(self, now: dt.datetime) -> None:
        self.now = now

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += dt.timedelta(**delta)


class FakeIndex:
    """Stands in for the daemon's index access: counts reconciles, returns a canned report."""

    def __init__(self, warnings: list[str] | None = None, new: int = 1) -> None:
        self.calls = 0
        self.warnings = warnings or []
        self.new = new

    def reconcile(self) -> ReindexResponse:
        self.calls += 1
        return ReindexResponse(
            new=self.new,
            changed=2,
            renamed=0,
            deleted=0,
            touched=3,
            unchanged=4,
            skipped=[],
            chunks_written=5,
            vectors_embedded=0,
            vectors_reused=0,
            vectors_pending=0,
            seconds=0.01,
            warnings=list(self.warnings),
        )


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "note.md").write_text("# hello\n", encoding="utf-8")
    return root


@pytest.fixture
def clock() -> Clock:
    return Clock(local(2024, 1, 1, 0, 5))


@pytest.fixture
def make_runner(corpus: Path, clock: Clock) -> Iterator[Callable[..., tuple[JobRunner, FakeIndex]]]:
    ledgers: list[JobLedger] = []

    def build(index: FakeIndex | None = None, **overrides: Any) -> tuple[JobRunner, FakeIndex]:
        settings = make_settings(corpus, **overrides)
        ledger = JobLedger(settings.ledger_path)
        ledgers.append(ledger)
        index = index or FakeIndex()
        return JobRunner(settings, ledger, index, clock=clock), index

    yield build
    for ledger in ledgers:
        ledger.close()


def add_job(
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    run: Callable[[JobContext], JobResult],
    schedule: str = "*/10 * * * *",
    **kw: Any,
) -> list[str]:
    """Register a temporary job; returns the list of periods it was called for."""
    calls: list[str] = []

    def wrapped(ctx: JobContext) -> JobResult:
        calls.append(ctx.period)
        return run(ctx)

    monkeypatch.setitem(registry.JOBS, name, JobSpec(name, f"test job {name}", schedule, wrapped, **kw))
    return calls


def test_first_look_only_records_checked_through(make_runner, clock: Clock) -> None:
    runner, index = make_runner()
    assert runner.ledger.checked_through("reconcile") is None
    assert runner.run_due("reconcile") == []
    assert runner.ledger.checked_through("reconcile") == clock.now
    assert index.calls == 0
    assert runner.ledger.history("reconcile") == []


def test_latest_catch_up_runs_only_the_newest_missed_period_once(make_runner, clock: Clock) -> None:
    runner, index = make_runner()
    runner.run_due("reconcile")
    clock.advance(minutes=30)  # 00:35: fire times 00:10, 00:20 and 00:30 were missed
    runs = runner.run_due("reconcile")
    assert [(r.period, r.status, r.trigger) for r in runs] == [("2024-01-01T00:30", "ok", "schedule")]
    assert runs[0].outputs == {"new": 1, "changed": 2, "renamed": 0, "deleted": 0, "touched": 3, "skipped": 0}
    assert runs[0].attempts == 1 and runs[0].started and runs[0].ended
    assert index.calls == 1
    assert [row["period"] for row in runner.ledger.history("reconcile")] == ["2024-01-01T00:30"]
    assert runner.ledger.checked_through("reconcile") == clock.now
    assert runner.run_due("reconcile") == []
    clock.advance(minutes=4)  # 00:39: still no new fire time
    assert runner.run_due("reconcile") == []
    assert index.calls == 1
    clock.advance(minutes=1)  # 00:40 exactly: due
    assert [r.period for r in runner.run_due("reconcile")] == ["2024-01-01T00:40"]
    assert index.calls == 2


def test_run_due_skips_a_period_already_run_by_hand(make_runner, clock: Clock) -> None:
    runner, index = make_runner()
    runner.run_due("reconcile")
    clock.advance(minutes=6)  # 00:11
    assert runner.run("reconcile").period == "2024-01-01T00:10"
    runs = runner.run_due("reconcile")
    assert [(r.period, r.status, r.reason) for r in runs] == [
        ("2024-01-01T00:10", "skipped", "already done for this period")
    ]
    assert index.calls == 1


def test_catch_up_all_runs_every_missed_period_once(make_runner, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = add_job(monkeypatch, "digest_all", lambda ctx: JobResult(outputs={"lines": 1}), catch_up="all")
    runner, _ = make_runner()
    assert runner.run_due("digest_all") == []
    clock.advance(minutes=30)
    runs = runner.run_due("digest_all")
    expected = ["2024-01-01T00:10", "2024-01-01T00:20", "2024-01-01T00:30"]
    assert [(r.period, r.status) for r in runs] == [(p, "ok") for p in expected]
    assert calls == expected
    assert runner.run_due("digest_all") == []
    assert calls == expected
    assert sorted(row["period"] for row in runner.ledger.history("digest_all")) == expected


def test_catch_up_days_bounds_the_look_back(make_runner, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = add_job(
        monkeypatch, "daily_all", lambda ctx: JobResult(outputs={"n": 1}), schedule="0 3 * * *", catch_up="all"
    )
    runner, _ = make_runner(**{"daemon.catch_up_days": 2})
    runner.run_due("daily_all")  # 2024-01-01 00:05
    clock.advance(days=10)  # 2024-01-11 00:05: ten daily fire times were missed
    runs = runner.run_due("daily_all")
    assert [r.period for r in runs] == ["2024-01-09T03:00", "2024-01-10T03:00"]
    assert calls == ["2024-01-09T03:00", "2024-01-10T03:00"]


def test_catch_up_days_zero_still_runs_the_current_period(make_runner, clock: Clock) -> None:
    runner, index = make_runner(**{"daemon.catch_up_days": 0})
    runner.run_due("reconcile")  # 00:05
    clock.advance(minutes=5, milliseconds=200)  # the scheduler wakes 0.2 s after the 00:10 fire time
    runs = runner.run_due("reconcile")
    assert [r.period for r in runs] == ["2024-01-01T00:10"]
    assert index.calls == 1


def test_failing_job_is_recorded_and_does_not_raise(make_runner, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(ctx: JobContext) -> JobResult:
        raise ValueError("the disk is made of cheese")

    add_job(monkeypatch, "broken", boom)
    runner, _ = make_runner()
    runner.run_due("broken")
    clock.advance(minutes=10)
    runs = runner.run_due("broken")
    assert [(r.period, r.status) for r in runs] == [("2024-01-01T00:10", "failed")]
    assert runs[0].error == "ValueError: the disk is made of cheese"
    row = runner.ledger.run("broken", "2024-01-01T00:10")
    assert (row["status"], row["error"], row["outputs"], row["attempts"]) == (
        "failed",
        "ValueError: the disk is made of cheese",
        {},
        1,
    )
    # a failed period can be retried (by hand here) until MAX_ATTEMPTS
    again = runner.run("broken", "2024-01-01T00:10")
    assert (again.status, again.attempts) == ("failed", 2)


def test_warn_if_empty_adds_a_warning(make_runner, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    add_job(monkeypatch, "digest", lambda ctx: JobResult(outputs={"lines": 0, "files": []}), warn_if_empty=True)
    add_job(monkeypatch, "quiet", lambda ctx: JobResult(outputs={"lines": 0}))
    runner, _ = make_runner()
    run = runner.run("digest", "2024-01-01")
    assert (run.status, run.warnings) == ("warning", ["digest produced nothing for 2024-01-01"])
    assert runner.ledger.run("digest", "2024-01-01")["warnings"] == ["digest produced nothing for 2024-01-01"]
    assert runner.run("quiet", "2024-01-01").status == "ok"  # empty is normal without warn_if_empty


def test_warn_if_empty_is_quiet_when_something_was_produced(make_runner, monkeypatch: pytest.MonkeyPatch) -> None:
    add_job(monkeypatch, "digest", lambda ctx: JobResult(outputs={"sessions": 0, "written": 1}), warn_if_empty=True)
    add_job(monkeypatch, "again", lambda ctx: JobResult(outputs={"written": 0, "unchanged": 1}), warn_if_empty=True)
    runner, _ = make_runner()
    assert (runner.run("digest", "2024-01-01").status, runner.run("again", "2024-01-01").status) == ("ok", "ok")


def test_reconcile_warnings_make_a_warning_run(make_runner) -> None:
    runner, _ = make_runner(FakeIndex(warnings=["vectors not built: no model"]))
    run = runner.run("reconcile", "2024-01-01T00:00")
    assert (run.status, run.warnings) == ("warning", ["vectors not built: no model"])


def test_manual_run_uses_the_current_period_and_refuses_a_second_time(make_runner, clock: Clock) -> None:
    clock.advance(minutes=30)  # 00:35
    runner, index = make_runner()
    assert runner.current_period("reconcile") == "2024-01-01T00:30"
    first = runner.run("reconcile")
    assert (first.period, first.status, first.trigger) == ("2024-01-01T00:30", "ok", "manual")
    second = runner.run("reconcile")
    assert (second.status, second.reason) == ("skipped", "already done for this period")
    forced = runner.run("reconcile", force=True)
    assert (forced.status, forced.attempts) == ("ok", 2)
    assert index.calls == 2


def test_six_field_schedule_periods_have_seconds(make_runner, clock: Clock) -> None:
    runner, _ = make_runner(**{"jobs.reconcile": "*/20 * * * * *"})
    clock.advance(seconds=50)  # 00:05:50
    assert runner.current_period("reconcile") == "2024-01-01T00:05:40"


@pytest.mark.parametrize("period", ["../x", "a b", "", "x" * 41, "2024/01/01", "a.b"])
def test_invalid_period_is_a_usage_error(make_runner, period: str) -> None:
    runner, index = make_runner()
    with pytest.raises(UsageError) as info:
        runner.run("reconcile", period or " ")
    assert info.value.details["job"] == "reconcile"
    assert index.calls == 0
    assert runner.ledger.history("reconcile") == []


@pytest.mark.parametrize("period", ["2024-01-01", "2024-W01", "2024-01-01T03:00", "2024-01-01T03:00:20", "x" * 40])
def test_valid_periods(period: str) -> None:
    validate_period(get_job("reconcile"), period)


def test_unknown_job_is_not_found(make_runner) -> None:
    runner, _ = make_runner()
    with pytest.raises(NotFound, match=r"no job named 'nope'; jobs: .*reconcile"):
        runner.run("nope")


def test_dry_run_records_nothing(make_runner, monkeypatch: pytest.MonkeyPatch) -> None:
    runner, index = make_runner()
    run = runner.run("reconcile", "2024-01-01T00:00", dry_run=True)
    assert (run.status, run.outputs) == ("dry_run", {"dry_run": True})
    assert index.calls == 0
    assert runner.ledger.run("reconcile", "2024-01-01T00:00") is None
    # a real run afterwards is not refused
    assert runner.run("reconcile", "2024-01-01T00:00").status == "ok"


def test_dry_run_of_a_failing_job_reports_failed_without_recording(
    make_runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(ctx: JobContext) -> JobResult:
        assert ctx.dry_run
        raise RuntimeError("nope")

    add_job(monkeypatch, "broken", boom)
    runner, _ = make_runner()
    run = runner.run("broken", "p1", dry_run=True)
    assert (run.status, run.error) == ("failed", "RuntimeError: nope")
    assert runner.ledger.history("broken") == []


def test_disabled_schedule_runs_nothing(make_runner, clock: Clock) -> None:
    runner, index = make_runner(**{"jobs.reconcile": "off"})
    assert runner.run_due("reconcile") == []
    clock.advance(days=1)
    assert runner.run_due("reconcile") == []
    assert runner.ledger.checked_through("reconcile") is None
    assert index.calls == 0
    # a manual run still works; its period is the current second
    assert runner.current_period("reconcile") == "2024-01-02T00:05:00"
    assert runner.run("reconcile").status == "ok"


def test_run_all_due_covers_every_registered_job(make_runner, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = add_job(monkeypatch, "extra", lambda ctx: JobResult(outputs={"n": 1}), schedule="*/15 * * * *")
    others = ("daily-digest", "weekly-digest", "dream", "maintain", "migrate-inbox")
    runner, index = make_runner(**{f"jobs.{name}": "off" for name in others})
    assert runner.run_all_due("heartbeat") == []
    clock.advance(minutes=30)  # 00:35
    runs = runner.run_all_due("heartbeat")
    assert sorted((r.job, r.period, r.trigger) for r in runs) == [
        ("extra", "2024-01-01T00:30", "heartbeat"),
        ("reconcile", "2024-01-01T00:30", "heartbeat"),
    ]
    assert calls == ["2024-01-01T00:30"]
    assert index.calls == 1


def test_settings_schedule_overrides_the_default(make_runner, clock: Clock) -> None:
    runner, index = make_runner(**{"jobs.reconcile": "0 * * * *"})
    runner.run_due("reconcile")
    clock.advance(minutes=30)  # 00:35: no hourly fire time yet
    assert runner.run_due("reconcile") == []
    clock.advance(minutes=30)  # 01:05
    assert [r.period for r in runner.run_due("reconcile")] == ["2024-01-01T01:00"]
    assert index.calls == 1


def test_heartbeat_look_on_dst_fall_back_night_returns(make_runner, clock: Clock, berlin_bounded: ZoneInfo) -> None:
    berlin = berlin_bounded
    runner, index = make_runner()
    clock.now = dt.datetime(2024, 10, 27, 2, 49, 30, tzinfo=berlin)  # CEST, half an hour before clocks go back
    runner.run_due("reconcile")
    clock.advance(seconds=30)  # the next heartbeat: 02:50 CEST
    assert [r.period for r in runner.run_due("reconcile")] == ["2024-10-27T02:50"]
    assert index.calls == 1


def test_a_sweep_job_asked_to_run_while_it_runs_is_skipped_at_once(
    make_runner, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    inside, release = threading.Event(), threading.Event()

    def long_sweep(ctx: JobContext) -> JobResult:
        inside.set()
        assert release.wait(60)
        return JobResult(outputs={"n": 1})

    calls = add_job(monkeypatch, "sweeper", long_sweep, schedule="*/2 * * * *", sweep=True)
    runner, _ = make_runner()
    first: list[Any] = []
    worker = threading.Thread(target=lambda: first.append(runner.run("sweeper", trigger="schedule")))
    worker.start()
    assert inside.wait(60)
    clock.advance(minutes=1)
    # By hand and by the heartbeat meanwhile: neither waits for the running sweep.
    assert runner.current_period("sweeper") == "2024-01-01T00:06:00"  # a run by hand is keyed by its moment
    busy = runner.run("sweeper")
    assert (busy.status, busy.reason, busy.trigger) == ("skipped", "already running", "manual")
    release.set()
    worker.join(60)
    assert first[0].status == "ok" and len(calls) == 1
    assert runner.run("sweeper").status == "ok"  # once it is done, the next run goes ahead
