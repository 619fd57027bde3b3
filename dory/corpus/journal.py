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

import json
import os
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from dory.corpus.atomic import create_exclusive, file_hash, make_dirs, sha256_of, swap_if_unchanged, write_atomic
from dory.errors import WriteConflict

# Test hook: "<op>:<n>" kills this process right after the n-th file (0-based) of an operation
# named <op> was written, so a test can crash between the files of a forget.
FAULT_ENV = "DORY_FAULT"


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
        self, corpus: Path, folder: Path, receipts: ReceiptBook | None = None, request_id: str | None = None
    ) -> None:
        self.corpus = corpus
        self.folder = folder
        self.receipts = receipts
        self.request_id = request_id

    def apply(self, op: str, changes: list[FileChange], response: dict[str, Any] | None = None) -> None:
        """Make every change or none; a conflict on any file undoes the ones already made. With a
        request id, `response` is staged with the changes and recorded as the request's receipt
        before the operation is forgotten (by this call, or by `recover` after a crash)."""
        staging = self._stage(op, changes, response)
        record = json.loads((staging / "journal.json").read_text())
        done = 0
        try:
            for index, change in enumerate(changes):
                self._write(change)
                done = index + 1
                _fault(op, index)
        except WriteConflict:
            record["state"] = "rolling_back"
            write_atomic(staging / "journal.json", json.dumps(record).encode())
            self._roll_back(staging, record["files"][:done])
            shutil.rmtree(staging)
            raise
        self._record_receipt(record)
        shutil.rmtree(staging)

    def _record_receipt(self, record: dict[str, Any]) -> None:
        if self.receipts is not None and record.get("request_id"):
            self.receipts.record(record["request_id"], record["op"], record.get("response") or {})

    def _stage(self, op: str, changes: list[FileChange], response: dict[str, Any] | None = None) -> Path:
        staging = self.folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{os.urandom(3).hex()}"
        make_dirs(staging)
        files = []
        for index, change in enumerate(changes):
            write_atomic(staging / f"{index}.after", change.after)
            if change.before_hash is not None:
                before = (self.corpus / change.path).read_bytes() if (self.corpus / change.path).exists() else b""
                if sha256_of(before) != change.before_hash:
                    shutil.rmtree(staging)
                    raise WriteConflict(
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
        write_atomic(staging / "journal.json", json.dumps(record).encode())
        return staging

    def _write(self, change: FileChange) -> None:
        target = self.corpus / change.path
        if change.before_hash is None:
            create_exclusive(target, change.after)
        else:
            swap_if_unchanged(target, change.after, change.before_hash)

    def _roll_back(self, staging: Path, files: list[dict[str, Any]]) -> list[str]:
        problems = []
        for index, entry in reversed(list(enumerate(files))):
            target = self.corpus / entry["path"]
            if file_hash(target) != entry["after_hash"]:
                if file_hash(target) != entry["before_hash"]:
                    problems.append(f"{entry['path']} was edited meanwhile; left as it is")
                continue
            if entry["before_hash"] is None:
                target.unlink()
            else:
                swap_if_unchanged(target, (staging / f"{index}.before").read_bytes(), entry["after_hash"])
        return problems

    def recover(self) -> tuple[list[str], list[str]]:
        """Finish or undo operations a crash interrupted. Returns what was done (for the log) and the
        corpus paths the operations named (to be re-indexed)."""
        if not self.folder.is_dir():
            return [], []
        report: list[str] = []
        touched: list[str] = []
        for staging in sorted(p for p in self.folder.iterdir() if p.is_dir() and p.name != "failed"):
            journal = staging / "journal.json"
            if not journal.exists():
                shutil.rmtree(staging)
                report.append(f"{staging.name}: never committed; discarded")
                continue
            record = json.loads(journal.read_text())
            touched += [entry["path"] for entry in record["files"]]
            if record.get("state") == "rolling_back":
                problems = self._roll_back(staging, record["files"])
                verb = "rolled back"
            else:
                problems = self._roll_forward(staging, record["files"])
                verb = "completed"
                if not problems:
                    self._record_receipt(record)
            report.append(f"{record['op']} {staging.name}: {verb}" + (f" ({'; '.join(problems)})" if problems else ""))
            self._retire(staging, failed=bool(problems))
        return report, touched

    def _roll_forward(self, staging: Path, files: list[dict[str, Any]]) -> list[str]:
        problems = []
        for index, entry in enumerate(files):
            target = self.corpus / entry["path"]
            current = file_hash(target)
            if current == entry["after_hash"]:
                continue
            if current != entry["before_hash"]:
                problems.append(f"{entry['path']} was edited meanwhile; left as it is")
                continue
            self._write(FileChange(entry["path"], entry["before_hash"], (staging / f"{index}.after").read_bytes()))
        return problems

    def _retire(self, staging: Path, failed: bool) -> None:
        if failed:
            make_dirs(self.folder / "failed")
            staging.rename(self.folder / "failed" / staging.name)
        else:
            shutil.rmtree(staging)

    def pending(self) -> int:
        if not self.folder.is_dir():
            return 0
        return sum(1 for p in self.folder.iterdir() if p.is_dir() and p.name != "failed")


def _fault(op: str, index: int) -> None:
    if os.environ.get(FAULT_ENV) == f"{op}:{index}":
        os.kill(os.getpid(), signal.SIGKILL)
