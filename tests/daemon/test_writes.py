"""Writes while `dory ops watch` runs: the CLI hands them to the daemon (the one writer), and the
next search sees them at once. The end-to-end story of issue 4 through the real command line."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.daemon import DaemonProcess, daemon_env

from dory.memory.canonical import TIMELINE_MARKER

SEED = {
    "people/maria-lopez.md": "---\ntitle: Maria Lopez\naliases: [Maria]\n---\n\n## Summary\n\nMet at PyCon.\n",
    "projects/atlas/state.md": "---\ntitle: Atlas\n---\n\n## Summary\n\nThe mapping service.\n",
}


def claims_table(root: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(root / ".dory/index.sqlite")
    try:
        return conn.execute("SELECT * FROM claims ORDER BY entity, valid_from, claim_id").fetchall()
    finally:
        conn.close()


def test_memory_writes_through_the_daemon_end_to_end(
    tmp_path: Path, daemon_factory: Callable[..., DaemonProcess]
) -> None:
    root = tmp_path / "corpus"
    for rel, text in SEED.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    daemon = daemon_factory(root, daemon_env()).start()

    def ok(*args: str) -> Any:
        code, body, err = daemon.cli(*args)
        assert code == 0, (args, body, err)
        return body

    ok("memory-write", "Maria", "Maria lives in Valencia", "--allow-canonical")
    ok("memory-write", "Maria Lopez", "Maria drinks oat milk lattes", "--kind", "preference", "--allow-canonical")
    ok(
        "memory-write",
        "maria",
        "Maria switched to black coffee",
        "--kind",
        "preference",
        "--action",
        "replace",
        "--allow-canonical",
    )
    decision = ok(
        "memory-write",
        "Atlas uses PostGIS",
        "Atlas stores geometry in PostGIS",
        "--kind",
        "decision",
        "--allow-canonical",
    )
    ok("memory-write", "Atlas", "Atlas is written in Go", "--allow-canonical")
    ok("memory-write", "Atlas", "Atlas renders vector tiles", "--kind", "state", "--allow-canonical")
    ok(
        "memory-write",
        "Atlas",
        "Atlas is in beta with three customers",
        "--kind",
        "state",
        "--action",
        "replace",
        "--allow-canonical",
    )
    ok(
        "memory-write",
        "Maria",
        "Maria lives in Valencia",
        "--action",
        "forget",
        "--reason",
        "she moved",
        "--allow-canonical",
    )
    ok(
        "memory-write",
        "Atlas",
        "Atlas is in beta with three customers",
        "--kind",
        "state",
        "--action",
        "forget",
        "--reason",
        "launched",
        "--allow-canonical",
    )
    hits = ok("search", "black coffee", "-m", "bm25")["hits"]  # no waiting: the write indexed it
    assert hits and hits[0]["path"] == "people/maria-lopez.md"
    # The write log: an evidence note and a page per write, applied by the daemon for the CLI.
    logged = [
        json.loads(line) for log in (root / "logs/writes").glob("*.jsonl") for line in log.read_text().splitlines()
    ]
    assert len(logged) == 18 and {entry["surface"] for entry in logged} == {"cli"}

    above, below = (root / "people/maria-lopez.md").read_text().split(TIMELINE_MARKER)
    assert "Met at PyCon." in above and "- Maria switched to black coffee" in above
    assert "oat milk" not in above and "Valencia" not in above
    assert all(
        s in below
        for s in (
            "Maria lives in Valencia",
            "Maria drinks oat milk lattes",
            "Replaced: Maria switched to black coffee",
            "Retired: Maria lives in Valencia",
        )
    )
    above, below = (root / "projects/atlas/state.md").read_text().split(TIMELINE_MARKER)
    assert "The mapping service." in above and "- Atlas is written in Go" in above
    assert "three customers" not in above and "vector tiles" not in above
    assert "Replaced: Atlas is in beta with three customers" in below and "— launched" in below
    assert "Atlas stores geometry in PostGIS" in (root / decision["target_path"]).read_text()
    assert daemon.stop() == 0

    before = claims_table(root)
    assert len(before) == 7 and sum(row[4] == "active" for row in before) == 3
    shutil.rmtree(root / ".dory")
    assert daemon.cli("reindex", "--full")[0] == 0
    assert claims_table(root) == before  # replayed from the evidence artifacts alone


def test_exact_write_conflict_through_the_daemon(tmp_path: Path, daemon_factory: Callable[..., DaemonProcess]) -> None:
    root = tmp_path / "corpus"
    (root / "notes").mkdir(parents=True)
    (root / "notes/a.md").write_text("# A\n\nfirst\n")
    daemon = daemon_factory(root, daemon_env()).start()
    code, got, _ = daemon.cli("get", "notes/a.md")
    (root / "notes/a.md").write_text("# A\n\nchanged by a person\n")
    code, body, _ = daemon.cli(
        "write", "notes/a.md", "--kind", "replace", "--expected-hash", got["hash"], "--content", "agent text"
    )
    assert code == 7 and body["error"]["code"] == "hash_conflict"
    assert (root / "notes/a.md").read_text() == "# A\n\nchanged by a person\n"
    code, body, _ = daemon.cli("write", "notes/b.md", "--content", "# B\n\nzebra crossing")
    assert code == 0 and body["indexed"]
    assert daemon.cli("search", "zebra", "-m", "bm25")[1]["hits"][0]["path"] == "notes/b.md"
    assert daemon.stop() == 0
