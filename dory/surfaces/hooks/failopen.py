"""Running a hook so that it cannot hurt the agent: exit 0 within the deadline, always.

The hook's work runs in a daemon thread; the main thread waits for it at most `deadline_s` (the
harness's own timeout is longer). On success the output goes to stdout; on any error, or at the
deadline, one line on stderr says why and nothing goes to stdout. The process then ends with
os._exit(0): a worker still waiting on a hung server or a lock cannot keep it alive, and the exit
code is never 2, which Claude Code reads as "block" (a Stop hook exiting 2 would make the agent
carry on).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import NoReturn

from dory.errors import DoryError


def run(name: str, work: Callable[[], str | None], deadline_s: float) -> NoReturn:
    outcome: list[tuple[str | None, BaseException | None]] = []

    def worker() -> None:
        try:
            outcome.append((work(), None))
        except BaseException as exc:  # a hook reports every failure and still exits 0
            outcome.append((None, exc))

    thread = threading.Thread(target=worker, name=f"dory-hook-{name}", daemon=True)
    thread.start()
    thread.join(deadline_s)
    if not outcome:
        _skip(name, f"deadline_exceeded: no answer within {deadline_s:g} s")
    else:
        output, error = outcome[0]
        if error is not None:
            _skip(name, _reason(error))
        elif output:
            sys.stdout.write(output + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _skip(name: str, reason: str) -> None:
    sys.stderr.write(f"dory {name} hook skipped ({reason}); the session goes on without it\n")


def _reason(error: BaseException) -> str:
    if isinstance(error, DoryError):
        return f"{error.code}: {error.message}"
    return f"{type(error).__name__}: {error}"
