"""The weekly digest job (dory/jobs/digest_weekly.py), run through the real service over daily digests the
daily-digest job made from real sessions: the page, its five sections in order, every bullet citing the
daily digest line it was carried from, open loops closed by a later day left behind, recurring words as
themes, projects touched, an empty week, idempotent re-runs, bad periods refused and broken dailies skipped.

The week is 2026-W46 (Monday 2026-11-09 to Sunday 2026-11-15); days are UTC (the job's zone is pinned).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.digest_corpus import ingest, new_corpus, page, rec, write_transcript

from dory.config import load_settings
from dory.errors import UsageError
from dory.jobs import digest_daily
from dory.jobs.digest import cited, sections_of
from dory.jobs.generated import body_hash
from dory.jobs.ledger import JobLedger
from dory.models import JobRun, JobRunRequest
from dory.service import DoryService
from dory.sessions.transcript import Session, new_message

WEEK = "2026-W46"
WEEKLY = f"digests/weekly/{WEEK}.md"
MON, WED, FRI = "2026-11-09", "2026-11-11", "2026-11-13"
DAYS = (MON, WED, FRI)
SECTIONS = ["Days", "Themes", "Decisions", "Open Loops Carried Forward", "Projects Touched"]


def daily(day: str) -> str:
    return f"digests/daily/{day}.md"


def at(day: str, clock: str) -> str:
    return f"{day}T{clock}Z"


@dataclass
class Week:
    root: Path
    svc: DoryService

    def run(self, period: str = WEEK, **fields: Any) -> JobRun:
        return self.svc.run_job(JobRunRequest(job="weekly-digest", period=period, **fields))

    def daily(self, day: str) -> JobRun:
        return self.svc.run_job(JobRunRequest(job="daily-digest", period=day))

    def file(self, period: str = WEEK) -> Path:
        return self.root / "digests" / "weekly" / f"{period}.md"

    def sections(self) -> dict[str, list[str]]:
        return sections_of(page(self.file().read_bytes())[1])

    def daily_line(self, day: str, number: int) -> str:
        return (self.root / daily(day)).read_text(encoding="utf-8").split("\n")[number - 1]

    def ledger_row(self, period: str) -> dict[str, Any] | None:
        ledger = JobLedger(self.svc.settings.ledger_path)
        try:
            return ledger.run("weekly-digest", period)
        finally:
            ledger.close()


def sessions(root: Path, svc: DoryService) -> None:
    """Monday opens two loops (one edits the garden project); Wednesday decides what closes the first;
    Friday works in the ledger project. Tuesday, Thursday and the weekend have no sessions."""
    ingest(
        svc,
        [
            rec(
                "user",
                at(MON, "09:00:00"),
                "Let us plan the uploader work for the ledger service.",
                session_id="s-mon",
                title="Uploader planning",
            ),
            rec("assistant", at(MON, "09:01:00"), "We decided to keep the ledger in SQLite because it is simple."),
            rec("user", at(MON, "09:02:00"), "TODO: add a retry to the uploader."),
            rec(
                "assistant",
                at(MON, "09:03:00"),
                "TODO: migrate the billing tables to postgres.",
                tool_calls=[{"name": "Edit", "arguments": {"file_path": "projects/garden/notes.md"}}],
            ),
        ],
    )
    ingest(
        svc,
        [
            rec(
                "user",
                at(WED, "10:00:00"),
                "The uploader keeps failing on flaky networks.",
                session_id="s-wed",
                title="Uploader retries",
            ),
            rec("assistant", at(WED, "10:01:00"), "We decided to add the retry to the uploader with backoff."),
        ],
    )
    messages = [
        new_message("s-fri", "user", at(FRI, "14:00:00"), "Review the ledger export format."),
        new_message("s-fri", "assistant", at(FRI, "14:05:00"), "The ledger export now writes one row per entry."),
    ]
    write_transcript(
        root,
        Session(
            "s-fri",
            "codex",
            "desk",
            title="Ledger export",
            status="done",
            started=at(FRI, "14:00:00"),
            updated=at(FRI, "14:05:00"),
            messages=messages,
            source_format="codex",
            extra={"cwd": "/home/me/projects/ledger"},
        ),
    )


@pytest.fixture(autouse=True)
def utc_days(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(digest_daily, "local_zone", lambda: dt.UTC)


@pytest.fixture
def bare(tmp_path: Path) -> Iterator[Week]:
    """A corpus from the template with the week's sessions, no digest made yet."""
    root = new_corpus(tmp_path / "corpus")
    svc = DoryService(load_settings(root, {"embedder.backend": "none", "digest.quiet_minutes": 0}, env={}))
    try:
        sessions(root, svc)
        yield Week(root, svc)
    finally:
        svc.close()


@pytest.fixture
def week(bare: Week) -> Week:
    """The week's daily digests, made by the daily-digest job."""
    for day in DAYS:
        assert bare.daily(day).status == "ok"
    return bare


def test_the_weekly_digest_page_and_its_sections(week: Week) -> None:
    run = week.run()
    assert (run.job, run.period, run.status, run.warnings, run.error, run.reason) == (
        "weekly-digest",
        WEEK,
        "ok",
        [],
        None,
        None,
    )
    assert run.outputs == {
        "dailies": 3,
        "bullets": 12,
        "skipped": 0,
        "written": 1,
        "unchanged": 0,
        "kept_edited": 0,
        "path": WEEKLY,
    }

    frontmatter, body = page(week.file().read_bytes())
    assert frontmatter == {
        "title": f"Weekly digest {WEEK}",
        "type": "digest-weekly",
        "status": "active",
        "week": WEEK,
        "week_start": "2026-11-09",
        "week_end": "2026-11-15",
        "source_digests": [daily(d) for d in DAYS],
        "source_kind": "generated",
        "generated_by": "dory weekly-digest",
        "generated_hash": body_hash(body),
    }
    lines = body.strip("\n").split("\n")
    assert lines[0] == f"# Weekly digest {WEEK} (2026-11-09 – 2026-11-15)"
    assert [line[3:] for line in lines if line.startswith("## ")] == SECTIONS

    got = week.sections()
    assert got["Days"] == [
        f"- 2026-11-09 (Monday): 1 sessions ([2026-11-09](/{daily(MON)}))",
        f"- 2026-11-11 (Wednesday): 1 sessions ([2026-11-11](/{daily(WED)}))",
        f"- 2026-11-13 (Friday): 1 sessions ([2026-11-13](/{daily(FRI)}))",
    ]
    assert [cited(line)[0] for line in got["Decisions"]] == [  # type: ignore[index]
        "We decided to keep the ledger in SQLite because it is simple.",
        "We decided to add the retry to the uploader with backoff.",
    ]
    assert [cited(line)[0] for line in got["Projects Touched"]] == ["`garden`: 1 days", "`ledger`: 1 days"]  # type: ignore[index]
    assert week.svc.store.conn.execute("SELECT count(*) FROM files WHERE path = ?", (WEEKLY,)).fetchone()[0] == 1


def test_every_bullet_cites_the_daily_digest_line_it_was_carried_from(week: Week) -> None:
    assert week.run().status == "ok"
    got = week.sections()
    checked = 0
    for title in SECTIONS[1:]:
        for line in got[title]:
            found = cited(line)
            assert found is not None, f"{title}: bullet without a citation: {line!r}"
            text, source = found
            assert source.path in {daily(d) for d in DAYS} and source.label == source.path[-13:-3], line
            assert source.line is not None
            carried = cited(week.daily_line(source.label, source.line))
            assert carried is not None, f"{title}: {line!r} cites a line that is not a daily bullet"
            origin = carried[0]
            if title == "Themes":
                assert text.endswith(f"; first: {origin}"), (text, origin)
            elif title == "Decisions":
                assert text == origin
            elif title == "Open Loops Carried Forward":
                assert text == f"{origin} (open since {source.label})"
            else:
                project = text.split("`")[1]
                assert f"`{project}`" in origin or f"`projects/{project}/" in origin, (text, origin)
            checked += 1
    assert checked == sum(len(got[t]) for t in SECTIONS[1:]) > 0
    # The Days lines cite the daily digest itself (its first line).
    assert {cited(line)[1].line for line in got["Days"]} == {None}  # type: ignore[index]  # the whole daily


def test_a_loop_closed_by_a_later_day_is_left_behind_and_an_open_one_is_carried(week: Week) -> None:
    mon = sections_of(page((week.root / daily(MON)).read_bytes())[1])
    assert [cited(line)[0] for line in mon["Open Loops and TODOs"]] == [  # type: ignore[index]
        "TODO: add a retry to the uploader.",
        "TODO: migrate the billing tables to postgres.",
    ]
    assert week.run().status == "ok"
    loops = week.sections()["Open Loops Carried Forward"]
    # Wednesday's decision ("add the retry to the uploader") closes the first; nothing closes the second.
    assert [cited(line)[0] for line in loops] == [  # type: ignore[index]
        "TODO: migrate the billing tables to postgres. (open since 2026-11-09)"
    ]
    assert "add a retry" not in "\n".join(loops)


def test_a_loop_is_not_closed_by_its_own_day_or_an_earlier_one(bare: Week) -> None:
    """Without Wednesday's session, the retry loop stays open: Monday's own bullets do not close it."""
    for day in (MON, FRI):
        assert bare.daily(day).status == "ok"
    assert bare.run().status == "ok"
    assert [cited(line)[0] for line in bare.sections()["Open Loops Carried Forward"]] == [  # type: ignore[index]
        "TODO: add a retry to the uploader. (open since 2026-11-09)",
        "TODO: migrate the billing tables to postgres. (open since 2026-11-09)",
    ]


def test_words_said_on_two_days_are_themes_and_words_of_one_day_are_not(week: Week) -> None:
    assert week.run().status == "ok"
    themes = {cited(line)[0].split("**")[1]: cited(line)[0] for line in week.sections()["Themes"]}  # type: ignore[index]
    assert len(themes) <= 8
    assert themes["uploader"].startswith("**uploader**: 2 days, 4 mentions; first: ")
    assert themes["ledger"].startswith("**ledger**: 2 days, 4 mentions; first: ")  # Monday and Friday
    assert themes["retry"].startswith("**retry**: 2 days, 2 mentions; first: TODO: add a retry to the uploader.")
    for once in ("billing", "postgres", "export", "flaky", "backoff"):  # said on one day only
        assert once not in themes


def test_the_digest_template_words_are_not_themes(week: Week) -> None:
    assert week.run().status == "ok"
    themes = [cited(line)[0].split("**")[1] for line in week.sections()["Themes"]]  # type: ignore[index]
    assert "turns" not in themes and "unknown" not in themes


def test_a_week_without_daily_digests_is_a_warning_and_writes_no_file(week: Week) -> None:
    run = week.run("2026-W45")
    assert (run.status, run.warnings) == ("warning", ["weekly-digest produced nothing for 2026-W45"])
    assert run.outputs == {"dailies": 0, "bullets": 0, "skipped": 0, "written": 0}
    assert not week.file("2026-W45").exists()


def test_the_asked_for_week_without_dailies_is_a_warning(bare: Week) -> None:
    run = bare.run()
    assert (run.status, run.warnings) == ("warning", [f"weekly-digest produced nothing for {WEEK}"])
    assert not bare.file().exists()
    assert sorted(p.name for p in (bare.root / "digests" / "weekly").iterdir()) == [".gitkeep"]


def test_runs_are_idempotent(week: Week) -> None:
    assert week.run().status == "ok"
    original = week.file().read_bytes()
    again = week.run()
    assert (again.status, again.reason) == ("skipped", "already done for this period")
    forced = week.run(force=True)
    assert (forced.status, forced.attempts, forced.warnings) == ("ok", 2, [])
    assert (forced.outputs["written"], forced.outputs["unchanged"], forced.outputs["kept_edited"]) == (0, 1, 0)
    assert week.file().read_bytes() == original


def test_a_dry_run_writes_nothing(week: Week) -> None:
    dry = week.run(dry_run=True)
    assert (dry.status, dry.outputs["written"], dry.outputs["path"]) == ("dry_run", 1, WEEKLY)
    assert not week.file().exists() and week.ledger_row(WEEK) is None


def week_key(day: dt.date) -> str:
    year, number, _ = day.isocalendar()
    return f"{year}-W{number:02d}"


BAD_PERIODS = [
    ("2026-W60", "period '2026-W60' is not an ISO week (YYYY-Www, e.g. 2026-W46)"),
    ("2026-W00", "period '2026-W00' is not an ISO week (YYYY-Www, e.g. 2026-W46)"),
    ("2025-W53", "period '2025-W53' is not an ISO week (YYYY-Www, e.g. 2026-W46)"),
    ("2026-46", "period '2026-46' is not an ISO week (YYYY-Www, e.g. 2026-W46)"),
    ("2026-11-09", "period '2026-11-09' is not an ISO week (YYYY-Www, e.g. 2026-W46)"),
    ("2026-W46-1", "period '2026-W46-1' is not an ISO week (YYYY-Www, e.g. 2026-W46)"),
    (
        "../x",
        "period '../x' for job weekly-digest is not a date, week or time key (letters, digits, '-', ':' and 'T' only)",
    ),
]


@pytest.mark.parametrize(("period", "message"), BAD_PERIODS)
def test_a_period_that_is_not_an_iso_week_is_a_usage_error(week: Week, period: str, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        week.run(period)
    assert caught.value.message == message
    assert week.ledger_row(period) is None
    assert sorted(p.name for p in (week.root / "digests" / "weekly").iterdir()) == [".gitkeep"]


def test_a_week_that_has_not_started_is_a_usage_error(week: Week) -> None:
    period = week_key(dt.date.today() + dt.timedelta(days=7))
    with pytest.raises(UsageError) as caught:
        week.run(period)
    assert caught.value.message == f"{period} has not started yet"
    assert week.ledger_row(period) is None and not week.file(period).exists()


def hand_daily(day: dt.date) -> str:
    return (
        f"---\ntitle: Daily digest {day}\ntype: digest-daily\nsessions: [s-now]\n---\n\n# Daily digest {day}\n\n"
        f"## Decisions\n- We decided to test the current week. ([m-0123456789ab](/logs/sessions/x.md#L16))\n"
    )


def test_the_current_week_run_by_hand_is_deferred(week: Week) -> None:
    monday = dt.date.fromisocalendar(*dt.date.today().isocalendar()[:2], 1)
    (week.root / daily(monday.isoformat())).write_text(hand_daily(monday), encoding="utf-8")
    period = week_key(monday)
    run = week.run(period)
    assert (run.status, run.warnings) == ("deferred", ["deferred: the week is not over yet"])
    assert week.file(period).exists()


def test_the_current_week_without_dailies_yet_is_deferred_not_done(week: Week) -> None:
    monday = dt.date.fromisocalendar(*dt.date.today().isocalendar()[:2], 1)
    period = week_key(monday)
    first = week.run(period)
    (week.root / daily(monday.isoformat())).write_text(hand_daily(monday), encoding="utf-8")
    second = week.run(period)  # what the scheduled run after Sunday does (no force)
    assert second.status != "skipped" and week.file(period).exists(), (first.status, second.reason)
    assert first.status == "deferred"


def test_an_unreadable_daily_digest_is_skipped_with_a_warning(week: Week) -> None:
    (week.root / daily("2026-11-10")).write_bytes(
        b"---\ntitle: bad\n---\n\n## Decisions\n- caf\xe9 au lait. ([m-0123456789ab](/logs/x.md#L1))\n"
    )
    (week.root / daily("2026-11-14")).write_bytes(b"---\ntitle: nul\n---\n\nhello\x00world\n")
    run = week.run()
    assert (run.status, run.error) == ("warning", None)
    assert run.warnings == [
        "skipped digests/daily/2026-11-10.md: not valid UTF-8: byte 0xe9 at offset 38",
        "skipped digests/daily/2026-11-14.md: contains NUL bytes at offset 25 (binary file?)",
    ]
    assert (run.outputs["dailies"], run.outputs["skipped"], run.outputs["written"]) == (3, 2, 1)
    assert page(week.file().read_bytes())[0]["source_digests"] == [daily(d) for d in DAYS]
    assert "au lait" not in week.file().read_text(encoding="utf-8")


BROKEN_YAML = (
    "---\ntitle: [unclosed\nsessions: [s-x]\n---\n\n# Daily digest 2026-11-12\n\n## Decisions\n"
    "- We decided to rename the uploader module. ([m-0123456789ab](/logs/sessions/x.md#L9))\n"
)


def test_a_daily_digest_with_broken_frontmatter_is_not_fatal(week: Week) -> None:
    (week.root / daily("2026-11-12")).write_text(BROKEN_YAML, encoding="utf-8")
    run = week.run()
    assert run.status in ("ok", "warning") and run.error is None
    assert run.outputs["written"] == 1
    assert week.file().exists()


def test_a_daily_digest_with_broken_frontmatter_is_reported(week: Week) -> None:
    (week.root / daily("2026-11-12")).write_text(BROKEN_YAML, encoding="utf-8")
    run = week.run()
    assert any("digests/daily/2026-11-12.md" in w for w in run.warnings), run.warnings
    # Its Days line counts the session lines it holds (none here), not what its broken frontmatter claims.
    assert any(line.startswith("- 2026-11-12 (Thursday): 0 sessions") for line in week.sections()["Days"])
