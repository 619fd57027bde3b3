"""Crash points: named steps of multi-step writes where a test can kill the process or fail a call.

Every step at which a crash leaves something different on disk calls `crash_point(name)`. Normally
this does nothing. With `DORY_FAULT=<name>` (or `<name>#<k>`, the k-th time that step is reached,
from 0) the process kills itself with SIGKILL right there, without running any cleanup, exactly as
a power cut or `kill -9` would. With `DORY_FAULT=<name>#<k>=<ERRNO>` (e.g. `swap.aside#0=EACCES`)
the step raises that OSError instead, as the file system call before it would have. The tests
enumerate the points a write passes and check that recovery always ends with the old content or
the new one, never neither, and that a failed write leaves everything as it was.
"""

from __future__ import annotations

import errno
import os
import signal
import threading
from collections import Counter

FAULT_ENV = "DORY_FAULT"
# With DORY_FAULT_TRACE=<file>, every crash point reached is appended to that file (one name a
# line): how the tests learn which points a write passes, and how often.
TRACE_ENV = "DORY_FAULT_TRACE"

# Every named step, in the order a write passes them (the journal also has "<op>:<n>", after the
# n-th file of an operation named <op>).
CRASH_POINTS = (
    "journal.staged",  # the staging folder holds the new (and old) bytes; journal.json not written
    "journal.committed",  # journal.json written: the operation will be rolled forward
    "atomic.temp-written",  # write_atomic: the new bytes are in a temp file beside the target
    "atomic.replaced",  # write_atomic: renamed into place, the folder not yet fsynced
    "create.temp-written",  # create_exclusive: the complete file in a temp file
    "create.linked",  # create_exclusive: linked into place, the temp name still there
    "swap.temp-written",  # swap_if_unchanged: the new bytes in a temp file
    "swap.aside",  # swap_if_unchanged: the old file renamed aside; nothing at the path
    "swap.linked",  # swap_if_unchanged: the new file linked in; the old one still aside
    "remove.aside",  # remove_if_unchanged: the file renamed aside, not yet checked and unlinked
    "migrate.intent",  # a migration item's intent (its files and hashes) is in the manifest
    "migrate.output",  # one file of a migration item is in place
    "migrate.done",  # every file of the item is in place and the manifest says so
    "journal.applied",  # every file written; the receipt not yet recorded
    "journal.receipt",  # the receipt recorded; the staging folder not yet removed
)

_seen: Counter[str] = Counter()
_lock = threading.Lock()


def crash_point(name: str) -> None:
    trace = os.environ.get(TRACE_ENV)
    if trace:
        with open(trace, "a", encoding="utf-8") as handle:
            handle.write(name + "\n")
    wanted = os.environ.get(FAULT_ENV)
    if not wanted:
        return
    wanted, _, error = wanted.partition("=")
    step, _, nth = wanted.partition("#")
    if step != name:
        return
    with _lock:
        count = _seen[name]
        _seen[name] += 1
    if count != int(nth or 0):
        return
    if error:
        code = getattr(errno, error)
        raise OSError(code, f"{os.strerror(code)} (injected at {name})")
    os.kill(os.getpid(), signal.SIGKILL)
