"""Hook latency: `dory wake --hook` as Claude Code runs it at every session start.

    python scripts/bench/bench_hooks.py [--runs 40] [--json]

A fresh corpus (the template) and a real SessionStart event on stdin (its `cwd` is this repository,
so the `coding` profile is chosen). Each run is a new process, timed from spawn to exit, and checked:
exit 0, an `additionalContext` on stdout, nothing on stderr. Measured, interleaved round by round so
that machine noise falls on every row alike:

* baseline: `python -c pass` with the same interpreter, the floor of any Python hook;
* `dory wake --hook` through the `dory` entry point (dory.surfaces.launch), with no daemon (the block
  is built in-process), with `dory ops watch` running (its control socket), and with `dory serve`
  running and DORY_URL set (HTTP);
* the same command through the full CLI entry point (dory.surfaces.cli), with the daemon running: what
  the launcher saves.

SPEC §11 target: p95 ≤ 0.3 s with the daemon running. Embeddings are off (`DORY_EMBEDDER_BACKEND=none`):
wake never uses them, and a daemon embedding the template would only add noise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import REPO_ROOT, MachineLoad, busy_machine_warning, log, percentiles, table

from dory.statefolder import control_socket, request, state_folder

TARGET_P95_S = 0.3
LAUNCHER = "from dory.surfaces.launch import main; main()"
FULL_CLI = "from dory.surfaces.cli import main; main()"


def environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DORY_")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    env["DORY_EMBEDDER_BACKEND"] = "none"
    return env | extra


def dory(entry: str, *args: str) -> list[str]:
    return [sys.executable, "-c", entry, *args]


def event_bytes() -> bytes:
    event = {
        "session_id": "0b1c2d3e-bench",
        "transcript_path": str(Path(tempfile.gettempdir()) / "bench-transcript.jsonl"),
        "cwd": str(REPO_ROOT),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    return json.dumps(event).encode()


def timed_run(command: list[str], env: dict[str, str], stdin: bytes) -> tuple[float, str | None]:
    """Seconds from spawn to exit, and what was wrong with the answer (None: a good hook answer)."""
    started = time.perf_counter()
    done = subprocess.run(command, input=stdin, capture_output=True, env=env, timeout=60, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        return seconds, f"exit {done.returncode}"
    if command[-1] != "pass":
        if done.stderr:
            return seconds, done.stderr.decode(errors="replace").strip()[:200]
        if not json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]:
            return seconds, "empty additionalContext"
    return seconds, None


def wait_for(check: Callable[[], Any], what: str, deadline_s: float = 120) -> Any:
    stop = time.monotonic() + deadline_s
    while time.monotonic() < stop:
        try:
            answer = check()
        except Exception:
            answer = None
        if answer:
            return answer
        time.sleep(0.2)
    raise SystemExit(f"gave up waiting for {what}")


class Background:
    """`dory ops watch` or `dory serve` for the corpus, started and stopped by this script."""

    def __init__(self, corpus: Path, *args: str) -> None:
        self.corpus = corpus
        self.log = corpus.parent / f"{args[0]}.log"
        with self.log.open("w") as handle:
            self.proc = subprocess.Popen(
                dory(FULL_CLI, "--corpus", str(corpus), *args), env=environment(), stdout=handle, stderr=handle
            )
        socket = control_socket(state_folder(corpus, None, {}))
        wait_for(lambda: request(socket, "wake", {}, 5.0), f"dory {args[0]} to answer")

    def http_url(self) -> str:
        state = json.loads((state_folder(self.corpus, None, {}) / "daemon.json").read_text())
        return str(state["http_url"])

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(60)


def measure(rows: dict[str, tuple[list[str], dict[str, str]]], runs: int, stdin: bytes) -> dict[str, Any]:
    times: dict[str, list[float]] = {name: [] for name in rows}
    failures: dict[str, list[str]] = {name: [] for name in rows}
    for _ in range(runs):
        for name, (command, env) in rows.items():
            seconds, problem = timed_run(command, env, stdin)
            times[name].append(seconds)
            if problem:
                failures[name].append(problem)
    return {name: {**percentiles(times[name]), "failures": failures[name]} for name in rows}


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="dory-bench-hooks-"))
    try:
        return run_in(work / "corpus", args.runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_in(corpus: Path, runs: int) -> dict[str, Any]:
    subprocess.run(
        dory(FULL_CLI, "init", str(corpus), "--no-model"), env=environment(), check=True, capture_output=True
    )
    stdin, env = event_bytes(), environment()
    wake_args = ("--corpus", str(corpus), "wake", "--hook")
    baseline = ([sys.executable, "-c", "pass"], env)
    load = MachineLoad()
    log(f"{runs} runs each; no daemon …")
    results = measure(
        {"python -c pass": baseline, "wake --hook, no daemon": (dory(LAUNCHER, *wake_args), env)}, runs, stdin
    )
    log("with `dory ops watch` …")
    daemon = Background(corpus, "ops", "watch")
    try:
        results |= measure(
            {
                "python -c pass (daemon run)": baseline,
                "wake --hook, daemon": (dory(LAUNCHER, *wake_args), env),
                "wake --hook, daemon, full CLI entry": (dory(FULL_CLI, *wake_args), env),
            },
            runs,
            stdin,
        )
    finally:
        daemon.stop()
    log("with `dory serve` and DORY_URL …")
    server = Background(corpus, "serve", "--port", "0")
    try:
        http_env = environment(DORY_URL=server.http_url())
        row = {
            "python -c pass (server run)": baseline,
            "wake --hook, DORY_URL": (dory(LAUNCHER, "wake", "--hook"), http_env),
        }
        results |= measure(row, runs, stdin)
    finally:
        server.stop()
    return {"runs": runs, "target_p95_s": TARGET_P95_S, "results": results, "load": load.report()}


def report(result: dict[str, Any]) -> str:
    rows = [
        [name, r["n"], r["p50"] * 1000, r["p95"] * 1000, r["max"] * 1000, len(r["failures"])]
        for name, r in result["results"].items()
    ]
    lines = [table(["command", "runs", "p50 ms", "p95 ms", "max ms", "failed"], rows)]
    daemon_p95 = result["results"]["wake --hook, daemon"]["p95"]
    verdict = "met" if daemon_p95 <= result["target_p95_s"] else "NOT met"
    lines.append(f"\nSPEC §11 (p95 ≤ {result['target_p95_s'] * 1000:.0f} ms with the daemon): {verdict}")
    for name, r in result["results"].items():
        if r["failures"]:
            lines.append(f"{name}: {len(r['failures'])} failed, first: {r['failures'][0]}")
    warning = busy_machine_warning(result["load"])
    return "\n".join(lines + ([warning] if warning else []))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=40, help="runs per command and condition")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args)
    print(json.dumps(result, indent=2) if args.json else report(result))


if __name__ == "__main__":
    main()
