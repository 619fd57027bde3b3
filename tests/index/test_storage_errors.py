"""A read-only or full disk under the index is reported as what it is, never as `index_locked`.

These tests mount small tmpfs file systems (real ENOSPC and EROFS from the kernel); they skip,
saying why, where the machine does not allow mounting.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "mnt"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def dory(cmd: list[str], root: Path, state: Path, *args: str) -> tuple[int, dict[str, object]]:
    env_args = ["--corpus", str(root), "--state-dir", str(state)]
    run = subprocess.run(
        [*cmd, *env_args, *args, "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "DORY_EMBEDDER_BACKEND": "none", "HOME": str(root.parent)},
    )
    return run.returncode, json.loads(run.stdout or "{}")


def corpus(tmp_path: Path, notes: int) -> Path:
    root = tmp_path / "corpus"
    (root / "notes").mkdir(parents=True)
    for n in range(notes):
        (root / "notes" / f"n{n}.md").write_text(f"# Note {n}\n\n" + "words about things " * 200, encoding="utf-8")
    return root


def test_an_index_on_a_read_only_disk_is_read_only(dory_cmd: list[str], tmp_path: Path, tmpfs: Path) -> None:
    root = corpus(tmp_path, 3)
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    code, out = dory(dory_cmd, root, tmpfs / "state", "reindex")
    assert code == 8 and out["error"]["code"] == "read_only", out  # type: ignore[index]
    assert "read-only" in str(out["error"]["message"])  # type: ignore[index]


def test_an_index_on_a_full_disk_is_disk_full_and_the_next_run_recovers(
    dory_cmd: list[str], tmp_path: Path, tmpfs: Path
) -> None:
    root = corpus(tmp_path, 60)  # far more text than 96 KB of index can hold
    code, out = dory(dory_cmd, root, tmpfs / "state", "reindex")
    assert code == 8 and out["error"]["code"] == "disk_full", out  # type: ignore[index]
    before = {p.name: p.read_bytes() for p in (root / "notes").iterdir()}
    subprocess.run(["mount", "-o", "remount,size=16m", str(tmpfs)], check=True)
    code, out = dory(dory_cmd, root, tmpfs / "state", "reindex")
    assert code == 0 and out["new"] == 60, out
    assert {p.name: p.read_bytes() for p in (root / "notes").iterdir()} == before  # notes never touched
