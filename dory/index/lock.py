"""The writer lock: one process at a time changes the index (FAISS is single-process).

`flock` is released by the kernel when its holder dies, so a crashed writer never leaves a stale
lock behind; the holder's pid is written into the file only to tell the next caller who holds it.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from types import TracebackType

from dory.errors import IndexLocked


class WriterLock:
    def __init__(self, path: Path, wait_s: float = 0.0) -> None:
        self.path = path
        self.wait_s = wait_s
        self._fd: int | None = None

    def __enter__(self) -> WriterLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
                    os.close(fd)
                    raise IndexLocked(
                        f"the index is being written by another Dory process (pid {holder}); "
                        "wait for it to finish or stop it", pid=holder,
                    ) from None
                time.sleep(0.1)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
