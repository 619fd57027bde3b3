"""Indexing while notes change underneath, and two `dory reindex` processes at once.

The writer lock (dory/index/lock.py) is a non-blocking flock with wait_s=0: a second writer does not
wait, it fails at once with IndexLocked (code index_locked, exit 6) naming the holder's pid.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest
from support.procs import waits_with_open
from support.waiting import DEADLINE_S, wait_until

from dory.config import load_settings
from dory.index.lock import WriterLock
from dory.models import ReindexRequest
from dory.service import DoryService

NOTES = 40


def note_text(i: int, version: int) -> str:
    body = "\n".join(
        f"Paragraph {p} of note {i}, version {version}: " + "words " * (version % 7 + p) for p in range(version % 5 + 1)
    )
    return f"---\ntitle: Note {i}\nversion: {version}\n---\n# Note {i}\n\n{body}\n\n## Tail\nend of {version}\n"


def lexical(root: Path, state_dir: Path | None = None) -> DoryService:
    overrides = {"embedder.backend": "none", "state_dir": str(state_dir) if state_dir else None}
    return DoryService(load_settings(root, overrides, env={}))


class Rewriter(threading.Thread):
    """Rewrites notes until stopped: half by atomic replace (temp file + rename, as editors save), half in
    place in two writes (truncate, write, flush, write), so a reader can catch a file half written."""

    def __init__(self, root: Path) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.stop = threading.Event()
        self.writes = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        rng = random.Random(7)
        version = 1
        try:
            while not self.stop.is_set():
                i = rng.randrange(NOTES)
                version += 1
                path = self.root / f"notes/n{i:02}.md"
                data = note_text(i, version).encode()
                if version % 2:
                    tmp = path.with_name(f".{path.name}.{version}.tmp")
                    tmp.write_bytes(data)
                    os.replace(tmp, path)
                else:
                    with path.open("r+b") as handle:
                        handle.truncate(0)
                        handle.write(data[: len(data) // 2])
                        handle.flush()
                        time.sleep(0.0005)
                        handle.write(data[len(data) // 2 :])
                self.writes += 1
                time.sleep(0.001)
        except BaseException as exc:  # reported by the test
            self.error = exc


def test_reindex_during_rewrites_converges_to_a_fresh_full_index(tmp_path: Path, snapshot, tree_digest) -> None:
    root = tmp_path / "corpus"
    (root / "notes").mkdir(parents=True)
    for i in range(NOTES):
        (root / f"notes/n{i:02}.md").write_text(note_text(i, 0))
    svc = lexical(root)
    rewriter = Rewriter(root)
    runs = []
    try:
        svc.reindex(ReindexRequest())
        rewriter.start()

        def raced_enough() -> bool:
            """A fixed amount of racing, however fast the machine: reindexes keep running (and must
            never raise) until the rewriter has written 200 times, 8 reindexes ran and one saw a change."""
            runs.append(svc.reindex(ReindexRequest()))
            if rewriter.error is not None or not rewriter.is_alive():
                return True  # reported below
            return rewriter.writes >= 200 and len(runs) >= 8 and any(r.new + r.changed + r.deleted for r in runs)

        wait_until(raced_enough, what="reindexes racing 200 rewrites")
        rewriter.stop.set()
        rewriter.join(DEADLINE_S)
        assert not rewriter.is_alive() and rewriter.error is None, repr(rewriter.error)
        final = svc.reindex(ReindexRequest())
        incremental = snapshot(svc.store)
    finally:
        rewriter.stop.set()
        svc.close()
    assert final.skipped == [] and not any(name.endswith(".tmp") for name in os.listdir(root / "notes"))
    fresh = lexical(root, tmp_path / "fresh-state")
    try:
        assert fresh.reindex(ReindexRequest(full=True)).new == NOTES
        full = snapshot(fresh.store)
    finally:
        fresh.close()
    disk = {
        f"notes/{name}": "sha256:" + digest
        for name, digest in ((rel.split("/", 1)[1], d) for rel, d in tree_digest(root).items())
    }
    assert {path: row["sha256"] for path, row in incremental["files"].items()} == disk
    assert incremental == full


def test_incremental_reindex_after_rewrites_reports_everything_unchanged(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    (root / "notes").mkdir(parents=True)
    for i in range(NOTES):
        (root / f"notes/n{i:02}.md").write_text(note_text(i, 0))
    svc = lexical(root)
    try:
        svc.reindex(ReindexRequest())
        for i in range(0, NOTES, 3):
            (root / f"notes/n{i:02}.md").write_text(note_text(i, 99))
        first = svc.reindex(ReindexRequest())
        again = svc.reindex(ReindexRequest())
    finally:
        svc.close()
    assert (first.changed, first.unchanged) == (len(range(0, NOTES, 3)), NOTES - len(range(0, NOTES, 3)))
    assert (again.new, again.changed, again.deleted, again.touched, again.unchanged) == (0, 0, 0, 0, NOTES)


# -- two processes -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """No inherited DORY_* settings, no model, and a private bytecode cache shared by this module's runs."""
    cache = tmp_path_factory.mktemp("cli-cache")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DORY_") and k != "PYTHONDONTWRITEBYTECODE"}
    clean.update(
        DORY_EMBEDDER_BACKEND="none", DORY_CACHE_DIR=str(cache / "dory"), PYTHONPYCACHEPREFIX=str(cache / "pycache")
    )
    return clean


def start_reindex(cmd: list[str], root: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*cmd, "--corpus", str(root), "reindex", "--json", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=DEADLINE_S)
    return proc.returncode, out, err


def make_corpus(tmp_path: Path, files: int) -> Path:
    root = tmp_path / "corpus"
    (root / "notes").mkdir(parents=True)
    for i in range(files):
        (root / f"notes/n{i:03}.md").write_text(note_text(i, 0))
    return root


def test_reindex_while_another_process_holds_the_writer_lock_is_index_locked(dory_cmd, tmp_path: Path, env) -> None:
    root = make_corpus(tmp_path, 5)
    with WriterLock(root / ".dory" / "writer.lock"):
        code, out, err = finish(start_reindex(dory_cmd, root, env, "--wait", "0"))
    assert code == 6, err
    body = json.loads(out)["error"]
    assert (body["code"], body["type"]) == ("index_locked", "IndexLocked")
    assert body["message"] == (
        f"the index is being written by another Dory process (pid {os.getpid()}); wait for it to finish or stop it"
    )
    assert body["details"] == {"pid": str(os.getpid())}
    code, out, err = finish(start_reindex(dory_cmd, root, env))  # released: the next writer proceeds
    assert code == 0, err
    assert json.loads(out)["new"] == 5


def test_a_reindex_waits_for_the_lock_and_says_so(dory_cmd, tmp_path: Path, env) -> None:
    root = make_corpus(tmp_path, 3)
    waiting = f"waiting for another Dory process (pid {os.getpid()}) to finish writing the index"
    stderr = tmp_path / "reindex.err"
    with WriterLock(root / ".dory" / "writer.lock"), stderr.open("w") as err_file:
        # --wait far beyond any start-up time: the lock is released as soon as the CLI says it waits.
        proc = subprocess.Popen(
            [*dory_cmd, "--corpus", str(root), "reindex", "--json", "--wait", "600"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=err_file,
            text=True,
        )
        try:
            wait_until(
                lambda: waiting in stderr.read_text() or proc.poll() is not None,
                what="the reindex to report that it waits for the writer lock",
            )
            assert proc.poll() is None, stderr.read_text()  # it said so while the lock was held, and waits
        except BaseException:
            proc.kill()
            proc.wait(DEADLINE_S)
            raise
    out, _ = proc.communicate(timeout=DEADLINE_S)  # released: it goes on
    err = stderr.read_text()
    assert proc.returncode == 0, err
    assert err.count(waiting) == 1
    assert json.loads(out)["new"] == 3


def test_two_simultaneous_reindexes_one_writes_the_other_is_locked_out_or_follows(
    dory_cmd, tmp_path: Path, env
) -> None:
    root = make_corpus(tmp_path, 200)
    code, _, err = finish(start_reindex(dory_cmd, root, env))
    assert code == 0, err
    for i in range(200):
        (root / f"notes/n{i:03}.md").write_text(note_text(i, 1))
    procs = [start_reindex(dory_cmd, root, env, "--wait", "0") for _ in range(2)]
    results = [finish(p) for p in procs]
    codes = sorted(code for code, _, _ in results)
    assert codes in ([0, 0], [0, 6]), results
    bodies = [json.loads(out) for _, out, _ in results]
    locked = [b["error"] for b in bodies if "error" in b]
    assert all(e["code"] == "index_locked" for e in locked)
    done = [b for b in bodies if "error" not in b]
    assert sum(b["changed"] for b in done) == 200  # each change applied exactly once
    svc = lexical(root)
    try:
        after = svc.reindex(ReindexRequest())
    finally:
        svc.close()
    assert (after.changed, after.new, after.unchanged) == (0, 0, 200)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to see when a process is waiting")
def test_two_first_ever_reindexes_never_crash_on_schema_creation(dory_cmd, tmp_path: Path, env) -> None:
    """Writers queue on the writer lock before they open the database, so only one is ever inside the
    schema migration; holding SQLite's write lock for a moment makes that one wait there while the
    other waits for the writer lock. Both then finish, one after the other."""
    root = make_corpus(tmp_path, 20)
    db = root / ".dory" / "index.sqlite"
    db.parent.mkdir()
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("PRAGMA journal_mode = WAL")
    blocker.execute("BEGIN IMMEDIATE")
    lock = root / ".dory" / "writer.lock"
    procs = [start_reindex(dory_cmd, root, env), start_reindex(dory_cmd, root, env)]

    def one_migrates_while_the_other_queues() -> bool:
        if any(p.poll() is not None for p in procs):
            return True  # one gave up or crashed: the assertion below shows it
        holder = WriterLock.holder(lock)
        inside = [p for p in procs if str(p.pid) == holder and waits_with_open(p.pid, db)]
        queued = [p for p in procs if str(p.pid) != holder and waits_with_open(p.pid, lock)]
        return bool(inside and queued)

    try:
        # The lock holder waits with the database open (its migration needs SQLite's write lock, which
        # the blocker holds) and the other waits with the writer lock open, for its turn.
        wait_until(one_migrates_while_the_other_queues, what="one writer in the migration and one queued")
        assert all(p.poll() is None for p in procs), [finish(p) for p in procs if p.poll() is not None]
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    results = [finish(p) for p in procs]
    assert [code for code, _, _ in results] == [0, 0], results
    assert sorted(json.loads(out)["new"] for _, out, _ in results) == [0, 20]  # the second found it done
