"""CPU thread settings for the BLAS library behind numpy (process setup, called explicitly).

numpy's matrix products run on OpenBLAS (or MKL), which reads its thread count from environment
variables once, when numpy is first imported. `configure_blas_threads()` sets them to the number of
usable CPUs (respecting taskset/cgroup affinity, which OpenBLAS ignores: it would start a thread per
core of the machine and oversubscribe a container) if the user has not set them.

It changes os.environ, so no module calls it at import time: a process that embeds calls it first
thing. `dory.surfaces.cli.main` does, for every `dory` command including the daemon (`dory ops watch`);
scripts that embed without the CLI (scripts/bench) call it before importing Dory. If numpy was
imported before the call (another library, a test runner plugin), the call cannot change this
process; OpenBLAS's default (all cores) then applies, which is usually the same thing.

This module lives outside dory.index.embedders, and must not import numpy or anything that does,
so that importing it is possible before numpy loads.
"""

from __future__ import annotations

import os

_BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def usable_cpu_count() -> int:
    """CPUs this process may run on (respects taskset/cgroup affinity where the OS reports it)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def configure_blas_threads() -> None:
    """Set the BLAS thread variables to the usable CPU count, leaving any the user set alone.

    Call it at the start of a process, before numpy is imported (see the module docstring)."""
    count = str(usable_cpu_count())
    for variable in _BLAS_THREAD_VARIABLES:
        os.environ.setdefault(variable, count)
