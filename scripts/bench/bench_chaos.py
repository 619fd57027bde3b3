"""Chaos: a real daemon, agents writing through the CLI, an editor saving notes, and a random killer.

    python scripts/bench/bench_chaos.py [--minutes 10] [--writers 2] [--vectors] [--seed 7] [--json]

For `--minutes`, on a corpus of 300 generated notes (under the bench folder, made anew each run):

* writers (`--writers` threads) run the real `dory` CLI as agents do: `write --kind create` of a new
  note, `write --kind append` to the writer's own log, and `memory-write` of a fact about one person.
  Every write carries a token unique to it. An exit code of 0 is an acknowledgement.
* an editor saves its own 20 notes directly on disk, cycling through in-place writes, temp file +
  rename, vim's backup-and-rewrite, and deletes; it remembers what each note should hold last.
* a killer sleeps a random 3-20 s, then kill -9s the daemon (restarting it at once) or, one time in
  five, kill -9s a CLI writer in flight (its write is then unacknowledged: it may or may not land).

Then the killer stops, a last daemon recovers, reconciles and goes idle, and the run checks:
every acknowledged write is on disk exactly once (memory writes: evidence and claim store both);
no unacknowledged write landed twice; every editor note holds the editor's last save (or is gone
when it was deleted last); no seed note changed; no journal entry is left and no temp file
(`.dory-new`, `.dory-old`) is left; and the daemon's index (files and chunks) equals a fresh
reindex of the same corpus into a separate state folder. "notes lost" and "index rows that
differ" must be 0.

This is not part of the suite (it runs for minutes and kills processes at random); the
deterministic crash-point enumeration lives in tests/service/test_crash_points.py.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import EDITOR_PATTERNS, MachineLoad, bench_dir, busy_machine_warning, log, save_like_an_editor, table

from dory.config import Settings, load_settings
from dory.corpus.atomic import leftovers
from dory.index.store import IndexStore
from dory.memory import claims
from dory.service.daemon_state import daemon_status

DORY = [str(Path(sys.executable).with_name("dory"))]  # the venv's console script
SEED_NOTES = 300
EDITOR_NOTES = 20
PERSON = "Ada Lovelace"
WORDS = [
    "harbour",
    "lantern",
    "orchard",
    "granite",
    "meadow",
    "compass",
    "willow",
    "ember",
    "thistle",
    "quarry",
    "ferry",
    "saffron",
]


@dataclass
class Write:
    kind: str  # create | append | memory
    token: str
    acknowledged: bool = False
    outcome: str = ""  # "ok", an error code, or "killed"


@dataclass
class Run:
    root: Path
    env: dict[str, str]
    deadline: float
    rng: random.Random
    writes: list[Write] = field(default_factory=list)
    in_flight: dict[int, subprocess.Popen[str]] = field(default_factory=dict)
    editor_expected: dict[str, str | None] = field(default_factory=dict)
    editor_saves: int = 0
    daemon_kills: int = 0
    cli_kills: int = 0
    daemon: subprocess.Popen[str] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def running(self) -> bool:
        return time.monotonic() < self.deadline


# -- the corpus and the daemon -----------------------------------------------------------------


def make_corpus(base: Path, rng: random.Random) -> Path:
    root = base / "corpus"
    shutil.rmtree(base, ignore_errors=True)
    for n in range(SEED_NOTES):
        folder = ("projects", "resources", "logs", "people")[n % 4]
        body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 200)))
        write(root / folder / f"seed-{n:03}.md", f"---\ntitle: Seed {n}\n---\n\n# Seed {n}\n\n{body}\n")
    write(root / "people/ada-lovelace.md", f"---\ntitle: {PERSON}\n---\n\n## Summary\n\nMathematician.\n")
    return root


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def start_daemon(run: Run) -> None:
    with (run.root.parent / "daemon.log").open("a") as handle:
        run.daemon = subprocess.Popen(
            [*DORY, "--corpus", str(run.root), "ops", "watch"], env=run.env, stdout=subprocess.DEVNULL, stderr=handle
        )


def wait_idle(run: Run, settings: Settings, timeout_s: float = 600) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert run.daemon is not None
        if run.daemon.poll() is not None:
            raise SystemExit(f"the daemon exited with {run.daemon.returncode}; see {run.root.parent / 'daemon.log'}")
        status = daemon_status(settings)
        if status.running and status.pid == run.daemon.pid and status.idle:
            return
        time.sleep(0.2)
    raise SystemExit("the daemon did not go idle")


# -- the actors ----------------------------------------------------------------------------------


def cli(run: Run, args: list[str]) -> tuple[int, dict[str, Any] | None]:
    proc = subprocess.Popen(
        [*DORY, "--corpus", str(run.root), *args, "--json"],
        env=run.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    with run.lock:
        run.in_flight[proc.pid] = proc
    out, _ = proc.communicate(timeout=600)
    with run.lock:
        run.in_flight.pop(proc.pid, None)
    try:
        answer = json.loads(out) if out.strip() else None
    except json.JSONDecodeError:
        answer = None
    return proc.returncode, answer if isinstance(answer, dict) else None


def writer(run: Run, me: int) -> None:
    rng = random.Random(run.rng.random())
    n = 0
    while run.running():
        kind = rng.choice(("create", "append", "memory"))
        token = f"{kind[:3]}{me}x{n}z"
        n += 1
        if kind == "create":
            args = ["write", f"chaos/w{me}-{n}.md", "--content", f"# W{me} {n}\n\ntoken {token}\n"]
        elif kind == "append":
            args = ["write", f"logs/chaos-{me}.md", "--kind", "append", "--content", f"- {token}"]
        else:
            args = ["memory-write", PERSON, f"Ada chaos fact {token}", "--allow-canonical"]
        entry = Write(kind, token)
        with run.lock:
            run.writes.append(entry)
        code, answer = cli(run, args)
        entry.acknowledged = code == 0
        entry.outcome = "ok" if code == 0 else ("killed" if code < 0 else str((answer or {}).get("code", code)))


def editor(run: Run) -> None:
    rng = random.Random(run.rng.random())
    step = 0
    while run.running():
        rel = f"edits/e-{rng.randrange(EDITOR_NOTES)}.md"
        path = run.root / rel
        pattern = rng.choice((*EDITOR_PATTERNS, "delete"))
        text = f"# Edit {step}\n\neditor token etok{step}z\n"
        if pattern == "delete":
            path.unlink(missing_ok=True)
            run.editor_expected[rel] = None
        else:
            save_like_an_editor(path, text, pattern)
            run.editor_expected[rel] = text
        run.editor_saves += 1
        step += 1
        time.sleep(rng.uniform(0.05, 0.5))


def killer(run: Run) -> None:
    rng = random.Random(run.rng.random())
    while run.running():
        time.sleep(rng.uniform(3, 20))
        if not run.running():
            return
        with run.lock:
            victims = list(run.in_flight.values())
        if victims and rng.random() < 0.2:
            rng.choice(victims).kill()
            run.cli_kills += 1
            continue
        assert run.daemon is not None
        run.daemon.kill()
        run.daemon.wait()
        run.daemon_kills += 1
        start_daemon(run)


# -- the checks ------------------------------------------------------------------------------------


def occurrences(root: Path) -> Counter[str]:
    """How many times each token is in the corpus's notes: notes' tokens by occurrence, a memory fact
    by the evidence notes (sources/) that hold it (its statement is in the evidence's frontmatter and
    body; the person's canonical page may cite it too, which is not a copy)."""
    found: Counter[str] = Counter()
    for path in root.rglob("*.md"):
        parts = path.relative_to(root).parts
        if ".dory" in parts:
            continue
        words = path.read_text(encoding="utf-8", errors="replace").split()
        found.update(w for w in words if w.endswith("z") and w[:3] in ("cre", "app"))
        if parts[0] == "sources":
            found.update({w for w in words if w.endswith("z") and w.startswith("mem")})
    return found


def claim_counts(settings: Settings) -> Counter[str]:
    store = IndexStore(settings.db_path, settings.index.tokenizer, readonly=True)
    try:
        return Counter(str(c["statement"]).rsplit(" ", 1)[-1] for c in claims.dump(store.conn))
    finally:
        store.close()


def index_rows(settings: Settings) -> set[tuple[Any, ...]]:
    store = IndexStore(settings.db_path, settings.index.tokenizer, readonly=True)
    try:
        files = {("file", *row) for row in store.conn.execute("SELECT path, sha256 FROM files")}
        chunks = {
            ("chunk", *row)
            for row in store.conn.execute(
                "SELECT f.path, c.ordinal, c.start_line, c.end_line, c.content_hash "
                "FROM chunks c JOIN files f ON f.id = c.file_id"
            )
        }
        return files | chunks
    finally:
        store.close()


def fresh_index_rows(run: Run) -> set[tuple[Any, ...]]:
    state = run.root.parent / "fresh-state"
    shutil.rmtree(state, ignore_errors=True)
    args = [*DORY, "--corpus", str(run.root), "--state-dir", str(state), "reindex", "--no-vectors", "--json"]
    subprocess.run(args, env=run.env, check=True, capture_output=True, timeout=1800)
    return index_rows(load_settings(run.root, {"state_dir": str(state)}, env=run.env))


def check(run: Run, seeds: dict[str, str], settings: Settings) -> dict[str, Any]:
    on_disk = occurrences(run.root)
    in_claims = claim_counts(settings)
    acked = [w for w in run.writes if w.acknowledged]
    exactly_once = sum(1 for w in acked if on_disk[w.token] == 1 and (w.kind != "memory" or in_claims[w.token] == 1))
    missing = [w.token for w in acked if on_disk[w.token] == 0]
    doubled = [w.token for w in run.writes if on_disk[w.token] > 1 or in_claims[w.token] > 1]
    editor_lost = [rel for rel, text in run.editor_expected.items() if read(run.root / rel) != text]
    seeds_changed = [rel for rel, text in seeds.items() if read(run.root / rel) != text]
    daemon_rows, fresh_rows = index_rows(settings), fresh_index_rows(run)
    journal = settings.journal_path
    return {
        "writes attempted": len(run.writes),
        "acknowledged": len(acked),
        "acknowledged, on disk exactly once": exactly_once,
        "unacknowledged that landed": sum(1 for w in run.writes if not w.acknowledged and on_disk[w.token]),
        "writes on disk twice or more": len(doubled),
        "editor saves": run.editor_saves,
        "notes lost": len(missing) + len(editor_lost) + len(seeds_changed),
        "index rows that differ from a fresh reindex": len(daemon_rows ^ fresh_rows),
        "journal entries left": len(list(journal.glob("*/journal.json"))),
        "journal entries failed": len(list(journal.glob("failed/*"))),
        "temp files left": len(leftovers(run.root)),
        "daemon kills": run.daemon_kills,
        "cli kills": run.cli_kills,
        "outcomes": dict(Counter(w.outcome for w in run.writes)),
        "lost": {"acknowledged": missing, "editor": editor_lost, "seeds": seeds_changed, "doubled": doubled},
    }


def read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.exists() else None


# -- main ----------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--writers", type=int, default=2)
    parser.add_argument("--vectors", action="store_true", help="embed too (default: lexical only)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    rng = random.Random(args.seed)
    root = make_corpus(bench_dir() / "chaos", rng)
    seeds = {str(p.relative_to(root)): p.read_text(encoding="utf-8") for p in root.rglob("seed-*.md")}
    env = {key: value for key, value in os.environ.items() if not key.startswith("DORY_")}
    if not args.vectors:
        env["DORY_EMBEDDER_BACKEND"] = "none"
    settings = load_settings(root, env=env)
    run = Run(root, env, deadline=0.0, rng=rng)
    start_daemon(run)
    wait_idle(run, settings)
    log(f"chaos: {SEED_NOTES} seed notes indexed; running for {args.minutes} min")

    load = MachineLoad()
    run.deadline = time.monotonic() + args.minutes * 60
    actors = [threading.Thread(target=writer, args=(run, n)) for n in range(args.writers)]
    actors += [threading.Thread(target=editor, args=(run,)), threading.Thread(target=killer, args=(run,))]
    for actor in actors:
        actor.start()
    for actor in actors:
        actor.join()
    machine = load.report()

    assert run.daemon is not None
    if run.daemon.poll() is not None:  # it may have died on its own: that is reported, then restarted
        log(f"the daemon had exited with {run.daemon.returncode}")
        start_daemon(run)
    wait_idle(run, settings)
    run.daemon.send_signal(signal.SIGTERM)
    run.daemon.wait(600)
    report = check(run, seeds, settings) | {"others_cores_busy": machine["others_cores"]}
    print_report(report, args.json)
    if warning := busy_machine_warning(machine):
        log(warning)


def print_report(report: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(report, indent=2))
        return
    rows = [(key, value) for key, value in report.items() if not isinstance(value, dict)]
    print(table(["measure", "value"], rows, digits=2))
    print("outcomes:", report["outcomes"])
    if any(report["lost"].values()):
        print("LOST OR DOUBLED:", json.dumps(report["lost"], indent=2))


if __name__ == "__main__":
    main()
