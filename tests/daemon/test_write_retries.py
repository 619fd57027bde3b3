"""The daemon dies in the middle of writes; the CLI retries with the same request id; nothing doubles.

Each round starts a real daemon, sends an exact append and a memory write through the real CLI,
and kills the daemon: either at a precise crash point of the journal (the daemon's own DORY_FAULT
hook: after a file is written, before the operation's receipt is recorded) or with kill -9 at a
moment picked at random among states of the writes (at once, once the append is on disk, once the
memory is). The CLI then finds no daemon and finishes the call itself under the writer lock, with
the same request id: a write the daemon had already applied is answered from its receipt.
At the end every append and every memory event is on disk, and in the claim store, exactly once.
"""

from __future__ import annotations

import random
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from support.daemon import DaemonProcess, daemon_env
from support.waiting import DEADLINE_S, wait_until

from dory.config import load_settings
from dory.index.store import IndexStore
from dory.memory import claims

# The suite runs 12 rounds (each crash point three times); `-m slow` runs the full 50.
ROUNDS = [pytest.param(12, id="12-rounds"), pytest.param(50, id="50-rounds", marks=pytest.mark.slow)]
# Crash points: after the append's note is written; after the memory write's first and second file.
FAULTS = ["append:0", "memory-write:0", "memory-write:1", None]  # None: kill -9 (see KILL_MOMENTS)
NOTES = {
    "people/ada-lovelace.md": "---\ntitle: Ada Lovelace\n---\n\n## Summary\n\nMathematician.\n",
    "logs/appends.md": "# Appends\n",
}


def at_once(root: Path, n: int) -> bool:
    """the writes to be sent"""
    return True


def append_landed(root: Path, n: int) -> bool:
    """the append to be on disk"""
    return f"app{n}z" in (root / "logs/appends.md").read_text(encoding="utf-8")


def memory_landed(root: Path, n: int) -> bool:
    """the memory write's evidence to be on disk"""
    return any(f"Ada fact {n}z" in p.read_text(encoding="utf-8") for p in (root / "sources").rglob("*.md"))


KILL_MOMENTS = [at_once, append_landed, memory_landed]


def start_cli(cmd: list[str], root: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*cmd, "--corpus", str(root), *args, "--json"],
        env=daemon_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("rounds", ROUNDS)
def test_daemon_killed_mid_write_every_append_and_memory_event_lands_once(
    tmp_path: Path, dory_cmd: list[str], daemon_factory: Callable[..., DaemonProcess], rounds: int
) -> None:
    root = tmp_path / "corpus"
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    rng = random.Random(20261125)
    answers: dict[int, str] = {}
    for n in range(rounds):
        fault = FAULTS[n % len(FAULTS)]
        env = daemon_env(**({"DORY_FAULT": fault} if fault else {}))
        daemon = daemon_factory(root, env).start()
        assert daemon.proc is not None
        calls = [
            start_cli(dory_cmd, root, "write", "logs/appends.md", "--kind", "append", "--content", f"- app{n}z"),
            start_cli(dory_cmd, root, "memory-write", "Ada Lovelace", f"Ada fact {n}z", "--allow-canonical"),
        ]
        if fault is None:  # kill -9 at a moment picked at random among states of the round's writes
            moment = rng.choice(KILL_MOMENTS)
            wait_until(lambda m=moment, n=n: m(root, n), DEADLINE_S, f"round {n}: {moment.__doc__}")
            daemon.kill9()
        else:  # the daemon kills itself at the crash point
            daemon.proc.wait(120)
        for call in calls:
            out, err = call.communicate(timeout=180)
            assert call.returncode == 0, f"round {n} ({fault}): {err[-2000:]}\n{out}"
        answers[n] = out  # the memory write's answer, for the report of a fact that went missing
        if daemon.proc is not None and daemon.proc.poll() is None:
            daemon.kill9()

    final = daemon_factory(root, daemon_env()).start()  # recovers, reconciles and goes idle
    final.stop()
    text = (root / "logs/appends.md").read_text(encoding="utf-8")
    appends = Counter(word for word in text.split() if word.startswith("app"))
    assert appends == Counter(f"app{n}z" for n in range(rounds))
    settings = load_settings(root, env=daemon_env())
    store = IndexStore(settings.db_path, settings.index.tokenizer, readonly=True)
    try:
        statements = Counter(claim["statement"] for claim in claims.dump(store.conn))
        counts = {n: statements[f"Ada fact {n}z"] for n in range(rounds)}
        report = [what_became_of(root, store, n, answers[n]) for n, count in counts.items() if count != 1]
    finally:
        store.close()
    assert counts == dict.fromkeys(range(rounds), 1), "\n".join(report)
    evidence = [p.read_text(encoding="utf-8") for p in (root / "sources/semantic").rglob("*.md")]
    for n in range(rounds):
        assert sum(f"Ada fact {n}z" in body for body in evidence) == 1, f"evidence of fact {n}"


def what_became_of(root: Path, store: IndexStore, n: int, answer: str) -> str:
    """Everything known about round n's fact: the CLI's answer, its evidence on disk, the index's rows
    and skips for it, and the end of the daemons' log (a failure on a loaded CI machine is then
    explained by its own report)."""
    fact = f"Ada fact {n}z"
    files = sorted(str(p.relative_to(root)) for p in (root / "sources").rglob("*.md") if fact in p.read_text())
    events = store.conn.execute("SELECT file_id, claim_id, event FROM claim_events WHERE statement = ?", (fact,))
    skips = store.conn.execute("SELECT * FROM skipped").fetchall()
    known = {row[0] for row in store.conn.execute("SELECT path FROM files")}
    indexed = [path for path in files if path in known]
    log = (root.parent / f"{root.name}-daemon.log").read_text(encoding="utf-8", errors="replace")[-4000:]
    return (
        f"{fact}: answer {answer[-1500:]}\nevidence {files}, indexed {indexed}, events {events.fetchall()}, "
        f"skips {[tuple(row) for row in skips]}\ndaemon log: {log}"
    )
