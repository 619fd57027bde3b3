"""The deadline between stages: a stage that would start after it is skipped, one that ends after it is dropped.

A stage is not interrupted while it runs (a SQLite query or an embedding cannot be cut safely), so the
check happens at both ends of each stage: before it (no time left: skipped) and after it (it ran past the
deadline: its result is thrown away, so what the block says never depends on how slow the machine was
that once). Either way the stage is listed as dropped, and the answer still comes back. The clock is a
parameter (read once when the run starts, then as each stage begins and as it ends), so tests drive it
and never depend on real timing. The last two stages (admission and the block) read only the hits in
hand and are never dropped: they are what turns the stages that did run into an answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from dory.models import ActiveStage, ActiveStageName

T = TypeVar("T")
Clock = Callable[[], float]


class StageClock:
    def __init__(self, clock: Clock, deadline_ms: int) -> None:
        self.clock = clock
        self.start = clock()
        self.deadline_s = deadline_ms / 1000
        self.stages: list[ActiveStage] = []
        self.dropped: list[str] = []

    def elapsed_ms(self) -> float:
        return round((self.clock() - self.start) * 1000, 3)

    def run(self, name: ActiveStageName, work: Callable[[], T], bounded: bool = True) -> T | None:
        """The stage's result, or None when the deadline dropped it (never for an unbounded stage)."""
        began = self.clock()
        if bounded and began - self.start >= self.deadline_s:
            self._drop(name, 0.0, "skipped: the deadline had passed")
            return None
        result = work()
        ended = self.clock()
        took = round((ended - began) * 1000, 3)
        if bounded and ended - self.start > self.deadline_s:
            self._drop(name, took, "dropped: it ended past the deadline")
            return None
        self.stages.append(ActiveStage(name=name, ran=True, ms=took))
        return result

    def skip(self, name: ActiveStageName, why: str) -> None:
        """A stage this prompt does not need (not a deadline drop)."""
        self.stages.append(ActiveStage(name=name, ran=False, ms=0.0, note=why))

    def note(self, why: str) -> None:
        """Say what the last stage decided."""
        if self.stages:
            self.stages[-1] = self.stages[-1].model_copy(update={"note": why})

    def _drop(self, name: ActiveStageName, took: float, why: str) -> None:
        self.stages.append(ActiveStage(name=name, ran=False, ms=took, note=why))
        self.dropped.append(name)
