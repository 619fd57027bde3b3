"""How long a long pass has left: a rate measured over its recent batches, and the time remaining.

One module for both places that show it: `dory reindex` on a terminal (the bar of each phase, by
`Meter`) and the daemon's embedder (its recent rate, published in its record, which `dory status`
turns into an ETA with `eta_s`). Neither reads a clock here: callers pass the times, so the
arithmetic is tested with made-up ones.

Why a moving window of recent batches: the first batch is not representative (a cold model, cold
caches, a machine still busy with the lexical pass), and a long pass speeds up or slows down with
the load on the machine. The window keeps the last WINDOW_S seconds of measured work, and no
estimate is given before MIN_BATCHES batches were measured ("estimating…").

Why time spent in batches rather than wall-clock time between them: the daemon embeds in bursts
with idle gaps between them, and a gap is not slowness.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

# How a long pass reports each step: (phase, done, total). The indexer, the vector pass, jobs and the
# service all take one; this light module holds it so that none of them loads another to name it.
Progress = Callable[[str, int, int], None]

WINDOW_S = 30.0  # the recent work the rate is measured over
MIN_BATCHES = 3  # no estimate from fewer batches than this
MAX_BATCHES = 1000  # a bound on memory when batches are tiny
ESTIMATING = "estimating…"


@dataclass
class RateWindow:
    """Items per second over the most recent batches (at least `window_s` of work once there is)."""

    window_s: float = WINDOW_S
    min_batches: int = MIN_BATCHES
    _batches: deque[tuple[int, float]] = field(default_factory=deque)

    def add(self, count: int, seconds: float) -> None:
        """One batch: `count` items done in `seconds` of work."""
        self._batches.append((max(count, 0), max(seconds, 0.0)))
        # Drop the oldest batch while the rest still cover the window.
        while len(self._batches) > self.min_batches and (
            len(self._batches) > MAX_BATCHES or self._seconds() - self._batches[0][1] >= self.window_s
        ):
            self._batches.popleft()

    def rate(self) -> float | None:
        """Items per second, or None until `min_batches` batches (taking some time) were measured."""
        seconds = self._seconds()
        if len(self._batches) < self.min_batches or seconds <= 0:
            return None
        return sum(count for count, _ in self._batches) / seconds

    def _seconds(self) -> float:
        return sum(seconds for _, seconds in self._batches)


def eta_s(remaining: int, rate: float | None) -> float | None:
    """Seconds until `remaining` items are done at `rate`; None when nothing remains or no rate is known."""
    if remaining <= 0 or rate is None or rate <= 0:
        return None
    return remaining / rate


@dataclass
class Meter:
    """A pass reported as a running count (done of total) at given times: each report after the
    first is one batch of the window."""

    window: RateWindow = field(default_factory=RateWindow)
    _last: tuple[int, float] | None = None

    def update(self, done: int, at: float) -> None:
        if self._last is not None and done > self._last[0]:
            self.window.add(done - self._last[0], at - self._last[1])
        if self._last is None or done > self._last[0]:
            self._last = (done, at)

    def text(self, done: int, total: int, unit: str) -> str:
        """What a terminal shows: `640/5,000 chunks · 42.7 chunks/s · 1 min 42 s left`."""
        counted = f"{done:,}/{total:,} {unit}"
        if done >= total:
            return counted
        rate = self.window.rate()
        left = eta_s(total - done, rate)
        if rate is None or left is None:
            return f"{counted} · {ESTIMATING}"
        return f"{counted} · {rate_text(rate, unit)} · {duration_text(left)} left"


def rate_text(rate: float, unit: str) -> str:
    return f"{rate:,.0f} {unit}/s" if rate >= 100 else f"{rate:.1f} {unit}/s"


def duration_text(seconds: float) -> str:
    """`2 h 05 min`, `12 min 07 s`, `42 s`: rounded up, since an estimate that runs out early irritates."""
    whole = int(-(-seconds // 1))  # ceiling
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{secs} s"


def no_progress(phase: str, done: int, total: int) -> None:
    """The default progress callback: nothing shown."""
