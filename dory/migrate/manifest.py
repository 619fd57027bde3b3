"""A migration run's manifest: an append-only JSON-lines file in the corpus, next to the run's report.

It lives in the corpus (`references/reports/migrations/<run>.manifest.jsonl`), not in `.dory/`, so
undo and idempotency survive deleting the index. Lines, in the order a run writes them:

- `run`: the run's id, source, format, destination folder and start time (first line);
- `intent`: an item about to be written, with every output's final path and hash and the folders
  its files will create; fsynced before the first output is created, so after a crash the run
  knows exactly which files (and folders) may be its own;
- `done`: every output of that item is in place;
- `problem`: a source thing that was not imported, and why;
- `finished`: the run's counts, written after its report; a run without it was interrupted and
  resumes when run again;
- `undone`: `dory migrate undo` removed what the run created (the kept files are listed).

A line cut short by a crash, or damaged since, is ignored when the file is read (an item without
its `done` line is simply written again).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dory.corpus.faults import crash_point

MIGRATIONS_FOLDER = "references/reports/migrations"
SUFFIX = ".manifest.jsonl"


@dataclass
class Planned:
    """One output of an item as the intent line records it."""

    path: str
    sha256: str
    role: str


@dataclass
class RunRecord:
    """A manifest read back."""

    run: str
    header: dict[str, Any]
    intents: dict[str, tuple[str, list[Planned]]] = field(default_factory=dict)  # key -> (digest, outputs)
    done: dict[str, str] = field(default_factory=dict)  # key -> digest
    folders: set[str] = field(default_factory=set)  # folders the run's files may have created
    earlier: list[Planned] = field(default_factory=list)  # outputs of intents a later one replaced
    problems: list[dict[str, Any]] = field(default_factory=list)
    finished: dict[str, Any] | None = None
    undone: dict[str, Any] | None = None

    def created(self) -> list[Planned]:
        """Every output this run meant to create (whether or not its item was finished)."""
        return [out for _, outputs in self.intents.values() for out in outputs]

    def replaced(self) -> list[Planned]:
        """Outputs an item's earlier intent named at other paths: a file the run wrote before its
        source changed and the resumed run wrote the new version beside it, or a name the write
        found taken (someone else's file: it never holds the hash recorded here)."""
        latest = {out.path for out in self.created()}
        unique = {(out.path, out.sha256): out for out in self.earlier if out.path not in latest}
        return list(unique.values())

    @property
    def state(self) -> str:
        return "undone" if self.undone else "finished" if self.finished else "interrupted"


def folder(corpus: Path) -> Path:
    return corpus / MIGRATIONS_FOLDER


def manifest_path(corpus: Path, run: str) -> Path:
    return folder(corpus) / f"{run}{SUFFIX}"


def read(path: Path) -> RunRecord | None:
    """The run in `path`, or None when its first line is not a run header."""
    lines = _lines(path)
    first = next(lines, None)
    if first is None or first.get("t") != "run" or not isinstance(first.get("run"), str):
        return None
    record = RunRecord(run=first["run"], header=first)
    for line in lines:
        try:
            _apply(record, line)
        except (KeyError, TypeError, AttributeError):
            continue  # a line damaged by hand or by a sync conflict: as if it were cut short
    return record


def _apply(record: RunRecord, line: dict[str, Any]) -> None:
    kind = line.get("t")
    if kind == "intent":
        outputs = [Planned(o["path"], o["sha256"], o.get("role", "note")) for o in line.get("outputs", [])]
        if line["key"] in record.intents:
            record.earlier += record.intents[line["key"]][1]
        record.intents[line["key"]] = (line["digest"], outputs)
        record.folders.update(str(folder) for folder in line.get("folders", []))
    elif kind == "done":
        record.done[line["key"]] = line["digest"]
    elif kind == "problem":
        record.problems.append(line)
    elif kind == "finished":
        record.finished = line
    elif kind == "undone":
        record.undone = line


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    with path.open("rb") as handle:
        for raw in handle:
            try:
                value = json.loads(raw)
            except ValueError:
                continue  # a line cut short by a crash
            if isinstance(value, dict):
                yield value


def runs(corpus: Path) -> list[RunRecord]:
    """Every run recorded in the corpus, oldest first."""
    base = folder(corpus)
    if not base.is_dir():
        return []
    found = [read(path) for path in sorted(base.glob(f"*{SUFFIX}"))]
    return sorted((r for r in found if r is not None), key=lambda r: (str(r.header.get("started")), r.run))


def finish(corpus: Path, run: str, created: int, problems: int) -> None:
    """Mark the run finished: its files, its report and their indexing are all done."""
    writer = ManifestWriter(manifest_path(corpus, run))
    try:
        writer.write({"t": "finished", "created": created, "problems": problems}, sync=True)
    finally:
        writer.close()


class ManifestWriter:
    """Appends lines to one run's manifest. Intent lines are fsynced (a crash after them must find
    them); the others are flushed, and a lost `done` is found again by checking the files."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._handle = path.open("ab")

    def close(self) -> None:
        self._handle.close()

    def write(self, line: dict[str, Any], sync: bool = False) -> None:
        self._handle.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
        self._handle.flush()
        if sync:
            os.fsync(self._handle.fileno())

    def intent(self, key: str, digest: str, outputs: list[Planned], folders: list[str] | None = None) -> None:
        planned = [{"path": o.path, "sha256": o.sha256, "role": o.role} for o in outputs]
        line: dict[str, Any] = {"t": "intent", "key": key, "digest": digest, "outputs": planned}
        if folders:
            line["folders"] = folders
        self.write(line, sync=True)
        crash_point("migrate.intent")

    def done(self, key: str, digest: str) -> None:
        self.write({"t": "done", "key": key, "digest": digest})
        crash_point("migrate.done")
