"""Provenance: who wrote what, when, through which surface, from which source, and which lines.

Every stored write (exact create, append, replace and forget; semantic writes; quarantines) adds one
JSON line per file it changes to `logs/writes/YYYY-MM-DD.jsonl` (the UTC day), as one more change in
the same journaled operation: a write and its record land together or not at all.

- Outside the prose: content cannot forge or rewrite its own record, and no write can target the
  log (it is not a note, and its folder is protected like evidence).
- In the corpus, not in `.dory/`: it is part of the record, like the notes, and survives a rebuild
  of the derived state.
- JSON lines, not markdown: never indexed, never served to agents.

Fields: `at`, `request_id` (the writer call's idempotency key), `surface` (cli, http, mcp, daemon,
api), `agent`, `source`, `op` (create, append, replace, forget, memory-write), `action` (what
happened: created, ..., quarantined), `path`, `previous_hash`, `hash`, and `lines`: the line ranges
of the file as written that this write added or changed. A reader who finds a sentence at line 42
finds the write that put it there (later writes shift lines, and each has its own entry).
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dory.corpus.atomic import sha256_of
from dory.corpus.journal import FileChange
from dory.corpus.paths import WRITE_LOG_DIR


@dataclass(frozen=True)
class Origin:
    """Who is asking: the writer call's request id and the surface it came through (set by the
    service from the call, never taken from the content)."""

    request_id: str | None = None
    surface: str = "api"


@dataclass(frozen=True)
class Written:
    """What one write did, as the log records it (one entry per changed file)."""

    op: str
    action: str
    agent: str | None
    source: str | None


def changed_lines(before: bytes | None, after: bytes) -> list[list[int]]:
    """[first, last] line ranges (from 1) of `after` that are not in `before`."""
    old = before.decode("utf-8", "replace").splitlines() if before else []
    new = after.decode("utf-8", "replace").splitlines()
    opcodes = difflib.SequenceMatcher(None, old, new).get_opcodes()
    return [[first + 1, last] for tag, _, _, first, last in opcodes if tag in ("insert", "replace")]


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _entry(root: Path, origin: Origin, written: Written, change: FileChange, at: str) -> dict[str, Any]:
    before = _read(root / change.path) if change.before_hash else None
    return {
        "at": at,
        "request_id": origin.request_id,
        "surface": origin.surface,
        "agent": written.agent,
        "source": written.source,
        "op": written.op,
        "action": written.action,
        "path": change.path,
        "previous_hash": change.before_hash,
        "hash": sha256_of(change.after),
        "lines": changed_lines(before, change.after),
    }


def record(root: Path, origin: Origin, written: Written, changes: list[FileChange]) -> FileChange:
    """The change to today's log that records `changes` (made before they are applied: it reads the
    files as they are now). Apply it in the same journaled operation."""
    now = dt.datetime.now(dt.UTC)
    at = now.isoformat(timespec="microseconds").replace("+00:00", "Z")
    rel = f"{WRITE_LOG_DIR}/{now:%Y-%m-%d}.jsonl"
    current = _read(root / rel)
    existing = current or b""
    if existing and not existing.endswith(b"\n"):  # a hand edit left the last line open
        existing += b"\n"
    lines = [json.dumps(_entry(root, origin, written, change, at), ensure_ascii=False) for change in changes]
    data = existing + "".join(f"{line}\n" for line in lines).encode("utf-8")
    return FileChange(rel, sha256_of(current) if current is not None else None, data)
