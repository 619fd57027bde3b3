"""`dory connect` and `dory disconnect` over a harness's config files.

Every file is read and checked before any is written, so a broken one stops the command with
nothing changed. A change to an existing file first copies it to `<file>.dory-backup-<UTC time>`
beside it (same permissions), then replaces it only if nobody saved it meanwhile (the compare-and-
swap every Dory write uses: Claude Code rewrites `~/.claude.json` at any moment). A file that would
not change is not touched, so running connect twice writes nothing the second time. Symlinked
configs (dotfile repositories) are edited where they point.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import difflib
import os
import stat
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from dory.corpus.atomic import create_exclusive, sha256_of, swap_if_unchanged
from dory.errors import ConfigError
from dory.surfaces.connect.harnesses import ConfigEdit
from dory.surfaces.connect.manifest import Manifest, Record

Action = Literal["created", "updated", "unchanged", "restored", "removed", "deleted", "absent"]


@dataclass
class FileChange:
    path: Path
    what: str
    action: Action
    before: bytes | None
    after: bytes | None  # None: the file goes
    backup: Path | None = None

    def diff(self) -> str:
        def lines(data: bytes | None) -> list[str]:
            return data.decode("utf-8").splitlines(keepends=True) if data is not None else []

        old = str(self.path) if self.before is not None else "/dev/null"
        new = str(self.path) if self.after is not None else "/dev/null"
        return "".join(difflib.unified_diff(lines(self.before), lines(self.after), old, new))

    def payload(self, dry_run: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"path": str(self.path), "what": self.what, "action": self.action}
        body["backup"] = str(self.backup) if self.backup else None
        if dry_run:
            body["diff"] = self.diff()
        return body


def connect(edits: list[ConfigEdit], manifest: Manifest, dry_run: bool) -> list[FileChange]:
    planned = [(edit, _plan_connect(edit)) for edit in edits]
    if not dry_run:
        for edit, change in planned:
            if change.action != "unchanged":
                _apply_connect(edit, change, manifest)
                manifest.save()  # after each file: a later one failing must not lose this record
    return [change for _, change in planned]


def _plan_connect(edit: ConfigEdit) -> FileChange:
    path = edit.path.resolve()
    before = _read(path)
    after = edit.add(_decode(before, path)).encode("utf-8")
    action: Action = "unchanged" if after == before else "created" if before is None else "updated"
    return FileChange(path, edit.what, action, before, after)


def _apply_connect(edit: ConfigEdit, change: FileChange, manifest: Manifest) -> None:
    assert change.after is not None
    before, previous = change.before, manifest.get(change.path)
    folders = _missing_folders(change.path.parent)
    change.backup = _write(change.path, before, change.after)
    written = sha256_of(change.after)
    if previous is not None and before is not None and sha256_of(before) == previous.written:
        manifest.put(change.path, replace(previous, written=written))  # still the original to go back to
        return
    text = _decode(before, change.path)
    pristine = text is None or edit.remove(text) == text  # nothing of Dory's in it before
    manifest.put(
        change.path,
        Record(
            created=before is None,
            folders=tuple(str(folder) for folder in folders),
            backup=str(change.backup) if pristine and change.backup else None,
            original=sha256_of(before) if pristine and before is not None else None,
            written=written,
        ),
    )


def disconnect(edits: list[ConfigEdit], manifest: Manifest, dry_run: bool) -> list[FileChange]:
    changes = [_plan_disconnect(edit, manifest) for edit in edits]
    if not dry_run:
        for change in changes:
            _apply_disconnect(change, manifest.get(change.path))
            manifest.drop(change.path)
            manifest.save()
    return changes


def _plan_disconnect(edit: ConfigEdit, manifest: Manifest) -> FileChange:
    path = edit.path.resolve()
    before = _read(path)
    if before is None:
        return FileChange(path, edit.what, "absent", None, None)
    record = manifest.get(path)
    if record is not None and sha256_of(before) == record.written:  # nobody changed it since connect
        if record.created:
            return FileChange(path, edit.what, "deleted", before, None)
        original = _original(record)
        if original is not None:
            return FileChange(path, edit.what, "restored", before, original)
    text = _decode(before, path)
    assert text is not None
    after = edit.remove(text).encode("utf-8")
    return FileChange(path, edit.what, "unchanged" if after == before else "removed", before, after)


def _apply_disconnect(change: FileChange, record: Record | None) -> None:
    if change.action == "deleted":  # all of it was Dory's: no backup needed
        change.path.unlink()
        for folder in reversed(record.folders if record else ()):
            with contextlib.suppress(OSError):  # not empty any more: someone else's files are in it
                os.rmdir(folder)
    elif change.action in ("restored", "removed"):
        assert change.after is not None
        change.backup = _write(change.path, change.before, change.after)


def _original(record: Record) -> bytes | None:
    """The file as it was before connect, from its backup, if the backup is still intact."""
    if record.backup is None or record.original is None:
        return None
    try:
        data = Path(record.backup).read_bytes()
    except OSError:
        return None
    return data if sha256_of(data) == record.original else None


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}; Dory changed nothing", path=str(path)) from exc


def _decode(data: bytes | None, path: Path) -> str | None:
    try:
        return data.decode("utf-8") if data is not None else None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text ({exc}); Dory changed nothing", path=str(path)) from exc


def _missing_folders(folder: Path) -> list[Path]:
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    return list(reversed(missing))


def _write(path: Path, before: bytes | None, after: bytes) -> Path | None:
    """Create the file, or back it up and replace it if it still holds `before`; the backup's path."""
    if before is None:
        create_exclusive(path, after)
        return None
    mode = stat.S_IMODE(path.stat().st_mode)
    backup = _backup(path, before, mode)
    swap_if_unchanged(path, after, sha256_of(before), mode)
    return backup


def _backup(path: Path, data: bytes, mode: int) -> Path:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    for attempt in range(1, 1000):
        candidate = path.with_name(f"{path.name}.dory-backup-{stamp}" + (f"-{attempt}" if attempt > 1 else ""))
        try:
            fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        except FileExistsError:
            continue  # two changes within one second
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        return candidate
    raise ConfigError(f"too many backups of {path} this second; try again")
