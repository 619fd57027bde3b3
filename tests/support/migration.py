"""Shared by the migration tests (tests/migrate): the migrate callable's type and a tree digest."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from dory.models import MigrateResponse

Migrate = Callable[..., MigrateResponse]


def tree_hashes(root: Path) -> dict[str, str]:
    """{relative path: sha256} of every file under root except derived state (.dory/)."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".dory" not in p.relative_to(root).parts
    }
