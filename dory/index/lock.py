"""The writer lock: one process at a time changes the index (FAISS is single-process).

`flock` is released by the kernel when its holder dies, so a crashed writer never leaves a stale
lock behind; the holder's pid is written into the file only to tell the next caller who holds it.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from dory.errors import IndexLocked, storage_error

PROBE_GRACE_S = 0.3


class WriterLock:
    def __init__(self, path: Path, wait_s: float = 0.0, on_wait: Callable[[str], None] | None = None) -> None:
        self.path = path
        self.wait_s = wait_s
        self.on_wait = on_wait  # told once, with the holder's pid, when the lock is busy
        self._fd: int | None = None

    def __enter__(self) -> WriterLock:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:  # a read-only or full disk is that, not a lock held by someone
            raise storage_error(exc, str(self.path)) from exc
        # A short grace even with wait_s = 0: `holder()` probes the lock for a few microseconds.
        deadline = time.monotonic() + max(self.wait_s, PROBE_GRACE_S)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
                if self.on_wait is not None and self.wait_s > 0:
                    self.on_wait(holder)
                    self.on_wait = None
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise IndexLocked(
                        f"the index is being written by another Dory process (pid {holder}); "
                        "wait for it to finish or stop it",
                        pid=holder,
                    ) from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd
        return self

    @staticmethod
    def holder(path: Path) -> str | None:
        """The pid holding the lock, or None when nobody does (a crashed holder's flock is gone)."""
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
        finally:
            os.close(fd)
        return None

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
