"""Every crash point of every multi-step write: the note ends old or new, never missing or half.

For each kind of write, a traced run lists the crash points it passes (dory/corpus/faults.py), in
order and with repeats. Then, for each of them, a forked child makes the same write and is killed
(SIGKILL, no cleanup) at exactly that point; the parent recovers as the next writer would (a
reindex: the journal, the leftover sweep) and checks every note the write touches: its bytes are
exactly the old or the new ones, no temporary file is left, no journal entry is left committed or
failed, and the index agrees with the files.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from dory.config import Settings, load_settings
from dory.corpus.atomic import sha256_of
from dory.corpus.faults import FAULT_ENV, TRACE_ENV
from dory.errors import DoryError
from dory.models import MemoryWriteRequest, ReindexRequest, WriteRequest
from dory.service import DoryService

PAGE = "people/ana-lima.md"
NOTE = "notes/plain.md"
SEED = {
    PAGE: "---\ntitle: Ana Lima\n---\n\n## Summary\n\nAna makes pottery.\n",
    NOTE: "# Plain\n\nfirst line\n",
}
Write = Callable[[DoryService], object]


def exact(**fields: object) -> Write:
    return lambda svc: svc.write(WriteRequest(**fields))  # type: ignore[arg-type]


WRITES: dict[str, tuple[Write, list[str]]] = {
    "create": (exact(path="notes/new.md", kind="create", content="a new note"), ["notes/new.md"]),
    "append": (exact(path=NOTE, kind="append", content="second line"), [NOTE]),
    "replace": (exact(path=NOTE, kind="replace", content="# Plain\n\nreplaced\n", expected_hash="SEEDHASH"), [NOTE]),
    "forget": (exact(path=NOTE, kind="forget", reason="obsolete"), [NOTE, "notes/plain.tombstone.md"]),
    "memory-write": (
        lambda svc: svc.memory_write(
            MemoryWriteRequest(subject="Ana Lima", content="Ana glazes in blue", allow_canonical=True)
        ),
        [PAGE],
    ),
}


def settings_for(root: Path) -> Settings:
    return load_settings(root, {"embedder.backend": "none"}, env={})


def seed(root: Path) -> dict[str, bytes]:
    for rel, text in SEED.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    svc = DoryService(settings_for(root))
    svc.reindex(ReindexRequest())
    svc.close()
    return snapshot(root)


# Evidence artifacts are named and stamped by the time of the write (`ana-lima-204015-548882-added.md`)
# and carry a claim id made from it; the write log records the time, the call's request id and the
# hash of what was written (which holds the time).
_CLOCK = re.compile(
    rb"-\d{6}-\d{6}-|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z|clm-[0-9a-f]{12}"
    rb'|(?<="request_id": ")[0-9a-f]{32}|(?<="hash": "sha256:)[0-9a-f]{64}'
)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the corpus (not the state folder) by relative path, the write's clock and id masked."""
    return {
        _CLOCK.sub(b"-T-", str(p.relative_to(root)).encode()).decode(): _CLOCK.sub(b"T", p.read_bytes())
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".dory" not in p.relative_to(root).parts
    }


def in_child(root: Path, write: Write, env: dict[str, str], outcome: Path | None = None) -> int:
    """Run the write in a forked child with `env` set; return its exit status (killed: -9). The
    child writes the error code it met (or "ok") to `outcome`."""
    pid = os.fork()
    if pid == 0:  # the child: no cleanup of any kind may run after the write
        code, said = 0, "ok"
        try:
            os.environ.update(env)
            write(DoryService(settings_for(root)))
        except DoryError as exc:
            code, said = 1, exc.code
        except BaseException as exc:
            code, said = 1, f"{type(exc).__name__}: {exc}"
        if outcome is not None:
            outcome.write_text(said)
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def with_hash(write_name: str, root: Path) -> Write:
    write, _ = WRITES[write_name]
    if write_name != "replace":
        return write
    current = sha256_of((root / NOTE).read_bytes())
    return exact(path=NOTE, kind="replace", content="# Plain\n\nreplaced\n", expected_hash=current)


def crash_points_of(tmp_path: Path, write_name: str) -> tuple[list[str], dict[str, bytes], dict[str, bytes]]:
    """(the crash points a write passes, in order, each as `name#k`; the corpus before; after)."""
    root = tmp_path / "traced"
    before = seed(root)
    trace = tmp_path / "trace.txt"
    assert in_child(root, with_hash(write_name, root), {TRACE_ENV: str(trace)}) == 0
    seen: Counter[str] = Counter()
    points = []
    for name in trace.read_text().split():
        points.append(f"{name}#{seen[name]}")
        seen[name] += 1
    return points, before, snapshot(root)


def diff(state: dict[str, bytes], before: dict[str, bytes], after: dict[str, bytes]) -> str:
    paths = sorted(set(state) | set(before) | set(after))

    def which(rel: str) -> str:
        return "old" if state.get(rel) == before.get(rel) else "new" if state.get(rel) == after.get(rel) else "NEITHER"

    return "; ".join(
        f"{rel}: {which(rel)}"
        for rel in paths
        if before.get(rel) != after.get(rel) or state.get(rel) != before.get(rel)
    )


def leftovers(root: Path) -> list[str]:
    return [str(p) for p in root.rglob("*.tmp") if ".dory-" in p.name]


@pytest.mark.parametrize("write_name", list(WRITES))
def test_every_crash_point_ends_with_the_old_or_the_new_note(tmp_path: Path, write_name: str) -> None:
    points, before, after = crash_points_of(tmp_path, write_name)
    touched = WRITES[write_name][1]
    assert len(points) >= 5, points  # the trace really walked the write
    missing = committed = 0
    for n, point in enumerate(points):
        root = tmp_path / f"crash-{n}"
        assert seed(root) == before
        assert in_child(root, with_hash(write_name, root), {FAULT_ENV: point}) == -9, f"{point} never fired"
        svc = DoryService(settings_for(root))
        report = svc.reindex(ReindexRequest())  # what the next writer (or daemon start) does first
        state = snapshot(root)
        missing += sum(1 for rel in touched if rel in before and rel in after and rel not in state)
        # All or nothing: the whole corpus is as before the write, or as after it.
        assert state in (before, after), f"{write_name} killed at {point}: {diff(state, before, after)}"
        assert leftovers(root) == [], f"{write_name} killed at {point}: temporary files left"
        journal = svc.settings.journal_path
        pending = [p.name for p in journal.rglob("*") if p.is_dir()] if journal.exists() else []
        committed += len(pending)
        assert pending == [], f"{write_name} killed at {point}: journal entries left {pending}"
        indexed = {row[0]: row[1] for row in svc.store.conn.execute("SELECT path, sha256 FROM files")}
        for rel in touched:
            if (root / rel).exists():
                assert indexed.get(rel) == sha256_of((root / rel).read_bytes()), f"{write_name} at {point}: stale"
        assert all(w.startswith(("journal:", "recovery:")) for w in report.warnings), report.warnings
        svc.close()
    print(f"{write_name}: {len(points)} crash points, {missing} notes missing, {committed} journals left committed")


# Steps after which no file system call happens before the write is final: nothing can fail there.
NO_IO_AFTER = ("journal.applied", "journal.receipt")


@pytest.mark.parametrize("write_name", list(WRITES))
def test_a_file_system_error_at_any_step_rolls_back_and_never_blocks_the_next_write(
    tmp_path: Path, write_name: str
) -> None:
    """EACCES (a permission problem, which root cannot provoke with chmod) raised at each step, as
    the file system call before it would: the write fails with permission_denied, every file is as
    before, the journal is clean, and the same write then succeeds (it was not applied later)."""
    points, before, after = crash_points_of(tmp_path, write_name)
    failing = [p for p in points if p.split("#")[0] not in NO_IO_AFTER]
    assert len(failing) >= 4, points
    for n, point in enumerate(failing):
        root = tmp_path / f"fail-{n}"
        seed(root)
        outcome = tmp_path / f"outcome-{n}"
        assert in_child(root, with_hash(write_name, root), {FAULT_ENV: f"{point}=EACCES"}, outcome) == 1
        assert outcome.read_text() == "permission_denied", f"{write_name} failing at {point}: {outcome.read_text()}"
        assert snapshot(root) == before, f"{write_name} failing at {point}: {diff(snapshot(root), before, after)}"
        assert leftovers(root) == [], f"{write_name} failing at {point}: temporary files left"
        journal = settings_for(root).journal_path
        assert not journal.exists() or not any(journal.iterdir()), f"{write_name} failing at {point}: journal"
        assert in_child(root, with_hash(write_name, root), {}) == 0, f"the next write after {point} failed"
        assert snapshot(root) == after


def test_leftovers_of_a_dead_process_are_reported_then_put_back_and_removed(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    seed(root)
    child = subprocess.Popen(["true"])  # a process that has certainly exited: its pid is dead
    child.wait()
    pid = child.pid
    note = root / NOTE
    aside = note.parent / f".{note.name}.dory-old-{pid}-0123abcd.tmp"
    stray = note.parent / f".other.md.dory-new-{pid}-89abcdef.tmp"
    os.rename(note, aside)  # as a crash mid-swap leaves it
    stray.write_bytes(b"half a note")
    svc = DoryService(settings_for(root))
    assert any("2 temporary files were left by crashed writes" in w for w in svc.status().warnings)
    report = svc.reindex(ReindexRequest())
    assert note.read_text(encoding="utf-8") == SEED[NOTE] and not aside.exists() and not stray.exists()
    assert sum(w.startswith("recovery:") for w in report.warnings) == 3  # put back, removed, removed
    assert not any("temporary files" in w for w in svc.status().warnings)
    svc.close()
