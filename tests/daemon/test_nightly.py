"""The nightly cycle on a real daemon: a week of sessions, every job on a 2-second cron.

Digest periods are days, so a cron that fires every 2 seconds still runs each job once per day:
the daemon's first look digests the days of the catch-up window, dreaming, maintenance and the wiki
run once for today. Downtime cannot be waited for in a test, so the restart case builds the state
a daemon stopped three days ago leaves behind (its ledger last looked three days ago and has no
runs or digests for the days since) and checks that the restarted daemon fills exactly that gap.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path

from support.daemon import daemon_env, wait_until

from dory.corpus.template import copy_template
from dory.index.store import now_iso
from dory.jobs.digest import cited, sections_of
from dory.jobs.digest_daily import SECTIONS as DAILY_SECTIONS
from dory.jobs.digest_weekly import SECTIONS as WEEKLY_SECTIONS
from dory.jobs.ledger import JobLedger
from dory.sessions.transcript import Session, message_at_line, new_message, parse_session, render_session, session_path

EVERY_2S = "*/2 * * * * *"
NIGHTLY = ("daily-digest", "weekly-digest", "dream", "maintain", "wiki-refresh")


def write_week(root: Path, today: dt.date) -> list[dt.date]:
    """One finished session on each of the last seven days (mid-day UTC), with a decision, work,
    a TODO and exact values."""
    days = [today - dt.timedelta(days=n) for n in range(7, 0, -1)]
    for n, day in enumerate(days):
        sid = f"week-{n}"
        at = f"{day.isoformat()}T12:0{{}}:00Z"
        messages = [
            new_message(
                sid,
                "user",
                at.format(0),
                f"We decided to use approach number {n} for the importer because it keeps every line.",
            ),
            new_message(
                sid,
                "assistant",
                at.format(1),
                f"I fixed the parser in dory/part{n}.py and ran the suite.\n\n$ pytest -q tests/part{n}",
                tool_calls=[f"Edit: dory/part{n}.py"],
            ),
            new_message(
                sid, "user", at.format(2), f"TODO: document option {n} in the README. See https://example.com/issue/{n}"
            ),
        ]
        session = Session(
            sid,
            "claude",
            "laptop",
            title=f"importer work {n}",
            status="done",
            started=at.format(0),
            updated=at.format(2),
            messages=messages,
        )
        path = root / session_path(session)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(render_session(session))
        old = time.time() - 3 * 3600
        os.utime(path, (old, old))
    return days


def runs(daemon, job: str) -> list[dict]:
    ledger = JobLedger(daemon.settings.ledger_path)
    try:
        return ledger.history(job, 500)
    finally:
        ledger.close()


def nightly_env(catch_up_days: int) -> dict[str, str]:
    env = {f"DORY_JOBS_{job.upper().replace('-', '_')}": EVERY_2S for job in NIGHTLY if job != "wiki-refresh"}
    return daemon_env(DORY_DAEMON_CATCH_UP_DAYS=str(catch_up_days), **env)


def check_daily(root: Path, day: dt.date) -> None:
    text = (root / f"digests/daily/{day.isoformat()}.md").read_text(encoding="utf-8")
    sections = sections_of(text)
    assert list(sections) == list(DAILY_SECTIONS)
    bullets = [line for lines in sections.values() for line in lines if line != "- None"]
    assert bullets and all(cited(line) for line in bullets), bullets
    for line in bullets:  # every citation opens on the heading of the turn it names
        _, source = cited(line)  # type: ignore[misc]
        session = parse_session(source.path, (root / source.path).read_bytes())
        turn = message_at_line(session, source.line)
        assert turn is not None and turn.id == source.label and turn.start_line == source.line
    assert any("We decided to use approach" in line for line in sections["Decisions"])
    assert any("TODO: document option" in line for line in sections["Open Loops and TODOs"])
    assert any("https://example.com/issue/" in line for line in sections["Important Values"])


def test_a_week_of_sessions_runs_every_job_once_per_period(tmp_path: Path, daemon_factory) -> None:
    root = tmp_path / "corpus"
    copy_template(root)
    today = dt.date.today()
    days = write_week(root, today)
    daemon = daemon_factory(root, nightly_env(catch_up_days=8)).start()

    def all_ran() -> bool:
        rows = {job: runs(daemon, job) for job in NIGHTLY}
        return (
            len(rows["daily-digest"]) >= 7
            and all(rows.values())
            and all(r["status"] != "running" for job_rows in rows.values() for r in job_rows)
        )

    wait_until(all_ran, 90, "the nightly jobs")
    daemon.wait_idle()

    # Every job ran once per period.
    for job in NIGHTLY:
        rows = runs(daemon, job)
        assert len({r["period"] for r in rows}) == len(rows), job
        assert all(r["attempts"] == 1 and r["status"] in ("ok", "warning") for r in rows), (job, rows)
    digest_periods = {r["period"] for r in runs(daemon, "daily-digest")}
    assert {d.isoformat() for d in days} <= digest_periods
    assert {r["period"] for r in runs(daemon, "dream")} == {today.isoformat()}
    for day in days:
        check_daily(root, day)
    weekly = sorted((root / "digests/weekly").glob("*.md"))
    assert weekly, "a weekly digest of the last complete week"
    assert list(sections_of(weekly[-1].read_text(encoding="utf-8"))) == list(WEEKLY_SECTIONS)
    (dream,) = runs(daemon, "dream")
    assert dream["outputs"]["written"] == 7  # one decision a day, each its own proposal
    assert len(list((root / "inbox/proposed").glob("*.json"))) == 7
    assert (root / "wiki/hot.md").is_file() and (root / "wiki/index.md").is_file()
    assert list((root / "inbox/maintenance").glob("*.md"))

    # Re-runs change nothing: same bytes, no new proposals.
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and ".dory" not in p.parts}
    week = runs(daemon, "weekly-digest")[0]["period"]
    for job, period in (
        ("daily-digest", days[-1].isoformat()),
        ("dream", today.isoformat()),
        ("wiki-refresh", today.isoformat()),
        ("weekly-digest", week),
    ):
        code, run, err = daemon.cli("ops", "run", job, "--period", period, "--force")
        assert code == 0, err
        assert run["outputs"].get("written", 0) == 0, (job, run)
    after = {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and ".dory" not in p.parts}
    assert after == before

    code, jobs, err = daemon.cli("ops", "jobs")
    assert code == 0, err
    shown = {j["name"]: j for j in jobs["jobs"]}
    assert set(NIGHTLY) <= set(shown)
    assert all(shown[job]["last_run"] is not None for job in NIGHTLY)
    assert all(shown[job]["next_run"] for job in NIGHTLY)
    assert shown["wiki-refresh"]["schedule"] == "after dream"
    assert daemon.stop() == 0


def test_a_restarted_daemon_digests_the_days_it_missed(tmp_path: Path, daemon_factory) -> None:
    root = tmp_path / "corpus"
    copy_template(root)
    today = dt.date.today()
    days = write_week(root, today)
    daemon = daemon_factory(root, nightly_env(catch_up_days=8)).start()
    wait_until(lambda: len(runs(daemon, "daily-digest")) >= 7, 90, "the first digests")
    daemon.wait_idle()
    assert daemon.stop() == 0
    first_runs = {r["period"]: r for r in runs(daemon, "daily-digest")}

    # The state of a daemon stopped three days ago: no digests and no runs for the last three days.
    missed = days[-3:]
    kept = {d: (root / f"digests/daily/{d.isoformat()}.md").read_bytes() for d in days[:-3]}
    ledger = JobLedger(daemon.settings.ledger_path)
    try:
        for day in missed:
            ledger.conn.execute("DELETE FROM runs WHERE job = 'daily-digest' AND period = ?", (day.isoformat(),))
            (root / f"digests/daily/{day.isoformat()}.md").unlink()
        three_days_ago = dt.datetime.now().astimezone() - dt.timedelta(days=3)
        ledger.set_checked_through("daily-digest", three_days_ago)
    finally:
        ledger.close()

    restarted = now_iso("microseconds")
    daemon.start()
    wait_until(
        lambda: all((root / f"digests/daily/{d.isoformat()}.md").is_file() for d in missed), 60, "the missed digests"
    )
    daemon.wait_idle()
    rows = {r["period"]: r for r in runs(daemon, "daily-digest")}
    for day in missed:
        # Whichever look found them first (start-up catch-up, the cron, the heartbeat), once each.
        assert rows[day.isoformat()]["started"] > restarted and rows[day.isoformat()]["attempts"] == 1
        check_daily(root, day)
    for day, data in kept.items():  # the days already done are not run again
        assert rows[day.isoformat()] == first_runs[day.isoformat()]
        assert (root / f"digests/daily/{day.isoformat()}.md").read_bytes() == data
    assert daemon.stop() == 0
