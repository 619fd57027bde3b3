"""How long a one-shot `dory` takes, against `python -c "import click"` measured in the same run.

    python scripts/bench/bench_startup.py [--runs N] [--busy] [--json]

SPEC §11 targets: `dory --help` within 1.5x of importing click, a one-shot bm25 search <= 0.5 s and a
hybrid one <= 1.5 s. Each case is a fresh process (cold-ish: the OS file cache is warm, Python's
bytecode cache too, nothing else is) run N times, interleaved so a burst of load from elsewhere hits
every case alike; the table gives the median and best wall time, the median CPU time (user + system
of the child, less sensitive than wall time to other processes), and the medians' ratios to two
baselines: `import click` (what SPEC §11 compares `--help` with) and `python -c pass` (the bare
interpreter, which no Python command can beat). The corpus is the template of `dory init` in a
temporary folder, indexed with vectors once before timing; the hybrid case is checked to answer
from the vectors (no "not embedded" warning), so it times the embedder and FAISS too. `--busy` runs
two busy-loop processes (`while True: pass`) for the whole run, as on a loaded two-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DORY, REPO_ROOT, MachineLoad, busy_loops, busy_machine_warning, log, percentile, table

QUERY = "what is dory"
TARGETS = {"help": ("ratio", 1.5), "bm25": ("seconds", 0.5), "hybrid": ("seconds", 1.5)}


def cases(corpus: Path) -> dict[str, list[str]]:
    """name -> command line. `dory` runs through its console script, as users run it."""
    search = [DORY, "--corpus", str(corpus), "search", QUERY, "--no-record"]
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "import click": [sys.executable, "-c", "import click"],
        "help": [DORY, "--help"],
        "bm25": [*search, "-m", "bm25"],
        "hybrid": [*search, "-m", "hybrid"],
    }


def environment(state: Path) -> dict[str, str]:
    """No DORY_* setting of the caller's; this checkout's code first on the path."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("DORY_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env["DORY_STATE_DIR"] = str(state)
    return env


def prepare(base: Path, env: dict[str, str]) -> Path:
    corpus = base / "corpus"
    for args in (["init", str(corpus)], ["--corpus", str(corpus), "reindex"]):
        subprocess.run([DORY, *args], env=env, check=True, capture_output=True)
    hybrid = [DORY, "--corpus", str(corpus), "search", QUERY, "--no-record", "--json"]
    answer = json.loads(subprocess.run(hybrid, env=env, check=True, capture_output=True, text=True).stdout)
    if answer["warnings"] or not answer["hits"]:
        raise SystemExit(f"the hybrid search does not answer from the vectors: {answer['warnings']}")
    return corpus


def timed_run(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one run; a failing command stops the benchmark."""
    before = os.times()
    started = time.perf_counter()
    done = subprocess.run(args, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = os.times()
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed with {done.returncode}:\n{done.stderr[-2000:]}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return wall, cpu


def measure(commands: dict[str, list[str]], env: dict[str, str], runs: int) -> dict[str, dict[str, float]]:
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    for args in commands.values():  # one untimed run each: bytecode written, files in the cache
        timed_run(args, env)
    for _ in range(runs):
        for name, args in commands.items():
            wall, cpu = timed_run(args, env)
            walls[name].append(wall)
            cpus[name].append(cpu)
    click_wall, click_cpu = percentile(walls["import click"], 50), percentile(cpus["import click"], 50)
    bare_wall, bare_cpu = percentile(walls["python -c pass"], 50), percentile(cpus["python -c pass"], 50)
    return {
        name: {
            "p50_s": percentile(walls[name], 50),
            "min_s": min(walls[name]),
            "cpu_p50_s": percentile(cpus[name], 50),
            "ratio": percentile(walls[name], 50) / click_wall,
            "cpu_ratio": percentile(cpus[name], 50) / click_cpu,
            "ratio_bare": percentile(walls[name], 50) / bare_wall,
            "cpu_ratio_bare": percentile(cpus[name], 50) / bare_cpu,
        }
        for name in commands
    }


def verdict(name: str, row: dict[str, float]) -> str:
    if name not in TARGETS:
        return "baseline"
    kind, bound = TARGETS[name]
    value = row["ratio"] if kind == "ratio" else row["p50_s"]
    unit = "x click" if kind == "ratio" else " s"
    return f"{'ok' if value <= bound else 'SHORT'} (target <= {bound}{unit})"


def report(result: dict[str, Any]) -> str:
    rows = [
        [
            name,
            r["p50_s"],
            r["min_s"],
            r["cpu_p50_s"],
            r["ratio"],
            r["cpu_ratio"],
            r["ratio_bare"],
            r["cpu_ratio_bare"],
            verdict(name, r),
        ]
        for name, r in result["cases"].items()
    ]
    headers = ["case", "p50 s", "min s", "cpu p50 s", "x click", "cpu x click", "x pass", "cpu x pass", "SPEC §11"]
    load = result["load"]
    return "\n".join(
        [
            f"one-shot `dory`, {result['runs']} runs each, busy loops: {result['busy']}",
            table(headers, rows, digits=3),
            f"other processes kept {load['others_cores'] or 0:.2f} of {load['cores']} cores busy on average",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="timed runs of each case (default 7)")
    parser.add_argument("--busy", action="store_true", help="run two busy-loop processes meanwhile")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="dory-startup-"))
    try:
        env = environment(base / "state")
        log("preparing a corpus (dory init + reindex)…")
        commands = cases(prepare(base, env))
        with busy_loops(2 if args.busy else 0):
            load = MachineLoad()
            measured = measure(commands, env, args.runs)
            result = {"runs": args.runs, "busy": args.busy, "cases": measured, "load": load.report()}
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(result, indent=2) if args.json else report(result))
    if not args.busy and (warning := busy_machine_warning(result["load"])):
        log(warning)


if __name__ == "__main__":
    main()
