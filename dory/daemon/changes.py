"""Pending changes reported by the watcher, debounced per path and handed out in batches.

A path becomes due once it has been quiet for `debounce_s` (editors write a file in several steps)
or once it has waited `max_delay_s` since its first event (a file written continuously). Paths
seen in one event (a move's source and destination) share their timing, so a rename lands in one
batch and is recognised as a rename. Only paths are queued, never what happened to them: the
indexer re-reads the disk when the batch is applied, which is what makes a delete tentative.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass


@dataclass
class _Pending:
    first: float
    last: float


class ChangeQueue:
    def __init__(
        self,
        debounce_s: float,
        max_delay_s: float,
        clock: Callable[[], float] = time.monotonic,
        on_add: Callable[[], None] | None = None,
    ) -> None:
        self.debounce_s = debounce_s
        self.max_delay_s = max(max_delay_s, debounce_s)
        self.clock = clock
        self.on_add = on_add or (lambda: None)
        self._pending: dict[str, _Pending] = {}
        self._lock = threading.Lock()

    def add(self, paths: Iterable[str]) -> None:
        now = self.clock()
        with self._lock:
            for path in paths:
                entry = self._pending.get(path)
                if entry is None:
                    self._pending[path] = _Pending(now, now)
                else:
                    entry.last = now
        self.on_add()

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)

    def _due_at(self, entry: _Pending) -> float:
        return min(entry.last + self.debounce_s, entry.first + self.max_delay_s)

    def take_due(self, limit: int) -> list[str]:
        """Up to `limit` paths whose time has come, oldest first; they leave the queue."""
        now = self.clock()
        with self._lock:
            due = sorted((self._due_at(e), p) for p, e in self._pending.items() if self._due_at(e) <= now)
            taken = [path for _, path in due[:limit]]
            for path in taken:
                del self._pending[path]
        return taken

    def take_all(self) -> list[str]:
        with self._lock:
            taken = list(self._pending)
            self._pending.clear()
        return taken

    def seconds_until_due(self) -> float | None:
        """How long until the next path is due (0 if one is), or None when nothing is queued."""
        with self._lock:
            if not self._pending:
                return None
            return max(0.0, min(self._due_at(e) for e in self._pending.values()) - self.clock())
