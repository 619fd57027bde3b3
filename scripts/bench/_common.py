"""Shared helpers for the benchmark scripts in this folder (not part of Dory itself).

Archives live in `<repo>/../shared/bench/<name>.tar.gz`; they are unpacked once into a cache folder,
`$DORY_BENCH_DIR/<name>` (default `/tmp/dory-bench/<name>`), and reused by later runs. Scripts import
these helpers after putting this folder on `sys.path`:

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import make_service, percentiles, unpack

The benchmarks are processes that embed, like `dory` itself, so importing this module does their
process setup: `dory.cpu.configure_blas_threads()`, which must run before numpy loads (Dory no longer
does it on import). That is why scripts import this module before Dory, and why nothing here imports
numpy or the rest of Dory at module level.
"""

from __future__ import annotations

import functools
import math
import os
import resource
import shutil
import sys
import tarfile
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dory.cpu import configure_blas_threads

if TYPE_CHECKING:
    from dory.service import DoryService

# Process setup for every benchmark script (see the docstring): before anything imports numpy.
configure_blas_threads()

REPO_ROOT = Path(__file__).resolve().parents[2]
ARCHIVE_DIR = REPO_ROOT.parent / "shared" / "bench"
DEFAULT_BENCH_DIR = Path("/tmp/dory-bench")
_MARKER = ".dory-bench-unpacked"


def bench_dir() -> Path:
    """The cache folder for unpacked archives and built indexes: $DORY_BENCH_DIR or /tmp/dory-bench."""
    base = Path(os.environ.get("DORY_BENCH_DIR") or DEFAULT_BENCH_DIR).expanduser()
    base.mkdir(parents=True, exist_ok=True)
    return base.resolve()


def archive_path(archive_name: str) -> Path:
    """`../shared/bench/<name>.tar.gz` relative to the repository root."""
    name = archive_name.removesuffix(".tar.gz")
    return ARCHIVE_DIR / f"{name}.tar.gz"


def unpack(archive_name: str) -> Path:
    """Unpack `<name>.tar.gz` into `bench_dir()/<name>` and return that folder (it holds `corpus/`).

    An earlier complete unpack of the same archive (same size and mtime) is reused as is. The archive
    is extracted into a temporary sibling folder and renamed into place, so an interrupted run never
    leaves a half-unpacked tree that a later run would trust.
    """
    name = archive_name.removesuffix(".tar.gz")
    archive = archive_path(name)
    if not archive.is_file():
        raise FileNotFoundError(f"benchmark archive not found: {archive}")
    st = archive.stat()
    stamp = f"{st.st_size}:{st.st_mtime_ns}\n"
    target = bench_dir() / name
    marker = target / _MARKER
    if marker.is_file() and marker.read_text() == stamp:
        return target
    tmp = bench_dir() / f".unpack-{name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")
        unpacked = tmp / name
        if not unpacked.is_dir():  # an archive without a top-level folder named after it
            unpacked = tmp
        (unpacked / _MARKER).write_text(stamp)
        if target.exists():
            shutil.rmtree(target)
        os.replace(unpacked, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def make_service(corpus: str | os.PathLike[str], state_dir: str | os.PathLike[str], **overrides: Any) -> DoryService:
    """A `DoryService` for `corpus` with its state in `state_dir`, ignoring any DORY_* environment.

    Overrides use Dory's dotted setting names; pass them with `**{"embedder.backend": "none"}` or
    with a double underscore for the dot (`index__batch_files=200`).
    """
    from dory.config import load_settings
    from dory.service import DoryService

    dotted = {key.replace("__", "."): value for key, value in overrides.items()}
    settings = load_settings(corpus, {"state_dir": str(state_dir), **dotted}, env={})
    return DoryService(settings)


# -- measuring -----------------------------------------------------------------------------------
def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def percentiles(values: Sequence[float], points: Iterable[float] = (50, 95, 99)) -> dict[str, float]:
    """{"n", "mean", "min", "max", "p50", "p95", "p99"} of `values` (NaN when empty)."""
    values = list(values)
    out: dict[str, float] = {"n": len(values)}
    out["mean"] = sum(values) / len(values) if values else math.nan
    out["min"] = min(values) if values else math.nan
    out["max"] = max(values) if values else math.nan
    for q in points:
        out[f"p{q:g}"] = percentile(values, q)
    return out


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KiB elsewhere


def current_rss_mb() -> float:
    """Current resident set size in MiB (Linux /proc; falls back to the peak elsewhere)."""
    try:
        with open("/proc/self/statm") as handle:
            pages = int(handle.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / (1024 * 1024)
    except (OSError, ValueError, IndexError):
        return peak_rss_mb()


_BLAS_SETTERS = (
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)


@functools.cache
def _numpy_openblas() -> tuple[Any, str] | None:
    """numpy's OpenBLAS library (ctypes handle) and its thread-setter name, if it can be found."""
    import ctypes

    import numpy  # noqa: F401  (loads the library we look for)

    try:
        with open("/proc/self/maps") as handle:
            paths = {line.split()[-1] for line in handle if "openblas" in line.lower() and "numpy" in line}
    except OSError:
        return None
    for path in sorted(paths):
        lib = ctypes.CDLL(path)
        for name in _BLAS_SETTERS:
            if hasattr(lib, name):
                return lib, name
    return None


@contextmanager
def blas_threads(count: int) -> Iterator[bool]:
    """Run numpy's OpenBLAS on `count` threads inside the block; yields False when that is impossible.

    Linux only (finds the library through /proc/self/maps). On leaving, the thread count goes back to
    what it was when the block started.
    """
    found = _numpy_openblas()
    if found is None:
        yield False
        return
    lib, setter = found
    getter = getattr(lib, setter.replace("set_num_threads", "get_num_threads"), None)
    before = int(getter()) if getter is not None else usable_cpus()
    getattr(lib, setter)(count)
    try:
        yield True
    finally:
        getattr(lib, setter)(before)


def blas_thread_count() -> int | None:
    """How many threads numpy's OpenBLAS uses right now (None when it cannot be asked)."""
    found = _numpy_openblas()
    if found is None:
        return None
    lib, setter = found
    getter = getattr(lib, setter.replace("set_num_threads", "get_num_threads"), None)
    return int(getter()) if getter is not None else None


def usable_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _busy_cpu_seconds() -> float | None:
    """CPU seconds all processes have spent busy since boot (Linux /proc/stat), None elsewhere."""
    try:
        with open("/proc/stat") as handle:
            fields = [int(x) for x in handle.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _own_cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class MachineLoad:
    """How much CPU *other* processes used while a benchmark ran.

    `MachineLoad()` takes a snapshot; `.report()` returns {"seconds", "own_cpu_s", "others_cores"},
    where others_cores is the average number of cores busy with work that was not this process or
    its children (None when /proc/stat is unavailable). Load averages cannot tell this apart.
    """

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.busy = _busy_cpu_seconds()
        self.own = _own_cpu_seconds()

    def report(self) -> dict[str, float | None]:
        wall = time.perf_counter() - self.started
        own = _own_cpu_seconds() - self.own
        busy = _busy_cpu_seconds()
        others = None
        if busy is not None and self.busy is not None and wall > 0:
            others = max(0.0, (busy - self.busy - own) / wall)
        return {"seconds": wall, "own_cpu_s": own, "others_cores": others, "cores": usable_cpus()}


@contextmanager
def busy_loops(count: int) -> Iterator[None]:
    """`count` busy-loop processes for the block: a loaded machine on purpose.

    Each loop also ends when this process is gone (its parent changes), so a benchmark killed
    without running its `finally` (SIGTERM, SIGKILL) leaves no loop burning a core."""
    import subprocess

    loop = f"import os\nwhile os.getppid() == {os.getpid()}: pass"
    loops = [subprocess.Popen([sys.executable, "-c", loop]) for _ in range(count)]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def busy_machine_warning(load: dict[str, Any], threshold: float = 0.25) -> str | None:
    """A warning when other processes kept more than `threshold` cores busy on average (see MachineLoad)."""
    others = load.get("others_cores")
    if others is None or others <= threshold:
        return None
    return (
        f"WARNING: other processes kept {others:.2f} of {load['cores']} cores busy during this run. "
        "Multi-threaded BLAS work (encoder, query embedding, vector search) can run 10x slower while "
        "other processes compete; rerun on a quiet machine before trusting absolute figures."
    )


class Stopwatch:
    """Elapsed wall time of a `with timed() as sw:` block, in seconds (`sw.seconds`)."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.seconds = 0.0


@contextmanager
def timed() -> Iterator[Stopwatch]:
    sw = Stopwatch()
    try:
        yield sw
    finally:
        sw.seconds = time.perf_counter() - sw.started


def rate(count: float, seconds: float) -> float:
    """count / seconds, NaN when no time passed."""
    return count / seconds if seconds > 0 else math.nan


# -- actors ----------------------------------------------------------------------------------------
EDITOR_PATTERNS = ("in-place", "rename", "vim")


def save_like_an_editor(path: Path, text: str, pattern: str) -> None:
    """Save `text` to `path` the way editors do: in place, temp file + rename, or vim's backup-and-rewrite."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if pattern == "in-place":
        path.write_text(text, encoding="utf-8")
    elif pattern == "rename":
        tmp = path.with_name(f".{path.name}.swp-tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    else:  # vim with backupcopy=no: move the original aside, write anew, drop the backup
        backup = path.with_name(path.name + "~")
        if path.exists():
            os.replace(path, backup)
        path.write_text(text, encoding="utf-8")
        backup.unlink(missing_ok=True)


# -- a real server ---------------------------------------------------------------------------------
DORY = str(Path(sys.executable).with_name("dory"))  # the venv's console script


def lexical_env(state: Path) -> dict[str, str]:
    """The environment for `dory` processes with their state in `state`, without vectors, and without
    any DORY_* setting of the caller's."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("DORY_")}
    return env | {"DORY_STATE_DIR": str(state), "DORY_EMBEDDER_BACKEND": "none"}


def new_token(corpus: Path, env: dict[str, str], name: str, scope: str) -> str:
    """`dory auth new NAME --scope SCOPE`: the token's secret."""
    import json
    import subprocess

    args = [DORY, "--corpus", str(corpus), "auth", "new", name, "--scope", scope, "--json"]
    made = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    return str(json.loads(made.stdout)["token"])


def start_server(corpus: Path, env: dict[str, str], log_path: Path) -> tuple[Any, str]:
    """A real `dory serve --port 0` (its stderr in `log_path`) and its URL, once the daemon published
    it, went idle after indexing the corpus, and /readyz answers ready."""
    import subprocess

    import httpx

    from dory.config import load_settings
    from dory.service.daemon_state import daemon_status

    with log_path.open("w") as handle:
        proc = subprocess.Popen([DORY, "--corpus", str(corpus), "serve", "--port", "0"], env=env, stderr=handle)
    settings = load_settings(corpus, env=env)
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"dory serve exited with {proc.returncode}; see {log_path}")
        status = daemon_status(settings)
        up = status.running and status.pid == proc.pid and status.idle and status.http_url
        if up and httpx.get(f"{status.http_url}/readyz", timeout=60).status_code == 200:
            return proc, str(status.http_url)
        time.sleep(0.5)


# -- output --------------------------------------------------------------------------------------
def fmt(value: Any, digits: int = 1) -> str:
    """A table cell: floats with `digits` decimals and thousands separators, None as "-"."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:,.{digits}f}"
    return str(value)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], digits: int = 1) -> str:
    """A plain-text table: the first column left-aligned, the others right-aligned."""
    cells = [[str(h) for h in headers]] + [[fmt(v, digits) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True)))

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule, *(line(row) for row in cells[1:])])


def log(message: str) -> None:
    """Progress notes go to stderr, so `--json` keeps stdout to the one JSON object."""
    print(message, file=sys.stderr, flush=True)
