"""Multi-file writes that complete or roll back as one, even across a crash.

An operation touching several notes (a forget writes the tombstone and marks the page; a semantic
write adds an evidence artifact and re-renders the page) is staged under `<state>/journal/<id>/`:
each file's new bytes, its old bytes, and `journal.json` naming the paths and hashes. Writing
`journal.json` is the commit point. The files are then changed one by one, each atomically.

On the next start `recover()` finishes what a crash interrupted: a committed operation is rolled
forward (files still at their old hash get the new bytes), one that was rolling back after a
conflict is rolled back, and a staging folder without `journal.json` (never committed) is
removed. A file someone edited in between is never overwritten; the operation is then kept
under `journal/failed/` and reported.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from dory.corpus.atomic import (
    create_exclusive,
    file_hash,
    make_dirs,
    repair_leftovers,
    sha256_of,
    swap_if_unchanged,
    write_atomic,
)
from dory.corpus.faults import crash_point
from dory.errors import HashConflict, ReadOnlyCorpus, WriteConflict, storage_error


@dataclass(frozen=True)
class FileChange:
    path: str  # corpus-relative
    before_hash: str | None  # None: the file must not exist yet
    after: bytes


class ReceiptBook(Protocol):
    """Where a write made for a request records that it was applied, and its answer (the service's
    receipts): a retry of the same request is then answered from the receipt, not applied again."""

    def record(self, request_id: str, op: str, response: dict[str, Any]) -> None: ...


class Journal:
    def __init__(
        self,
        corpus: Path,
        folder: Path,
        receipts: ReceiptBook | None = None,
        request_id: str | None = None,
        read_only: bool = False,
    ) -> None:
        self.corpus = corpus
        self.folder = folder
        self.receipts = receipts
        self.request_id = request_id
        # A corpus Dory must not write into: every operation is refused before anything is staged
        # (the service refuses earlier, with a message naming the corpus; this is the last line).
        self.read_only = read_only

    def apply(self, op: str, changes: list[FileChange], response: dict[str, Any] | None = None) -> None:
        """Make every change or none. A conflict, or the file system refusing a write (permissions,
        a full or read-only disk, a name too long), undoes the changes already made and raises its
        own error; the journal is left clean, so the next write is never blocked by this one. With a
        request id, `response` is staged with the changes and recorded as the request's receipt
        before the operation is forgotten (by this call, or by `recover` after a crash)."""
        if self.read_only:
            raise ReadOnlyCorpus(f"cannot {op} {', '.join(c.path for c in changes)}: the corpus is read-only")
        staging = self._stage(op, changes, response)
        record = json.loads((staging / "journal.json").read_text())
        done = 0
        try:
            for index, change in enumerate(changes):
                self._write(change)
                done = index + 1
                crash_point(f"{op}:{index}")
        except (WriteConflict, OSError) as exc:
            self._abandon(staging, record, done)
            if isinstance(exc, OSError):
                raise storage_error(exc, changes[done].path if done < len(changes) else op) from exc
            raise
        crash_point("journal.applied")
        try:
            self._record_receipt(record)
        except Exception:  # the files are final: leave the operation for `recover` to record it
            return
        crash_point("journal.receipt")
        shutil.rmtree(staging, ignore_errors=True)

    def _abandon(self, staging: Path, record: dict[str, Any], done: int) -> None:
        """Undo the files of a failed operation written so far; keep it under failed/ if that fails."""
        record["state"] = "rolling_back"
        problems = ["the rollback could not be recorded"]
        with contextlib.suppress(OSError):
            write_atomic(staging / "journal.json", json.dumps(record).encode())
            problems = []
        files = record["files"]
        if done < len(files) and file_hash(self.corpus / files[done]["path"]) == files[done]["after_hash"]:
            done += 1  # the failing file is in place already (a step after its rename failed): undo it too
        problems += self._roll_back(staging, files[:done])
        self._retire(staging, failed=bool(problems))

    def _record_receipt(self, record: dict[str, Any]) -> None:
        if self.receipts is not None and record.get("request_id"):
            self.receipts.record(record["request_id"], record["op"], record.get("response") or {})

    def _stage(self, op: str, changes: list[FileChange], response: dict[str, Any] | None = None) -> Path:
        staging = self.folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{os.urandom(3).hex()}"
        try:
            make_dirs(staging)
            record = self._stage_files(staging, op, changes, response)
            crash_point("journal.staged")
            write_atomic(staging / "journal.json", json.dumps(record).encode())  # the commit point
            crash_point("journal.committed")
        except BaseException as exc:
            shutil.rmtree(staging, ignore_errors=True)
            if isinstance(exc, OSError):
                raise storage_error(exc, "the write journal") from exc
            raise
        return staging

    def _stage_files(
        self, staging: Path, op: str, changes: list[FileChange], response: dict[str, Any] | None
    ) -> dict[str, Any]:
        files = []
        for index, change in enumerate(changes):
            write_atomic(staging / f"{index}.after", change.after)
            if change.before_hash is not None:
                before = (self.corpus / change.path).read_bytes() if (self.corpus / change.path).exists() else b""
                if sha256_of(before) != change.before_hash:
                    raise HashConflict(
                        f"{change.path} changed before it could be written",
                        path=change.path,
                        current_hash=file_hash(self.corpus / change.path),
                    )
                write_atomic(staging / f"{index}.before", before)
            files.append(
                {"path": change.path, "before_hash": change.before_hash, "after_hash": sha256_of(change.after)}
            )
        record: dict[str, Any] = {"op": op, "state": "applying", "files": files}
        if self.request_id is not None:
            record |= {"request_id": self.request_id, "response": response or {}}
        return record

    def _write(self, change: FileChange) -> None:
        target = self.corpus / change.path
        if change.before_hash is None:
            create_exclusive(target, change.after)
        else:
            swap_if_unchanged(target, change.after, change.before_hash)

    def _roll_back(self, staging: Path, files: list[dict[str, Any]]) -> list[str]:
        """Put each file back to its old bytes (a created file is removed); a file someone edited
        meanwhile is left as it is. Returns the problems (never raises for a file system error)."""
        problems = []
        for index, entry in reversed(list(enumerate(files))):
            target = self.corpus / entry["path"]
            try:
                if file_hash(target) != entry["after_hash"]:
                    if file_hash(target) != entry["before_hash"]:
                        problems.append(f"{entry['path']} was edited meanwhile; left as it is")
                    continue
                if entry["before_hash"] is None:
                    target.unlink()
                else:
                    swap_if_unchanged(target, (staging / f"{index}.before").read_bytes(), entry["after_hash"])
            except (OSError, WriteConflict) as exc:
                problems.append(f"{entry['path']}: could not be put back ({exc})")
        return problems

    def recover(self) -> tuple[list[str], list[str]]:
        """Finish or undo operations a crash interrupted, never raising: each ends with every file at
        its new content ("completed") or its old one ("rolled back"), or is kept under failed/ with
        the reason. Returns what was done (for the log) and the corpus paths the operations named
        (to be re-indexed)."""
        if not self.folder.is_dir():
            return [], []
        if self.read_only:
            waiting = self.pending()
            return ([f"{waiting} interrupted writes wait: the corpus is read-only now"] if waiting else []), []
        report: list[str] = []
        touched: list[str] = []
        for staging in sorted(p for p in self.folder.iterdir() if p.is_dir() and p.name != "failed"):
            line, paths = self._recover_one(staging)
            report.append(line)
            touched += paths
        return report, touched

    def _recover_one(self, staging: Path) -> tuple[str, list[str]]:
        journal = staging / "journal.json"
        if not journal.exists():
            shutil.rmtree(staging, ignore_errors=True)
            return f"{staging.name}: never committed; discarded", []
        try:
            record = json.loads(journal.read_text())
            files: list[dict[str, Any]] = record["files"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            self._retire(staging, failed=True)
            return f"{staging.name}: unreadable journal ({exc}); kept under failed/", []
        paths = [entry["path"] for entry in files]
        for folder in sorted({(self.corpus / path).parent for path in paths}):
            repair_leftovers(folder)  # an old file set aside mid-swap goes back first
        op = record.get("op", "write")
        if record.get("state") != "rolling_back":
            problems = self._roll_forward(staging, files)
            if not problems:
                with contextlib.suppress(Exception):  # without a receipt a retry conflicts, never doubles
                    self._record_receipt(record)
                self._retire(staging, failed=False)
                return f"{op} {staging.name}: completed (new content)", paths
        problems = self._roll_back(staging, files)
        self._retire(staging, failed=bool(problems))
        if problems:
            return f"{op} {staging.name}: kept under failed/ ({'; '.join(problems)})", paths
        return f"{op} {staging.name}: rolled back (old content)", paths

    def _roll_forward(self, staging: Path, files: list[dict[str, Any]]) -> list[str]:
        """Bring every file to its new content; any file that cannot be (edited meanwhile, or the
        file system refuses) is a problem, and the caller then rolls the whole operation back."""
        problems = []
        for index, entry in enumerate(files):
            target = self.corpus / entry["path"]
            try:
                current = file_hash(target)
                if current == entry["after_hash"]:
                    continue
                if current != entry["before_hash"]:
                    problems.append(f"{entry['path']} was edited meanwhile; left as it is")
                    continue
                after = (staging / f"{index}.after").read_bytes()
                self._write(FileChange(entry["path"], entry["before_hash"], after))
            except (OSError, WriteConflict) as exc:
                problems.append(f"{entry['path']}: could not be written ({exc})")
        return problems

    def _retire(self, staging: Path, failed: bool) -> None:
        if not failed:
            shutil.rmtree(staging, ignore_errors=True)
            return
        with contextlib.suppress(OSError):
            make_dirs(self.folder / "failed")
            staging.rename(self.folder / "failed" / staging.name)

    def pending(self) -> int:
        if not self.folder.is_dir():
            return 0
        return sum(1 for p in self.folder.iterdir() if p.is_dir() and p.name != "failed")
