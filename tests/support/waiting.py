"""Waiting in tests: on a condition or an event, never for a fixed time.

CI runs on a loaded 2-core machine, so a test never assumes how long something takes. It waits until
what it needs is observably true; the deadline only turns a hang into a failure and is generous on
purpose: a passing test never waits for it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# How long anything in a test may take before it counts as hung (process start-up, a model load, a
# batch of thousands of files on a busy machine). Never a statement about speed.
DEADLINE_S = 120.0
POLL_S = 0.05


def wait_until(predicate: Callable[[], T], deadline_s: float = DEADLINE_S, what: str = "condition") -> T:
    """Poll `predicate` until it returns something truthy, and return that; fail after `deadline_s`."""
    give_up = time.monotonic() + deadline_s
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() >= give_up:
            raise AssertionError(f"still waiting for {what} after {deadline_s:g} s")
        time.sleep(POLL_S)
