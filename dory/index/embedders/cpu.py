"""CPU thread settings for the BLAS library behind numpy.

numpy's matrix products run on OpenBLAS (or MKL), which reads its thread count from environment
variables once, when numpy is first imported. `configure_blas_threads()` sets them to the number of
usable CPUs if the user has not set them. Caveat: if anything imported numpy before this package
(another library, a test runner plugin), the call has no effect on that process; the defaults of
OpenBLAS (all cores) then apply, which is usually the same thing. This module must not import numpy.
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
    """Set the BLAS thread variables to the usable CPU count, leaving any the user set alone."""
    count = str(usable_cpu_count())
    for variable in _BLAS_THREAD_VARIABLES:
        os.environ.setdefault(variable, count)
