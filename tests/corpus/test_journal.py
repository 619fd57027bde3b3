"""Multi-file writes survive a crash between their files: the next start completes or rolls back."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from support.daemon import DaemonProcess, daemon_env

from dory.corpus.atomic import sha256_of
from dory.corpus.faults import FAULT_ENV
from dory.corpus.journal import FileChange, Journal
from dory.errors import WriteConflict

NOTE = "---\ntitle: Old plan\n---\n\nWe will use MySQL for everything.\n"


def run(cmd: list[str], root: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*cmd, "--corpus", str(root), *args], env=daemon_env() | env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def corpus(tmp_path: Path, dory_cmd: list[str]) -> Path:
    root = tmp_path / "corpus"
    (root / "knowledge").mkdir(parents=True)
    (root / "knowledge/plan.md").write_text(NOTE)
    assert run(dory_cmd, root, "reindex").returncode == 0
    return root


def crash_forget(cmd: list[str], root: Path) -> None:
    """`dory write --kind forget` killed right after the tombstone, before the page is marked."""
    done = run(
        cmd,
        root,
        "write",
        "knowledge/plan.md",
        "--kind",
        "forget",
        "--reason",
        "we chose SQLite",
        **{FAULT_ENV: "forget:0"},
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert (root / "knowledge/plan.tombstone.md").exists()
    assert (root / "knowledge/plan.md").read_text() == NOTE  # the second file was never written


def assert_forgotten(root: Path) -> None:
    page = (root / "knowledge/plan.md").read_text()
    assert "status: superseded" in page and "superseded_by: plan.tombstone.md" in page
    assert "we chose SQLite" in (root / "knowledge/plan.tombstone.md").read_text()
    assert not [p for p in (root / ".dory/journal").iterdir() if p.name != "failed"]


def test_the_next_cli_start_completes_an_interrupted_forget(corpus: Path, dory_cmd: list[str]) -> None:
    crash_forget(dory_cmd, corpus)
    status = json.loads(run(dory_cmd, corpus, "status", "--json").stdout)
    assert any("interrupted" in w for w in status["warnings"])
    reindex = run(dory_cmd, corpus, "reindex", "--json")
    assert reindex.returncode == 0, reindex.stderr
    assert any("forget" in w and "completed" in w for w in json.loads(reindex.stdout)["warnings"])
    assert_forgotten(corpus)
    found = json.loads(run(dory_cmd, corpus, "search", "MySQL", "-m", "bm25", "--json").stdout)
    assert found["hits"] == []  # a superseded page is never returned


def test_the_daemon_start_completes_an_interrupted_forget(corpus: Path, dory_cmd: list[str]) -> None:
    crash_forget(dory_cmd, corpus)
    daemon = DaemonProcess(dory_cmd, corpus, daemon_env()).start()
    try:
        daemon.wait_idle()
        assert_forgotten(corpus)
    finally:
        assert daemon.stop() == 0


def test_an_uncommitted_operation_is_discarded(tmp_path: Path) -> None:
    journal = Journal(tmp_path, tmp_path / ".dory/journal")
    staging = tmp_path / ".dory/journal/20260101-000000-1-abc"
    staging.mkdir(parents=True)
    (staging / "0.after").write_bytes(b"half-staged")
    assert journal.pending() == 1
    assert journal.recover() == (["20260101-000000-1-abc: never committed; discarded"], [])
    assert journal.pending() == 0 and sorted(p.name for p in tmp_path.iterdir()) == [".dory"]


def test_a_conflict_on_the_second_file_undoes_the_first(tmp_path: Path) -> None:
    (tmp_path / "page.md").write_text("mine\n")
    journal = Journal(tmp_path, tmp_path / ".dory/journal")
    changes = [FileChange("stone.md", None, b"stone\n"), FileChange("page.md", sha256_of(b"other\n"), b"new\n")]
    with pytest.raises(WriteConflict):
        journal.apply("forget", changes)
    assert not (tmp_path / "stone.md").exists() and (tmp_path / "page.md").read_text() == "mine\n"
    assert journal.pending() == 0


def test_an_interrupted_rollback_is_finished_and_a_later_edit_is_kept(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("new a\n")
    (tmp_path / "b.md").write_text("edited by a person\n")
    staging = tmp_path / ".dory/journal/op"
    staging.mkdir(parents=True)
    (staging / "0.before").write_text("old a\n")
    (staging / "1.before").write_text("old b\n")
    files = [
        {"path": "a.md", "before_hash": sha256_of(b"old a\n"), "after_hash": sha256_of(b"new a\n")},
        {"path": "b.md", "before_hash": sha256_of(b"old b\n"), "after_hash": sha256_of(b"new b\n")},
    ]
    (staging / "journal.json").write_text(json.dumps({"op": "x", "state": "rolling_back", "files": files}))
    report, touched = Journal(tmp_path, tmp_path / ".dory/journal").recover()
    assert touched == ["a.md", "b.md"]
    assert (tmp_path / "a.md").read_text() == "old a\n"
    assert (tmp_path / "b.md").read_text() == "edited by a person\n"
    assert "b.md was edited meanwhile" in report[0]
    assert os.listdir(tmp_path / ".dory/journal/failed") == ["op"]
