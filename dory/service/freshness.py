"""The freshness contract: every write answers with the index generation that holds it, and a read
may ask to wait until the index has reached a generation ("read your own writes").

The generation is a counter in the index (`meta.generation`) that the owner raises after each
committed change (dory.index.db.bump_generation). A waiter is woken when this process's owner
raises it, and polls as well, for an owner in another process (a daemon serving another surface).
"""

from __future__ import annotations

import sqlite3
import time

from dory.config import Settings
from dory.errors import IndexBehind
from dory.index import db
from dory.service.resources import Resources

# Between two looks at the index when the owner is another process (its bump wakes no one here).
POLL_S = 0.05
# The longest a read may wait for the index to catch up.
MAX_WAIT_S = 60.0


def current_generation(settings: Settings, resources: Resources) -> int:
    """The generation this thread's connection sees now (0 before the first index)."""
    if not settings.db_path.exists():
        return 0
    try:
        return db.generation(resources.store().conn)
    except sqlite3.Error:  # an index being created: nothing committed yet
        return 0


def wait_for_generation(settings: Settings, resources: Resources, minimum: int, timeout_s: float) -> int:
    """Return the current generation once it is at least `minimum`; raise IndexBehind (503, with the
    current generation) if the deadline passes first."""
    deadline = time.monotonic() + min(max(timeout_s, 0.0), MAX_WAIT_S)
    changed = resources.generation_changed
    with changed:
        while (seen := current_generation(settings, resources)) < minimum:
            left = deadline - time.monotonic()
            if left <= 0:
                raise IndexBehind(
                    f"the index is at generation {seen}, not yet {minimum}; try again shortly",
                    generation=seen,
                    min_generation=minimum,
                )
            changed.wait(min(left, POLL_S))
    return seen
