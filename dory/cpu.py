"""CPU thread policy for numpy's BLAS (OpenBLAS) and FAISS's OpenMP: explicit, measured, documented.

Two kinds of work run matrix products in Dory, and they want different thread counts:

* **Batch embedding** (`dory reindex`, the daemon's background embedder): large products, where a
  second BLAS thread helps when a core is free.
* **The query path** (embed one short query, score it against the vectors): thin products whose cost
  is reading weights and vectors, where a second thread gains little when the machine is idle and
  costs a lot when it is busy. OpenBLAS threads spin-wait for each other; when other processes hold
  the cores, every product waits for a descheduled thread. Measured on 2 cores with 1.7 cores already
  used by other processes (scripts/bench/bench_search.py --threads-only, 100k chunks): one query's
  embedding p50/p95 55/98 ms on 1 BLAS thread against 378/1264 ms on 2; with 2 more busy loops
  111/192 against 1043/3247 ms. So the query path always runs on ONE BLAS thread:
  `single_blas_thread()` wraps it (dory/search/semantic.py, MiniLMEmbedder.embed_query).
* **The daemon's background embedder** runs on `background_blas_threads()` (1 unless
  DORY_BLAS_THREADS is set): embedding a batch of 32 chunks on the busy machine gave 2.6 chunks/s on
  1 thread and 0.4 on 2 (6.8 against 0.8 without the extra busy loops; a scratch measurement). It
  shares its process with the queries the daemon serves; see dory/daemon/embedder.py.

Process defaults (`configure_blas_threads`, called first thing by every embedding process: the CLI
entry point, which includes the daemon, and the bench scripts): the BLAS thread variables are set to
`default_blas_threads()`: DORY_BLAS_THREADS, else the usable CPU count (a foreground `dory reindex`
may use every core), unless the user set them (OPENBLAS_NUM_THREADS / OMP_NUM_THREADS /
MKL_NUM_THREADS). It changes os.environ, so no module calls it at import time; if numpy was
imported before the call, OpenBLAS's own default (all cores) applies.

FAISS runs its OpenMP loops on all cores by default. Its count is per calling thread (libgomp), so
dory/index/vectors.py holds a search to one OpenMP thread for its caller only (IndexFlatIP nq=1 at
100k, same load as above: p50 48 ms on 1 thread, 130 ms on 2), and index building elsewhere keeps
every core. Dory's flat index is scored with a numpy product, which follows the BLAS policy.

OpenBLAS's thread count is one setting for the whole process, not per thread: while a query holds
the limit, a batch embedding in another thread of the same process (the daemon) also runs on one
thread for those few milliseconds. Overlapping holders are counted, and the last one out restores the
previous count, so concurrent queries cannot leave the process stuck on the wrong count.

This module must not import numpy at import time (it runs before numpy loads); the OpenBLAS library
is found lazily through ctypes, the first time a limit is taken. Where no OpenBLAS is found (macOS
Accelerate, MKL builds, non-Linux without a numpy.libs folder) the limit is a no-op, and
`blas_threads()` reports None.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ctypes

_BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
# The user's override of Dory's default for batch embedding (an integer ≥ 1).
THREADS_VARIABLE = "DORY_BLAS_THREADS"

# OpenBLAS exports its setter under one of these names (scipy-openblas builds, as in numpy ≥ 2 wheels,
# prefix and suffix it; plain builds do not).
_SETTER_NAMES = (
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)


def usable_cpu_count() -> int:
    """CPUs this process may run on (respects taskset/cgroup affinity where the OS reports it)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def _chosen_threads() -> int | None:
    """DORY_BLAS_THREADS when it is a positive integer (anything else is ignored)."""
    chosen = os.environ.get(THREADS_VARIABLE, "").strip()
    return int(chosen) if chosen.isdigit() and int(chosen) > 0 else None


def default_blas_threads() -> int:
    """Threads for foreground batch embedding (`dory reindex`): DORY_BLAS_THREADS, else the usable CPUs."""
    return _chosen_threads() or usable_cpu_count()


def background_blas_threads() -> int:
    """Threads for the daemon's background embedder: DORY_BLAS_THREADS, else 1 (see the module docstring)."""
    return _chosen_threads() or 1


def configure_blas_threads() -> None:
    """Set the BLAS thread variables to `default_blas_threads()`, leaving any the user set alone.

    Call it at the start of a process, before numpy is imported (see the module docstring)."""
    count = str(default_blas_threads())
    for variable in _BLAS_THREAD_VARIABLES:
        os.environ.setdefault(variable, count)


# -- the per-call limit ----------------------------------------------------------------------------


class _OpenBlas:
    """numpy's OpenBLAS library through ctypes: get and set its (process-wide) thread count."""

    def __init__(self, lib: ctypes.CDLL, setter: str, path: str) -> None:
        import ctypes  # here, not at the top: `dory --help` imports this module and never needs it

        self.path = path
        self._set = getattr(lib, setter)
        self._set.argtypes = [ctypes.c_int]
        self._set.restype = None
        self._get = getattr(lib, setter.replace("set_num_threads", "get_num_threads"))
        self._get.argtypes = []
        self._get.restype = ctypes.c_int

    def get(self) -> int:
        return int(self._get())

    def set(self, count: int) -> None:
        self._set(count)


def _candidate_paths() -> list[str]:
    """Files that may be numpy's OpenBLAS, numpy's own first.

    Other libraries bundle their own OpenBLAS (faiss-cpu ships one in faiss_cpu.libs); limiting that
    one would leave numpy's products untouched, so only files in numpy's wheel folders (numpy.libs,
    numpy/.dylibs, scipy_openblas64) count, and a loaded OpenBLAS elsewhere only when the path names
    numpy (a system numpy linked to its own)."""
    import glob
    from pathlib import Path

    found: list[str] = []
    numpy_module = sys.modules.get("numpy")
    if numpy_module is not None and getattr(numpy_module, "__file__", None):
        package = Path(str(numpy_module.__file__)).parent
        for folder in (package.parent / "numpy.libs", package / ".dylibs", package.parent / "scipy_openblas64" / "lib"):
            found += sorted(glob.glob(str(folder / "*openblas*")))
    try:
        with open("/proc/self/maps") as handle:
            loaded = {line.split()[-1] for line in handle if "openblas" in line.lower() and "/" in line}
        found += sorted(path for path in loaded if "numpy" in path)
    except OSError:
        pass
    return found


_blas_lock = threading.Lock()
_blas: _OpenBlas | None = None
_blas_searched = False
_holders = 0
_saved_count = 0


def _openblas() -> _OpenBlas | None:
    """numpy's OpenBLAS, found once (imports numpy, so only call it once numpy may load)."""
    global _blas, _blas_searched
    if not _blas_searched:
        import ctypes

        import numpy  # noqa: F401  (loads the library looked for)

        for path in _candidate_paths():
            try:
                lib = ctypes.CDLL(path)  # already loaded: the same handle numpy uses
            except OSError:
                continue
            setter = next((name for name in _SETTER_NAMES if hasattr(lib, name)), None)
            if setter is not None:
                _blas = _OpenBlas(lib, setter, path)
                break
        _blas_searched = True
    return _blas


def blas_library() -> str | None:
    """The path of the OpenBLAS library the limits act on (numpy's), None when none was found."""
    with _blas_lock:
        blas = _openblas()
        return None if blas is None else blas.path


def blas_threads() -> int | None:
    """numpy's OpenBLAS thread count right now; None when no OpenBLAS is found."""
    with _blas_lock:
        blas = _openblas()
        return None if blas is None else blas.get()


@contextmanager
def single_blas_thread() -> Iterator[None]:
    """Run numpy's BLAS on one thread inside the block (the query path's policy; see the module docstring).

    Re-entrant and safe across threads: the first holder saves the count and sets 1, the last one out
    restores it. A no-op where OpenBLAS is not found."""
    global _holders, _saved_count
    with _blas_lock:
        blas = _openblas()
        if blas is not None:
            if _holders == 0:
                _saved_count = blas.get()
                blas.set(1)
            _holders += 1
    try:
        yield
    finally:
        if blas is not None:
            with _blas_lock:
                _holders -= 1
                if _holders == 0:
                    blas.set(_saved_count)


def set_blas_threads(count: int) -> bool:
    """Set numpy's OpenBLAS thread count for the process from now on; False when no OpenBLAS is found.

    While `single_blas_thread()` blocks are open the count is recorded for when the last one closes."""
    global _saved_count
    with _blas_lock:
        blas = _openblas()
        if blas is None:
            return False
        if _holders:
            _saved_count = count
        else:
            blas.set(count)
        return True
