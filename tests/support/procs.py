"""What another process is doing right now, read from /proc (Linux), for tests that wait on it."""

from __future__ import annotations

import os
from pathlib import Path


def children(pid: int | None = None) -> list[int]:
    """The processes whose parent is `pid` (this process by default)."""
    parent = os.getpid() if pid is None else pid
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:  # it ended meanwhile
            continue
        if int(stat[stat.rindex(")") + 2 :].split()[1]) == parent:
            found.append(int(entry))
    return found


def open_files(pid: int) -> set[str]:
    """The paths `pid` has open (empty once it has exited)."""
    try:
        return {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
    except OSError:
        return set()


def waits_with_open(pid: int, path: Path) -> bool:
    """`pid` has `path` open and is asleep (state S: e.g. in SQLite's busy wait for a lock on it)."""
    if str(path) not in open_files(pid):
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 :].startswith("S")
