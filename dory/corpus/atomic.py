"""Durable file writes: a reader (or a crash) sees the old file or the new one, never half of one.

Each write goes to a hidden temporary file in the target's folder, is fsynced, then renamed or
hard-linked into place, and the folder is fsynced so the new name survives a power cut. Temporary
names start with a dot and end in `.tmp`, so the watcher and the indexer ignore them.

`swap_if_unchanged` is the compare-and-swap behind `replace`: a person's editor may save the same
file at any moment, and whatever it saved must never be overwritten unseen.

A crash can leave temporary files behind: `repair_leftovers` puts back an old file that was set
aside with nothing at its path (a crash mid-swap) and removes every other temporary file of a
process that is gone. The journal runs it before it recovers an operation, and the index owner
sweeps the whole corpus at start-up and on every reindex.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import secrets
from pathlib import Path

from dory.corpus.faults import crash_point
from dory.errors import AlreadyExists, HashConflict

# `.<name>.dory-<new|old>-<pid>-<8 hex>.tmp`: a write's temporary file, beside its target.
TEMP_NAME = re.compile(r"^\.(?P<name>.+)\.dory-(?P<tag>new|old)-(?P<pid>\d+)-[0-9a-f]{8}\.tmp$")
# What the temporary name adds to a file name (the longest pid has 7 digits on Linux).
TEMP_NAME_OVERHEAD = len(".") + len(".dory-old-") + 7 + len("-") + 8 + len(".tmp")


def sha256_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def file_hash(path: Path) -> str | None:
    try:
        return sha256_of(path.read_bytes())
    except FileNotFoundError:
        return None


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_dirs(folder: Path) -> None:
    """Create missing folders, making each new name durable in its parent."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for new in reversed(missing):
        new.mkdir(exist_ok=True)
        fsync_dir(new.parent)


def _temp_beside(path: Path, tag: str) -> Path:
    return path.parent / f".{path.name}.dory-{tag}-{os.getpid()}-{secrets.token_hex(4)}.tmp"


def _write_temp(path: Path, data: bytes, mode: int = 0o666) -> Path:
    tmp = _temp_beside(path, "new")
    with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode), "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    return tmp


def write_atomic(path: Path, data: bytes, mode: int = 0o666) -> None:
    """Create or overwrite `path` in one step (a new file gets `mode`, less the umask)."""
    make_dirs(path.parent)
    tmp = _write_temp(path, data, mode)
    try:
        crash_point("atomic.temp-written")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    crash_point("atomic.replaced")
    fsync_dir(path.parent)


def create_exclusive(path: Path, data: bytes) -> None:
    """Create `path` in one step, failing with AlreadyExists if anything is there (even a file
    that appeared a microsecond ago): the complete file is hard-linked into place."""
    make_dirs(path.parent)
    tmp = _write_temp(path, data)
    try:
        crash_point("create.temp-written")
        _link_into_place(tmp, path, data)
        crash_point("create.linked")
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)


def _link_into_place(tmp: Path, path: Path, data: bytes) -> None:
    try:
        os.link(tmp, path)
    except FileExistsError as exc:
        raise AlreadyExists(f"{path.name} already exists", current_hash=file_hash(path)) from exc
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
            raise
        # No hard links here (some network and FUSE file systems): O_EXCL still refuses to
        # clobber, though a crash mid-write could leave a short file.
        try:
            with open(path, "xb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        except FileExistsError as exists:
            raise AlreadyExists(f"{path.name} already exists", current_hash=file_hash(path)) from exists


def swap_if_unchanged(path: Path, data: bytes, expected_hash: str, mode: int = 0o666) -> None:
    """Replace `path` with `data` only if it still hashes to `expected_hash` (the new file gets
    `mode`, less the umask: a private config file stays private).

    The current file is first renamed aside, so an editor saving from here on creates a new file
    instead of being overwritten; the check runs on the file set aside; the new content is then
    linked in only if nothing appeared at the path meanwhile, and the set-aside file is checked
    once more for an editor that wrote into it in place. Any disagreement is a HashConflict
    carrying the hash now on disk, and the person's version is what stays.
    """
    new = _write_temp(path, data, mode)
    aside = _temp_beside(path, "old")
    try:
        crash_point("swap.temp-written")
        try:
            os.rename(path, aside)
        except FileNotFoundError as exc:
            raise HashConflict(f"{path.name} was deleted meanwhile", current_hash=None) from exc
        crash_point("swap.aside")
        _check_aside(path, aside, expected_hash)
        try:
            _link_into_place(new, path, data)
            crash_point("swap.linked")
        except AlreadyExists as exc:
            raise HashConflict(
                f"{path.name} was saved by someone else meanwhile", current_hash=file_hash(path)
            ) from exc
        if file_hash(aside) != expected_hash:  # written in place while we swapped: theirs wins
            os.replace(aside, path)
            raise HashConflict(f"{path.name} was saved by someone else meanwhile", current_hash=file_hash(path))
        aside.unlink()
        fsync_dir(path.parent)
    finally:
        new.unlink(missing_ok=True)
        _restore(path, aside)


def remove_if_unchanged(path: Path, expected_hash: str) -> bool:
    """Delete `path` only if it still holds `expected_hash`; False (and the file untouched) if not.
    The file is renamed aside first and hashed there, so an editor saving meanwhile either lands
    before the rename (the hash differs: it is put back) or creates a new file. A crash while it is
    aside leaves an `old` temp that `repair_leftovers` puts back: removal is then simply not done."""
    aside = _temp_beside(path, "old")
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return False
    crash_point("remove.aside")
    if file_hash(aside) != expected_hash:
        _restore(path, aside)
        return False
    aside.unlink()
    fsync_dir(path.parent)
    return True


def _check_aside(path: Path, aside: Path, expected_hash: str) -> None:
    current = file_hash(aside)
    if current != expected_hash:
        _restore(path, aside)
        raise HashConflict(
            f"{path.name} changed: expected {expected_hash}, found {current}",
            current_hash=file_hash(path) or current,
            expected_hash=expected_hash,
        )


def _restore(path: Path, aside: Path) -> None:
    """Put the set-aside file back unless something newer took its place (then it is obsolete)."""
    if not aside.exists():
        return
    with contextlib.suppress(FileExistsError):
        os.link(aside, path)
    aside.unlink(missing_ok=True)
    fsync_dir(path.parent)


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def repair_leftovers(folder: Path) -> list[str]:
    """Finish what crashed writes left in `folder` (not below it): an old file set aside with nothing
    at its path is put back, and every other temporary file of a process that is gone is removed.
    A live process's temporary files are its own business. Returns one line per file handled."""
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return []
    report: list[str] = []
    for entry in entries:
        match = TEMP_NAME.match(entry.name)
        if match is None or not entry.is_file(follow_symlinks=False) or _pid_alive(int(match["pid"])):
            continue
        temp, target = Path(entry.path), folder / match["name"]
        if match["tag"] == "old" and not target.exists() and not target.is_symlink():
            with contextlib.suppress(FileExistsError):
                os.link(temp, target)
                report.append(f"{target}: put back the version a crashed write had set aside")
        temp.unlink(missing_ok=True)
        report.append(f"{temp}: removed a temporary file left by a crashed write")
    if report:
        fsync_dir(folder)
    return report


def set_aside(path: Path) -> Path | None:
    """The old version of `path` that a compare-and-swap has renamed aside, if any: between that
    rename and the new file being linked in, nothing is at the path, and a reader in another thread
    or process must see the old version there, not a missing note. (After a crash the same file is
    what `repair_leftovers` puts back, so reading it is still reading the note's last version.)"""
    try:
        with os.scandir(path.parent) as entries:
            for entry in entries:
                if set_aside_name(entry.name) == path.name:
                    return Path(entry.path)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return None
    return None


def set_aside_name(name: str) -> str | None:
    """The note name that `name` is the set-aside version of (see `set_aside`), else None."""
    match = TEMP_NAME.match(name) if ".dory-old-" in name else None
    return match["name"] if match is not None and match["tag"] == "old" else None


def stat_note(path: Path, follow_symlinks: bool = True) -> os.stat_result:
    """`os.stat` of a note, or, while a write has renamed it aside for a moment, of the version set
    aside (a rename keeps size and mtime); FileNotFoundError only when nothing is there at all."""
    try:
        return os.stat(path, follow_symlinks=follow_symlinks)
    except FileNotFoundError:
        aside = set_aside(path)
        if aside is None:
            raise
    try:
        return os.stat(aside, follow_symlinks=False)
    except FileNotFoundError:  # the write finished meanwhile: the note is back at its path
        return os.stat(path, follow_symlinks=follow_symlinks)


def is_leftover(name: str) -> bool:
    """A temporary file name of a write whose process is gone."""
    match = TEMP_NAME.match(name) if ".dory-" in name else None
    return match is not None and not _pid_alive(int(match["pid"]))


def leftovers(root: Path, skip: tuple[str, ...] = (".git",)) -> list[Path]:
    """Temporary files of crashed writes anywhere below `root` (the state folder included)."""
    found: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in skip]
        found += [Path(folder) / name for name in files if is_leftover(name)]
    return found


def sweep_leftovers(root: Path) -> list[str]:
    """`repair_leftovers` in every folder below `root` (the corpus) that holds a leftover."""
    report: list[str] = []
    for folder in sorted({path.parent for path in leftovers(root)}):
        report += repair_leftovers(folder)
    return report
