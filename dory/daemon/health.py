"""What each part of the daemon says about itself in `dory status`, and how a worker thread's death
is recorded.

Every part (writer, embedder, watcher, scheduler, control socket) keeps its last error with the
time it happened; the daemon adds whether the part's thread is alive when it publishes its record.

Decision (issue 15): a worker thread that dies from an exception nobody anticipated (the writer's,
the embedder's, the control socket's) is fatal for the whole daemon. `guarded` records the death
as the part's last error; the daemon's run loop sees the thread gone, logs why, leaves the reason
in its final record and exits non-zero, so systemd (Restart=on-failure) starts a fresh process and
the journal says why. Restarting the thread in place was rejected: what it held when it died (a transaction, a
half-applied batch, callers waiting on it) cannot be vouched for, while a fresh start takes the
path every crash already takes and the tests prove (journal recovery, FAISS repaired from the
cache, the start-up reconcile). The watcher is the exception: its threads are watchdog's, they
stop for outside reasons (a folder replaced, an inotify reader gone), and the heartbeat re-arms
them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from dory.index.store import now_iso

log = logging.getLogger("dory.daemon")


@dataclass
class PartHealth:
    last_error: str | None = None
    last_error_at: str | None = None

    def error(self, message: str) -> None:
        self.last_error, self.last_error_at = message, now_iso()

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def guarded(part: PartHealth, name: str, body: Callable[[], None]) -> Callable[[], None]:
    """`body` as a thread target whose escaping exception is recorded as the part's last error
    (and logged with its traceback) instead of vanishing into threading's excepthook."""

    def run() -> None:
        try:
            body()
        except BaseException as exc:  # the thread ends either way; what matters is that it is said
            part.error(f"the {name} thread died: {type(exc).__name__}: {exc}")
            log.critical("%s", part.last_error, exc_info=True)

    return run
