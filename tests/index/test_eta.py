"""The ETA arithmetic of dory/index/eta.py, with made-up times: nothing here reads a clock."""

from __future__ import annotations

import pytest

from dory.index.eta import ESTIMATING, MIN_BATCHES, Meter, RateWindow, duration_text, eta_s, rate_text


def test_no_rate_until_enough_batches() -> None:
    window = RateWindow()
    for _ in range(MIN_BATCHES - 1):
        window.add(100, 1.0)
        assert window.rate() is None
    window.add(100, 1.0)
    assert window.rate() == pytest.approx(100.0)


def test_the_first_batch_alone_decides_nothing_once_the_window_has_moved_on() -> None:
    """A cold first batch (model warming up: 10 items in 10 s) is forgotten once the recent batches
    cover the window; from then on the rate is the recent one."""
    window = RateWindow(window_s=10.0, min_batches=3)
    window.add(10, 10.0)
    for _ in range(10):
        window.add(50, 1.0)
    assert window.rate() == pytest.approx(50.0)


def test_the_rate_follows_a_slowdown() -> None:
    window = RateWindow(window_s=6.0, min_batches=3)
    for _ in range(10):
        window.add(100, 1.0)  # 100/s
    for _ in range(6):
        window.add(100, 4.0)  # the machine got busy: 25/s
    assert window.rate() == pytest.approx(25.0)


def test_the_rate_weighs_batches_by_their_time() -> None:
    """Small batches (one edited note) barely move a rate measured on big ones."""
    window = RateWindow(window_s=100.0, min_batches=3)
    window.add(100, 2.0)
    window.add(100, 2.0)
    window.add(1, 0.1)
    assert window.rate() == pytest.approx(201 / 4.1)


def test_batches_taking_no_measurable_time_give_no_rate() -> None:
    window = RateWindow()
    for _ in range(5):
        window.add(10, 0.0)
    assert window.rate() is None


def test_eta_is_what_remains_at_the_rate() -> None:
    assert eta_s(1000, 50.0) == pytest.approx(20.0)
    assert eta_s(0, 50.0) is None  # nothing pending: no ETA
    assert eta_s(10, None) is None
    assert eta_s(10, 0.0) is None


def test_meter_times_each_report_against_the_previous_one() -> None:
    meter = Meter()
    meter.update(0, at=100.0)  # the pass starts
    meter.update(128, at=102.0)
    meter.update(256, at=104.0)
    assert meter.text(256, 1024, "chunks") == f"256/1,024 chunks · {ESTIMATING}"
    meter.update(256, at=105.0)  # the same count again: no batch, the next one is timed from 104
    meter.update(384, at=106.0)
    assert meter.window.rate() == pytest.approx(64.0)
    assert meter.text(384, 1024, "chunks") == "384/1,024 chunks · 64.0 chunks/s · 10 s left"


def test_meter_finished_shows_only_the_count() -> None:
    meter = Meter()
    for i, at in enumerate([0.0, 1.0, 2.0, 3.0]):
        meter.update(i * 10, at)
    assert meter.text(30, 30, "files") == "30/30 files"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.2, "1 s"), (42.0, "42 s"), (59.5, "1 min 00 s"), (727, "12 min 07 s"), (7499, "2 h 04 min")],
)
def test_durations_round_up(seconds: float, text: str) -> None:
    assert duration_text(seconds) == text


def test_rates_keep_a_decimal_only_while_it_matters() -> None:
    assert rate_text(41.25, "chunks") == "41.2 chunks/s"
    assert rate_text(0.5, "chunks") == "0.5 chunks/s"
    assert rate_text(1234.4, "files") == "1,234 files/s"
