"""The migrate-inbox job: exports dropped into `inbox/import/` are migrated by the daemon.

Every two minutes (and on `dory ops run migrate-inbox`) each entry of inbox/import/, a file or a
folder as `dory migrate` takes them, is migrated once it is complete, then moved out of the way so
it is never taken again:

- to `inbox/import/done/<run>/` when a run imported it (the run's report lists what became of
  every item, the ones that could not be read included), or when every item was already imported;
- to `inbox/import/failed/<when>/`, with `<name>.reason.txt` beside it, when nothing could be
  imported (a broken zip, an unknown format, a symbolic link). A bad file costs one warning, never
  a job that fails at every run.

Complete means unchanged since the previous look: the same size and modification time (for a
folder, every file's path, size and time), so a file still being copied waits for the next run.
Hidden names, temporary names and those of unfinished downloads (`.part`, `.crdownload`, …) are
never taken, nor `done/` and `failed/` themselves. A run that cannot start now (another migration
holds the lock, the disk is full, the daemon is stopping) leaves the entry for the next run; one
killed midway resumes at the next run, and an entry whose runs were cut short MAX_ATTEMPTS times
goes to failed/.

Safety: the engine refuses a source inside the corpus; a direct entry of inbox/import/ is the one
exception, granted only through the job API's `migrate` (never a field of a caller's request).
inbox/import/ is never indexed, watched or served (corpus.paths.UNSERVED_DIRS), so a dropped note
is not memory before it is migrated, and no migration writes there. The looks, attempts and the
last imports (shown by `dory status`) are kept in `<state>/inbox-import.json`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dory.config import Settings
from dory.corpus.atomic import write_atomic
from dory.corpus.paths import IMPORT_DIR, is_temp_name
from dory.errors import BackendUnavailable, DoryError, IndexLocked, StorageError
from dory.index.store import now_iso
from dory.jobs.job import JobContext, JobResult
from dory.models import InboxImport, MigrateRequest, MigrateResponse

DONE, FAILED = "done", "failed"
# Names a download or copy in progress goes by (browsers, curl, rsync's are hidden already).
UNFINISHED_SUFFIXES = (".part", ".partial", ".crdownload", ".download", ".opdownload", ".!ut", ".aria2")
MAX_ATTEMPTS = 3
KEEP_RECENT = 20
REASON_PROBLEMS = 200  # problems listed in a failed entry's reason file


@dataclass
class Record:
    """What the job remembers between runs (`<state>/inbox-import.json`; losing it costs one look)."""

    path: Path
    seen: dict[str, str] = field(default_factory=dict)  # entry -> its signature at the last look
    attempts: dict[str, int] = field(default_factory=dict)  # entry -> runs started on it
    recent: list[dict[str, Any]] = field(default_factory=list)  # InboxImport dicts, newest first

    @classmethod
    def load(cls, path: Path) -> Record:
        try:
            data = json.loads(path.read_bytes())
            return cls(path, dict(data["seen"]), dict(data["attempts"]), list(data["recent"]))
        except (OSError, ValueError, TypeError, KeyError):  # none yet, or damaged: start afresh
            return cls(path)

    def save(self) -> None:
        body = {"seen": self.seen, "attempts": self.attempts, "recent": self.recent[:KEEP_RECENT]}
        write_atomic(self.path, json.dumps(body, ensure_ascii=False, indent=1).encode("utf-8"))


def record_path(settings: Settings) -> Path:
    return settings.state_dir / "inbox-import.json"


def recent_imports(settings: Settings) -> list[InboxImport]:
    """The last entries the job took, newest first (for `dory status`)."""
    found = []
    for row in Record.load(record_path(settings)).recent:
        try:
            found.append(InboxImport.model_validate(row))
        except ValueError:
            continue  # a record from another version: not worth failing status for
    return found


def run(ctx: JobContext) -> JobResult:
    if ctx.settings.read_only:  # its schedule is off then; this is the last line (it moves entries too)
        return JobResult(warnings=["the corpus is read-only: nothing is taken from inbox/import/"])
    base = ctx.settings.corpus / IMPORT_DIR
    record = Record.load(record_path(ctx.settings))
    names = entries(base)
    looks = {name: signature(base / name) for name in names}
    ready = [name for name in names if looks[name] is not None and record.seen.get(name) == looks[name]]
    waiting = [name for name in names if name not in ready]
    if ctx.dry_run:
        return JobResult(outputs={"dry_run": True, "ready": ready, "waiting": waiting})
    seen = {name: look for name, look in looks.items() if look is not None}
    attempts = {name: n for name, n in record.attempts.items() if name in looks}
    if (seen, attempts) != (record.seen, record.attempts):  # an empty inbox is not a write every run
        record.seen, record.attempts = seen, attempts
        record.save()
    sweep = Sweep(ctx, base, record)
    for name in ready:
        sweep.take(name)
    outputs: dict[str, Any] = {"entries": len(names), "waiting": len(waiting), **sweep.counts}
    outputs["imports"] = [done.model_dump() for done in sweep.imports]
    return JobResult(outputs=outputs, warnings=sweep.warnings)


def entries(base: Path) -> list[str]:
    """The names in inbox/import/ the job may take, sorted."""
    try:
        names = os.listdir(base)
    except OSError:  # no inbox/import/ (yet): nothing dropped
        return []
    return sorted(name for name in names if is_candidate(name))


def is_candidate(name: str) -> bool:
    if name in (DONE, FAILED) or name.startswith(".") or is_temp_name(name):
        return False
    return not name.lower().endswith(UNFINISHED_SUFFIXES)


def signature(path: Path) -> str | None:
    """What must not change between two looks for the entry to count as complete (None: unreadable
    or gone, so not complete). A folder's covers every file and folder inside it."""
    try:
        st = path.lstat()
        if not stat.S_ISDIR(st.st_mode):
            return f"{stat.S_IFMT(st.st_mode)}:{st.st_size}:{st.st_mtime_ns}"
        digest = hashlib.sha256()
        for folder, dirs, files in os.walk(path, onerror=_raise):
            dirs.sort()
            for name in sorted(files + dirs):
                inner = os.lstat(os.path.join(folder, name))
                rel = os.path.relpath(os.path.join(folder, name), path)
                digest.update(f"{rel}\0{inner.st_size}\0{inner.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
        return f"dir:{digest.hexdigest()}"
    except OSError:
        return None


def _raise(exc: OSError) -> None:
    raise exc


class Sweep:
    """One run's work on the complete entries: migrate each, then move it to done/ or failed/."""

    def __init__(self, ctx: JobContext, base: Path, record: Record) -> None:
        self.ctx = ctx
        self.base = base
        self.record = record
        self.when = re.sub(r"[^0-9A-Za-z-]", "", ctx.period.replace("T", "-"))  # this run, as a folder name
        self.counts = {"migrated": 0, "already_imported": 0, "failed": 0, "deferred": 0}
        self.imports: list[InboxImport] = []
        self.warnings: list[str] = []

    def take(self, name: str) -> None:
        path = self.base / name
        if not os.path.lexists(path):
            return  # taken away since the look
        attempts = self.record.attempts.get(name, 0) + 1
        if attempts > MAX_ATTEMPTS:
            self._fail(name, f"{MAX_ATTEMPTS} runs on it were cut short (the daemon stopped or was killed)")
            return
        self.record.attempts[name] = attempts
        self.record.save()
        refusal = _refusal(path)
        if refusal is not None:
            self._fail(name, refusal)
            return
        try:
            response = self.ctx.api.migrate(MigrateRequest(source=str(path)))
        except (IndexLocked, StorageError, BackendUnavailable) as exc:  # not the entry's fault
            self.record.attempts.pop(name, None)
            self.record.save()
            self.counts["deferred"] += 1
            self.warnings.append(f"{name}: left for the next run: {exc.message}")
            return
        except DoryError as exc:
            self._fail(name, f"{exc.code}: {exc.message}")
            return
        except Exception as exc:  # an engine bug must not make the entry fail at every run
            self._fail(name, f"internal_error: {type(exc).__name__}: {exc}")
            return
        self._finish(name, response)

    def _finish(self, name: str, response: MigrateResponse) -> None:
        if response.run is None and not response.items:
            self._fail(name, _nothing_imported(response), response)
            return
        outcome = "migrated" if response.run is not None else "already_imported"
        moved = self._move(name, f"{DONE}/{response.run or self.when}")
        self._keep(
            InboxImport(
                entry=name,
                outcome=outcome,
                at=now_iso(),
                run=response.run,
                report=response.report,
                created=response.created,
                problems=len(response.problems),
                moved_to=moved,
            )
        )

    def _fail(self, name: str, reason: str, response: MigrateResponse | None = None) -> None:
        moved = self._move(name, f"{FAILED}/{self.when}")
        if moved is not None:
            problems = response.problems[:REASON_PROBLEMS] if response else []
            lines = [reason, *(f"{p.source}: {p.code}: {p.message}" for p in problems)]
            note = self.ctx.settings.corpus / f"{moved}.reason.txt"
            write_atomic(note, ("\n".join(lines) + "\n").encode("utf-8", "replace"))
        self.warnings.append(f"{name}: not imported: {reason}" + (f" (moved to {moved})" if moved else ""))
        problems_seen = len(response.problems) if response else 0
        self._keep(
            InboxImport(
                entry=name, outcome="failed", at=now_iso(), problems=problems_seen, reason=reason, moved_to=moved
            )
        )

    def _move(self, name: str, folder: str) -> str | None:
        """Move the entry into `folder` (under inbox/import/); its corpus path, or None when it
        could not be moved (it is then looked at again next run, and found already imported)."""
        target_dir = self.base / folder
        target, n = target_dir / name, 1
        while os.path.lexists(target):  # never over anything
            n += 1
            target = target_dir / f"{name} ({n})"
        try:
            target_dir.mkdir(parents=True, exist_ok=True)
            os.rename(self.base / name, target)
        except OSError as exc:
            self.warnings.append(f"{name}: could not be moved to {IMPORT_DIR}/{folder}/: {exc.strerror or exc}")
            return None
        return f"{IMPORT_DIR}/{folder}/{target.name}"

    def _keep(self, done: InboxImport) -> None:
        name = done.entry
        self.counts[done.outcome] += 1
        self.imports.append(done)
        if done.moved_to is not None:  # gone from inbox/import/: forget its look and attempts
            self.record.seen.pop(name, None)
            self.record.attempts.pop(name, None)
        self.record.recent.insert(0, done.model_dump())
        self.record.save()


def _refusal(path: Path) -> str | None:
    """Why an entry is not something to migrate, or None."""
    try:
        st = path.lstat()
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    if stat.S_ISLNK(st.st_mode):
        return "symlink_skipped: a symbolic link; drop the file or folder itself"
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        return "not_a_file: not a regular file or folder (fifo, socket or device)"
    return None


def _nothing_imported(response: MigrateResponse) -> str:
    problems = response.problems
    if not problems:
        return "nothing_to_import: it holds no files"
    shown = "; ".join(f"{p.code}: {p.message}" for p in problems[:3])
    return shown + (f" (and {len(problems) - 3} more)" if len(problems) > 3 else "")
