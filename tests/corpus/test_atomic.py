"""Atomic writes and the compare-and-swap behind `replace`, raced against a person's editor."""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from support.waiting import DEADLINE_S

from dory.corpus.atomic import create_exclusive, file_hash, sha256_of, swap_if_unchanged, write_atomic
from dory.errors import AlreadyExists, WriteConflict
from dory.models import ReindexRequest, WriteRequest
from dory.service import DoryService


def save_in_place(path: Path, text: str) -> None:
    """How nano or a plain `open(…, "w")` saves: truncate and rewrite the same file."""
    with open(path, "w") as handle:
        handle.write(text)


def save_by_rename(path: Path, text: str) -> None:
    """How vim (writebackup), VS Code and Obsidian save: a new file renamed over the old one."""
    tmp = path.with_name(f".{path.name}.editor-{random.random()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def race(path: Path, agent: Callable[[], None], editor_text: str, save: Callable[[Path, str], None]) -> str:
    """Run the agent's write and one editor save at nearly the same moment; the agent's outcome."""
    start = threading.Barrier(2)
    outcome: list[str] = []

    def agent_side() -> None:
        start.wait()
        try:
            agent()
            outcome.append("ok")
        except WriteConflict as exc:
            # What was on disk at that instant (an in-place save may be half done); never the agent's.
            assert exc.details["current_hash"] != sha256_of(b"agent\n")
            outcome.append("conflict")

    def editor_side() -> None:
        start.wait()
        time.sleep(random.uniform(0, 0.003))
        save(path, editor_text)

    threads = [threading.Thread(target=agent_side), threading.Thread(target=editor_side)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE_S)
    assert not any(thread.is_alive() for thread in threads)
    return outcome[0]


@pytest.mark.parametrize("save", [save_in_place, save_by_rename])
def test_an_editor_save_racing_a_swap_is_never_lost(tmp_path: Path, save: Callable[[Path, str], None]) -> None:
    path = tmp_path / "note.md"
    outcomes = []
    for round_ in range(300):
        path.write_text("original\n")
        expected = sha256_of(b"original\n")
        editor = f"the person's save {round_}\n"
        outcomes.append(race(path, lambda e=expected: swap_if_unchanged(path, b"agent\n", e), editor, save))
        # Whatever the interleaving, the person's save is what is on disk at the end: either it came
        # first and the agent got a conflict, or it came after the agent's write, or both overlapped
        # and the agent got a conflict.
        assert path.read_text() == editor, (round_, outcomes[-1])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["note.md"]  # no temporary file left behind
    print(f"{save.__name__}: {outcomes.count('ok')} ok, {outcomes.count('conflict')} conflicts")


def test_service_replace_racing_editor_saves(lexical_service: Callable[[dict[str, str | bytes]], DoryService]) -> None:
    svc = lexical_service({"notes/plan.md": "---\ntitle: Plan\n---\n\noriginal\n"})
    svc.reindex(ReindexRequest())
    path = Path(svc.settings.corpus) / "notes/plan.md"
    for round_ in range(40):
        before = path.read_bytes()
        req = WriteRequest(
            path="notes/plan.md", kind="replace", content=f"agent text {round_}", expected_hash=sha256_of(before)
        )
        editor = before.decode() + f"\nthe person's line {round_}\n"
        race(path, lambda r=req: svc.write(r), editor, random.choice([save_in_place, save_by_rename]))
        assert path.read_text() == editor


def test_swap_refuses_a_changed_or_deleted_file(tmp_path: Path) -> None:
    path = tmp_path / "a.md"
    path.write_text("one\n")
    with pytest.raises(WriteConflict) as err:
        swap_if_unchanged(path, b"two\n", sha256_of(b"zero\n"))
    assert err.value.details["current_hash"] == sha256_of(b"one\n") and path.read_text() == "one\n"
    path.unlink()
    with pytest.raises(WriteConflict):
        swap_if_unchanged(path, b"two\n", sha256_of(b"one\n"))
    assert not path.exists() and list(tmp_path.iterdir()) == []


def test_create_exclusive_never_overwrites(tmp_path: Path) -> None:
    path = tmp_path / "deep/new/a.md"
    create_exclusive(path, b"first\n")
    with pytest.raises(AlreadyExists) as err:
        create_exclusive(path, b"second\n")
    assert err.value.details["current_hash"] == file_hash(path) and path.read_text() == "first\n"
    write_atomic(path, b"third\n")
    assert path.read_text() == "third\n" and sorted(p.name for p in path.parent.iterdir()) == ["a.md"]
