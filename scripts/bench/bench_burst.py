"""Bursts: thousands of files arriving at once while `dory ops watch` runs.

    python scripts/bench/bench_burst.py [--files 5000] [--json]

Two bursts on a running daemon (lexical; vectors follow at the encoder's speed and are measured
by bench_index.py):

* copy: 5,000 real notes (mdcorpus tldr pages) copied into the corpus in one go;
* git checkout: a git repository whose two branches differ in 5,000 notes, switched back and forth.

For each: seconds from the start of the burst until `dory status` would report everything indexed
(every note on disk has its row, nothing queued), the number of write batches the daemon used,
its peak RSS, and whether the index then equals a full reindex of the same tree (file count and
(path, sha256) pairs). Baseline in the same run: a one-shot full `reindex --no-vectors` of the very
same tree into a fresh index, in this process.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import MachineLoad, bench_dir, busy_machine_warning, log, make_service, table, unpack

from dory.models import ReindexRequest
from dory.service.daemon_state import daemon_status

GIT = ("git", "-c", "user.email=bench@example.com", "-c", "user.name=bench", "-c", "core.autocrlf=false")


def tldr_notes(count: int, offset: int) -> list[Path]:
    source = unpack("mdcorpus") / "corpus" / "tldr"
    return sorted(source.rglob("*.md"))[offset : offset + count]


def copy_notes(paths: list[Path], source_root: Path, target: Path) -> None:
    for path in paths:
        dest = target / path.relative_to(source_root)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dest)


def indexed_pairs(service: Any) -> set[tuple[str, str]]:
    return {(r[0], r[1]) for r in service.store.conn.execute("SELECT path, sha256 FROM files")}


def daemon_rss_peak_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def wait_indexed(reader: Any, proc: subprocess.Popen[bytes], started: float) -> float:
    """Seconds from `started` until the index covers the disk and the daemon has nothing queued."""
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"daemon exited with {proc.returncode}")
        daemon = daemon_status(reader.settings)
        if daemon.running and daemon.pending_paths == 0 and _no_pending_changes(reader):
            return time.perf_counter() - started
        time.sleep(0.2)


def _no_pending_changes(reader: Any) -> bool:
    status = reader.status()
    return status.pending_changes == 0 and status.files_indexed == status.files_on_disk


def measure(name: str, burst: Any, corpus: Path, reader: Any, proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    before = daemon_status(reader.settings).writer.get("batches", 0)
    started = time.perf_counter()
    burst()
    burst_s = time.perf_counter() - started
    seconds = wait_indexed(reader, proc, started)
    after = daemon_status(reader.settings)
    fresh_state = bench_dir() / f"burst-fresh-{name}"
    shutil.rmtree(fresh_state, ignore_errors=True)
    fresh = make_service(corpus, fresh_state, **{"embedder.backend": "none"})
    t = time.perf_counter()
    fresh.reindex(ReindexRequest(full=True, vectors=False))
    baseline_s = time.perf_counter() - t
    same = indexed_pairs(fresh) == indexed_pairs(reader)
    files = len(indexed_pairs(fresh))
    fresh.close()
    log(f"{name}: indexed in {seconds:.1f} s (burst itself {burst_s:.1f} s); baseline full reindex {baseline_s:.1f} s")
    return {
        "burst": name,
        "files_in_corpus": files,
        "burst_s": burst_s,
        "indexed_after_s": seconds,
        "batches": after.writer.get("batches", 0) - before,
        "baseline_full_reindex_s": baseline_s,
        "matches_full_reindex": same,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    root = bench_dir() / "burst"
    shutil.rmtree(root, ignore_errors=True)
    corpus, state = root / "corpus", root / "state"
    source = unpack("mdcorpus") / "corpus"
    set_a, set_b = tldr_notes(args.files, 0), tldr_notes(args.files, args.files)
    corpus.mkdir(parents=True)
    copy_notes(tldr_notes(200, 3 * args.files), source, corpus)  # a small starting corpus
    env = {k: v for k, v in os.environ.items() if not k.startswith("DORY_")}
    env.update(DORY_STATE_DIR=str(state), DORY_EMBEDDER_BACKEND="none")
    reader = make_service(corpus, state, **{"embedder.backend": "none"})
    log_file = (root / "daemon.log").open("w")
    proc = subprocess.Popen(
        [str(Path(sys.executable).with_name("dory")), "--corpus", str(corpus), "ops", "watch"], env=env, stderr=log_file
    )
    load = MachineLoad()
    results = []
    try:
        wait_indexed(reader, proc, time.perf_counter())
        results.append(measure("copy", lambda: copy_notes(set_a, source, corpus), corpus, reader, proc))
        git = [*GIT, "-C", str(corpus)]
        subprocess.run([*git, "init", "-q", "-b", "a"], check=True)
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", "a"], check=True)
        subprocess.run([*git, "checkout", "-qb", "b"], check=True)
        subprocess.run([*git, "rm", "-rq", "tldr"], check=True)
        copy_notes(set_b, source, corpus)
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", "b"], check=True)
        wait_indexed(reader, proc, time.perf_counter())
        for branch in ("a", "b"):
            results.append(
                measure(
                    f"git checkout {branch}",
                    lambda b=branch: subprocess.run([*git, "checkout", "-q", b], check=True),
                    corpus,
                    reader,
                    proc,
                )
            )
        rss = daemon_rss_peak_mb(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(120)
        reader.close()
    return {
        "files": args.files,
        "results": results,
        "daemon_peak_rss_mb": rss,
        "daemon_exit_code": code,
        "machine": load.report(),
    }


def report(result: dict[str, Any]) -> str:
    rows = [
        [
            r["burst"],
            r["files_in_corpus"],
            r["indexed_after_s"],
            r["batches"],
            r["baseline_full_reindex_s"],
            r["matches_full_reindex"],
        ]
        for r in result["results"]
    ]
    lines = [
        table(
            ["burst", "files", "indexed after s", "batches", "baseline full reindex s", "= full reindex"],
            rows,
            digits=1,
        ),
        f"daemon peak RSS {result['daemon_peak_rss_mb']:.0f} MB; exit code on SIGTERM {result['daemon_exit_code']}",
    ]
    warning = busy_machine_warning(result["machine"])
    if warning:
        lines.append(warning)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args)
    print(json.dumps(result, indent=2) if args.json else report(result))


if __name__ == "__main__":
    main()
