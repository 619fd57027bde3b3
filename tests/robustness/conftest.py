"""Helpers shared by the robustness tests (exposed as fixtures: test modules cannot import each other)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dory.index.store import IndexStore


def digest_tree(root: Path) -> dict[str, str]:
    """sha256 of every file under root, the .dory state folder left out."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".dory" not in p.relative_to(root).parts
    }


def index_snapshot(store: IndexStore) -> dict[str, Any]:
    """What the index says about each file: its hash, frontmatter, and its chunks (lines, headings, text)."""
    files = {
        row["path"]: {
            "sha256": row["sha256"],
            "title": row["title"],
            "frontmatter": json.loads(row["frontmatter"]),
            "frontmatter_error": row["frontmatter_error"],
            "chunks": [],
        }
        for row in store.conn.execute("SELECT path, sha256, title, frontmatter, frontmatter_error FROM files")
    }
    for row in store.conn.execute(
        "SELECT f.path, c.ordinal, c.start_line, c.end_line, c.heading_path, c.text FROM chunks c "
        "JOIN files f ON f.id = c.file_id ORDER BY f.path, c.ordinal"
    ):
        files[row["path"]]["chunks"].append(
            (row["ordinal"], row["start_line"], row["end_line"], json.loads(row["heading_path"]), row["text"])
        )
    skipped = {row["path"]: row["reason"] for row in store.conn.execute("SELECT path, reason FROM skipped")}
    return {"files": files, "skipped": skipped}


@pytest.fixture(scope="session")
def tree_digest() -> Callable[[Path], dict[str, str]]:
    return digest_tree


@pytest.fixture(scope="session")
def snapshot() -> Callable[[IndexStore], dict[str, Any]]:
    return index_snapshot
