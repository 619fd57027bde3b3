"""Cron schedules: parsing, crontab weekday numbering, fire times between two moments."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from dory.errors import ConfigError
from dory.jobs import schedule as schedule_mod
from dory.jobs.schedule import OFF, local_zone, parse_schedule


def local(*args: int) -> dt.datetime:
    return dt.datetime(*args, tzinfo=local_zone())


# 2024-01-07 is a Sunday, 2024-01-08 a Monday.
SATURDAY_NOON = (2024, 1, 6, 12, 0)


def test_five_fields_fire_on_the_minute() -> None:
    sched = parse_schedule("*/10 * * * *", "reconcile")
    assert sched.enabled and not sched.has_seconds
    assert sched.spec == "*/10 * * * *"
    start = local(2024, 1, 1, 0, 0)
    assert sched.fire_times(start, local(2024, 1, 1, 0, 30)) == [
        local(2024, 1, 1, 0, 10),
        local(2024, 1, 1, 0, 20),
        local(2024, 1, 1, 0, 30),
    ]
    assert sched.next_after(local(2024, 1, 1, 0, 5, 59)) == local(2024, 1, 1, 0, 10)


def test_six_fields_put_seconds_first() -> None:
    sched = parse_schedule("*/20 * * * * *", "reconcile")
    assert sched.has_seconds
    start = local(2024, 1, 1, 0, 0)
    assert sched.fire_times(start, start + dt.timedelta(minutes=1)) == [
        local(2024, 1, 1, 0, 0, 20),
        local(2024, 1, 1, 0, 0, 40),
        local(2024, 1, 1, 0, 1, 0),
    ]


def test_whitespace_is_normalised() -> None:
    sched = parse_schedule("  0   3 *\t* *  ", "reconcile")
    assert sched.spec == "0 3 * * *"
    assert not sched.has_seconds


@pytest.mark.parametrize("spec", ["off", "OFF", "  Off  "])
def test_off_disables_the_job(spec: str) -> None:
    sched = parse_schedule(spec, "reconcile")
    assert sched.spec == OFF
    assert not sched.enabled
    assert sched.trigger is None
    assert sched.next_after(local(2024, 1, 1, 0, 0)) is None
    assert sched.fire_times(local(2024, 1, 1, 0, 0), local(2024, 2, 1, 0, 0)) == []


@pytest.mark.parametrize("spec", ["", "* * * *", "* * * * * * *", "daily", "never"])
def test_wrong_field_count_is_a_config_error(spec: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_schedule(spec, "reconcile")
    assert info.value.message == (
        f'jobs.reconcile: {spec!r} is not a cron schedule (five fields, six with seconds first, or "off")'
    )
    assert info.value.details == {"job": "reconcile", "schedule": spec}
    assert info.value.code == "config_error"


def test_out_of_range_weekday_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        parse_schedule("0 3 * * 8", "reconcile")
    assert info.value.message == "jobs.reconcile: invalid cron schedule '0 3 * * 8': weekday 8 is out of range 0-7"
    assert info.value.details == {"job": "reconcile", "schedule": "0 3 * * 8"}


@pytest.mark.parametrize("spec", ["61 * * * *", "* 24 * * *", "* * 32 * *", "* * * 13 *", "x * * * *"])
def test_invalid_field_is_a_config_error_naming_the_job(spec: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_schedule(spec, "reconcile")
    assert info.value.message.startswith(f"jobs.reconcile: invalid cron schedule {spec!r}: ")
    assert info.value.details == {"job": "reconcile", "schedule": spec}
    assert isinstance(info.value.__cause__, ValueError)


def test_monday_is_one() -> None:
    sched = parse_schedule("0 3 * * 1", "reconcile")
    fires = sched.fire_times(local(*SATURDAY_NOON), local(2024, 1, 20, 0, 0))
    assert fires == [local(2024, 1, 8, 3, 0), local(2024, 1, 15, 3, 0)]
    assert all(f.weekday() == 0 and f.tzinfo is not None for f in fires)
    assert fires[0].utcoffset() == local(2024, 1, 8, 3, 0).utcoffset()


@pytest.mark.parametrize("weekday", ["0", "7", "sun"])
def test_sunday_is_zero_or_seven(weekday: str) -> None:
    sched = parse_schedule(f"0 3 * * {weekday}", "reconcile")
    assert sched.next_after(local(*SATURDAY_NOON)) == local(2024, 1, 7, 3, 0)


def test_weekday_ranges_and_lists_use_crontab_numbers() -> None:
    start = local(*SATURDAY_NOON)
    week = start + dt.timedelta(days=7)
    weekdays = parse_schedule("0 3 * * 1-5", "reconcile").fire_times(start, week)
    assert [f.strftime("%a") for f in weekdays] == ["Mon", "Tue", "Wed", "Thu", "Fri"]
    weekend = parse_schedule("0 3 * * 6,0", "reconcile").fire_times(start, week)
    assert [f.strftime("%a") for f in weekend] == ["Sun", "Sat"]
    to_sunday = parse_schedule("0 3 * * 5-7", "reconcile").fire_times(start, week)
    assert [f.strftime("%a") for f in to_sunday] == ["Sun", "Fri", "Sat"]


def test_numbers_in_other_fields_are_not_translated() -> None:
    sched = parse_schedule("5 1 2 3 *", "reconcile")
    assert sched.next_after(local(2024, 1, 1, 0, 0)) == local(2024, 3, 2, 1, 5)


def test_weekday_range_starting_at_sunday() -> None:
    start = local(*SATURDAY_NOON)
    every_day = parse_schedule("0 3 * * 0-6", "reconcile").fire_times(start, start + dt.timedelta(days=7))
    assert len(every_day) == 7
    sun_to_tue = parse_schedule("0 3 * * 0-2", "reconcile").fire_times(start, start + dt.timedelta(days=7))
    assert [f.strftime("%a") for f in sun_to_tue] == ["Sun", "Mon", "Tue"]


def test_weekday_step_counts_from_sunday() -> None:
    start = local(*SATURDAY_NOON)
    fires = parse_schedule("0 3 * * */2", "reconcile").fire_times(start, start + dt.timedelta(days=7))
    assert [f.strftime("%a") for f in fires] == ["Sun", "Tue", "Thu", "Sat"]


def test_day_of_month_or_weekday_like_crontab() -> None:
    fires = parse_schedule("0 3 1 * 1", "reconcile").fire_times(local(2024, 1, 1, 4, 0), local(2024, 1, 31, 0, 0))
    assert [f.day for f in fires] == [8, 15, 22, 29]  # Mondays; plus the 1st of each month


def test_fire_times_after_is_exclusive_and_until_inclusive() -> None:
    sched = parse_schedule("*/10 * * * *", "reconcile")
    after, until = local(2024, 1, 1, 0, 10), local(2024, 1, 1, 0, 40)
    assert sched.fire_times(after, until) == [local(2024, 1, 1, 0, 20), local(2024, 1, 1, 0, 30), until]
    assert sched.fire_times(after, after) == []
    assert sched.fire_times(until, after) == []  # a backwards range is empty
    assert sched.fire_times(after, local(2024, 1, 1, 0, 19, 59)) == []


def test_fire_times_accepts_other_offsets_for_the_bounds() -> None:
    # The ledger stores checked_through as an ISO string: it comes back with a fixed offset.
    sched = parse_schedule("*/10 * * * *", "reconcile")
    after = local(2024, 1, 1, 0, 10).astimezone(dt.timezone(dt.timedelta(hours=5)))
    fires = sched.fire_times(after, local(2024, 1, 1, 0, 30))
    assert fires == [local(2024, 1, 1, 0, 20), local(2024, 1, 1, 0, 30)]


def test_fire_times_cap_keeps_the_newest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schedule_mod, "MAX_FIRE_TIMES", 3)
    sched = parse_schedule("* * * * *", "reconcile")
    start = local(2024, 1, 1, 0, 0)
    fires = sched.fire_times(start, start + dt.timedelta(minutes=10))
    assert fires == [start + dt.timedelta(minutes=m) for m in (8, 9, 10)]


def test_default_cap_is_large() -> None:
    assert schedule_mod.MAX_FIRE_TIMES == 10_000
    sched = parse_schedule("* * * * *", "reconcile")
    start = local(2024, 1, 1, 0, 0)
    fires = sched.fire_times(start, start + dt.timedelta(minutes=10_005))
    assert len(fires) == 10_000
    assert fires[-1] == start + dt.timedelta(minutes=10_005)
    assert fires[0] == start + dt.timedelta(minutes=6)


def test_fire_times_terminates_across_dst_fall_back(berlin_bounded: ZoneInfo) -> None:
    berlin = berlin_bounded
    sched = parse_schedule("0 * * * *", "reconcile")
    # 2024-10-27: clocks go back from 03:00 CEST to 02:00 CET in Berlin.
    after = dt.datetime(2024, 10, 27, 0, 30, tzinfo=berlin)
    until = dt.datetime(2024, 10, 27, 4, 30, tzinfo=berlin)
    fires = sched.fire_times(after, until)
    # 01:00 CEST, 02:00 CEST, [02:00 CET, the repeated hour, may be skipped], 03:00 CET, 04:00 CET
    in_utc = [f.astimezone(dt.UTC) for f in fires]
    assert in_utc == sorted(set(in_utc))  # strictly increasing in real time
    assert in_utc[0] == dt.datetime(2024, 10, 26, 23, 0, tzinfo=dt.UTC)
    assert in_utc[-1] == dt.datetime(2024, 10, 27, 3, 0, tzinfo=dt.UTC)
    assert len(in_utc) in (4, 5)
