"""ChangeQueue: per-path debounce, the max-delay cap, batching order, all on an injected clock."""

from __future__ import annotations

import pytest

from dory.daemon.changes import ChangeQueue


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


def queue(clock: Clock, debounce_s: float = 1.0, max_delay_s: float = 5.0, **kw) -> ChangeQueue:
    return ChangeQueue(debounce_s, max_delay_s, clock=clock, **kw)


def test_path_is_due_only_after_quiet_for_debounce(clock: Clock) -> None:
    q = queue(clock)
    q.add(["a.md"])
    assert q.take_due(10) == []
    clock.advance(0.99)
    assert q.take_due(10) == []
    clock.advance(0.01)
    assert q.take_due(10) == ["a.md"]
    assert len(q) == 0
    assert q.take_due(10) == []


def test_repeated_events_push_the_path_back(clock: Clock) -> None:
    q = queue(clock)
    q.add(["a.md"])
    for _ in range(3):
        clock.advance(0.8)
        q.add(["a.md"])
        assert q.take_due(10) == []
    assert len(q) == 1
    clock.advance(0.8)
    assert q.take_due(10) == []
    clock.advance(0.2)
    assert q.take_due(10) == ["a.md"]


def test_max_delay_caps_a_continuously_written_path(clock: Clock) -> None:
    q = queue(clock, debounce_s=1.0, max_delay_s=3.0)
    q.add(["busy.md"])
    for _ in range(5):  # an event every 0.5 s: never quiet for a whole second
        clock.advance(0.5)
        q.add(["busy.md"])
    # 2.5 s since the first event: not yet
    assert q.take_due(10) == []
    clock.advance(0.5)  # 3.0 s since the first event, 0.5 s since the last
    assert q.take_due(10) == ["busy.md"]


def test_max_delay_is_never_below_debounce(clock: Clock) -> None:
    q = queue(clock, debounce_s=2.0, max_delay_s=0.5)
    assert q.max_delay_s == 2.0
    q.add(["a.md"])
    clock.advance(1.0)
    assert q.take_due(10) == []
    clock.advance(1.0)
    assert q.take_due(10) == ["a.md"]


def test_take_due_respects_limit_and_hands_out_oldest_first(clock: Clock) -> None:
    q = queue(clock)
    q.add(["c.md"])
    clock.advance(0.1)
    q.add(["a.md"])
    clock.advance(0.1)
    q.add(["b.md"])
    clock.advance(0.1)
    q.add(["not-yet.md"])
    clock.advance(0.95)  # c, a, b are due; not-yet.md is 0.95 s quiet
    assert q.take_due(2) == ["c.md", "a.md"]
    assert q.take_due(2) == ["b.md"]
    assert q.take_due(2) == []
    assert len(q) == 1
    clock.advance(0.05)
    assert q.take_due(2) == ["not-yet.md"]


def test_paths_added_together_become_due_together(clock: Clock) -> None:
    q = queue(clock)
    q.add(["old/name.md"])
    clock.advance(0.5)
    q.add(["old/name.md", "new/name.md"])  # a move: source and destination in one event
    clock.advance(0.99)
    assert q.take_due(10) == []
    clock.advance(0.01)
    assert sorted(q.take_due(10)) == ["new/name.md", "old/name.md"]


def test_take_all_empties_the_queue_regardless_of_timing(clock: Clock) -> None:
    q = queue(clock)
    q.add(["a.md", "b.md"])
    q.add(["c.md"])
    assert sorted(q.take_all()) == ["a.md", "b.md", "c.md"]
    assert len(q) == 0
    assert q.take_all() == []
    assert q.seconds_until_due() is None


def test_seconds_until_due(clock: Clock) -> None:
    q = queue(clock, debounce_s=1.0, max_delay_s=5.0)
    assert q.seconds_until_due() is None
    q.add(["a.md"])
    assert q.seconds_until_due() == pytest.approx(1.0)
    clock.advance(0.25)
    assert q.seconds_until_due() == pytest.approx(0.75)
    q.add(["b.md"])  # later path does not move the earliest deadline
    assert q.seconds_until_due() == pytest.approx(0.75)
    clock.advance(5.0)
    assert q.seconds_until_due() == 0.0  # overdue is clamped to zero, not negative
    q.take_due(10)
    assert q.seconds_until_due() is None


def test_on_add_is_called_once_per_add(clock: Clock) -> None:
    calls: list[int] = []
    q = queue(clock, on_add=lambda: calls.append(len(q)))
    q.add(["a.md", "b.md"])
    q.add(["a.md"])
    assert calls == [2, 2]  # called after the paths are queued


def test_default_clock_is_monotonic() -> None:
    q = ChangeQueue(0.0, 0.0)
    q.add(["a.md"])
    assert q.take_due(1) == ["a.md"]
