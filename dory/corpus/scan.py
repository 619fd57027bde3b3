"""Walk the corpus and list its notes with size and mtime, plus what was skipped and why.

The walk never reads file contents (an unchanged re-scan must stay cheap) and never raises for one
bad entry: unreadable folders, symlinks leaving the corpus, symlink loops, files that are not regular
and hard-linked files (`document.hard_link_problem`) become `Skip` records.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from dory.corpus.atomic import is_leftover, set_aside_name, stat_note
from dory.corpus.document import hard_link_problem
from dory.corpus.paths import IgnoreRules, is_note


@dataclass(frozen=True, slots=True)
class FileStat:
    path: str  # corpus-relative, POSIX separators
    size: int
    mtime_ns: int


@dataclass(frozen=True, slots=True)
class Skip:
    path: str
    reason: str  # stable short code, e.g. "symlink_outside", "too_large", "nul_bytes"
    detail: str
    # The file's stat when it was skipped, so an unchanged bad file is not re-read every reindex.
    size: int | None = None
    mtime_ns: int | None = None


@dataclass
class ScanResult:
    files: dict[str, FileStat] = field(default_factory=dict)
    skipped: list[Skip] = field(default_factory=list)
    # False when part of the tree could not be listed: callers must not treat
    # missing files as deleted then.
    complete: bool = True
    # The corpus-relative roots a partial scan looked at (None: the whole corpus).
    scope: tuple[str, ...] | None = None
    # Temporary files of crashed writes seen on the way (`status` reports them).
    leftovers: list[str] = field(default_factory=list)

    def in_scope(self, path: str) -> bool:
        return self.scope is None or any(path == root or path.startswith(root + "/") for root in self.scope)


def scan_corpus(root: Path, rules: IgnoreRules) -> ScanResult:
    result = ScanResult()
    real_root = root.resolve()
    if not real_root.is_dir():
        result.complete = False
        result.skipped.append(Skip("", "unreadable_dir", f"corpus folder is missing: {root}"))
        return result
    root_stat = real_root.stat()
    _walk(real_root, "", real_root, rules, result, {(root_stat.st_dev, root_stat.st_ino)})
    return result


def scan_paths(root: Path, rules: IgnoreRules, roots: list[str]) -> ScanResult:
    """Scan only the given corpus-relative paths (files or folders), as the watcher reports them.

    A path that no longer exists contributes nothing, so the caller sees its notes as missing;
    a folder is walked whole; ignore rules apply to every component of the path.
    """
    result = ScanResult(scope=tuple(sorted(set(roots))))
    real_root = root.resolve()
    if not real_root.is_dir():
        result.complete = False
        result.skipped.append(Skip("", "unreadable_dir", f"corpus folder is missing: {root}"))
        return result
    for rel in result.scope or ():
        if rules.ignores_parents(rel):
            continue
        seen_dirs = _ancestors(real_root, rel)
        entry_path = real_root / rel
        try:
            # A note a write has renamed aside for a moment is still there: the watcher keeps it.
            st = stat_note(entry_path, follow_symlinks=False)
        except FileNotFoundError:
            continue
        except OSError as exc:
            result.complete = False
            result.skipped.append(Skip(rel, "unreadable", exc.strerror or str(exc)))
            continue
        name = entry_path.name
        if stat.S_ISDIR(st.st_mode):
            if not rules.skips_dir(name, rel):
                seen_dirs.add((st.st_dev, st.st_ino))
                _walk(entry_path, rel + "/", real_root, rules, result, seen_dirs)
        elif stat.S_ISLNK(st.st_mode):
            for entry in os.scandir(entry_path.parent):
                if entry.name == name:
                    _follow_link(entry, rel, real_root, rules, result, seen_dirs)
        elif is_note(name) and not rules.skips_file(name, rel):
            _add_file(st, rel, result)
    return result


def _ancestors(real_root: Path, rel: str) -> set[tuple[int, int]]:
    """The folders above a partial-scan root count as visited, as they would in a full walk."""
    seen = set()
    folder = real_root
    for part in ["", *rel.split("/")[:-1]]:
        folder = folder / part if part else folder
        try:
            st = folder.stat()
        except OSError:
            break
        seen.add((st.st_dev, st.st_ino))
    return seen


def _walk(
    folder: Path,
    prefix: str,
    real_root: Path,
    rules: IgnoreRules,
    result: ScanResult,
    seen_dirs: set[tuple[int, int]],
) -> None:
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError as exc:
        result.complete = False
        result.skipped.append(Skip(prefix.rstrip("/"), "unreadable_dir", exc.strerror or str(exc)))
        return
    names = {entry.name for entry in entries}
    for entry in entries:
        rel = prefix + entry.name
        if is_leftover(entry.name):
            result.leftovers.append(rel)
            continue
        if (note := set_aside_name(entry.name)) is not None:
            # A live write has renamed this note aside for a moment: it is still a note of the corpus.
            if note not in names and is_note(note) and not rules.skips_file(note, prefix + note):
                _add_file(entry.stat(follow_symlinks=False), prefix + note, result)
            continue
        if not _utf8(entry.name):
            if is_note(entry.name) or entry.is_dir(follow_symlinks=False):
                shown = rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                result.skipped.append(Skip(shown, "name_not_utf8", "the name is not valid UTF-8; rename it"))
            continue
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            is_link = entry.is_symlink()
        except OSError as exc:
            result.skipped.append(Skip(rel, "unreadable", exc.strerror or str(exc)))
            continue
        if is_dir:
            if not rules.skips_dir(entry.name, rel):
                st = entry.stat(follow_symlinks=False)
                seen_dirs.add((st.st_dev, st.st_ino))
                _walk(Path(entry.path), rel + "/", real_root, rules, result, seen_dirs)
            continue
        if is_link:
            _follow_link(entry, rel, real_root, rules, result, seen_dirs)
            continue
        if is_note(entry.name) and not rules.skips_file(entry.name, rel):
            _add_file(entry.stat(follow_symlinks=False), rel, result)


def _follow_link(
    entry: os.DirEntry[str],
    rel: str,
    real_root: Path,
    rules: IgnoreRules,
    result: ScanResult,
    seen_dirs: set[tuple[int, int]],
) -> None:
    """Symlinks are followed only when they stay inside the corpus; loops are reported once."""
    name = entry.name
    if rules.skips_file(name, rel) or rules.skips_dir(name, rel):
        return
    try:
        target = Path(entry.path).resolve(strict=True)
        st = target.stat()
    except (OSError, RuntimeError) as exc:
        if is_note(name) or isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == 40:
            reason = "symlink_loop" if _is_loop(exc) else "broken_symlink"
            result.skipped.append(Skip(rel, reason, str(exc)))
        return
    if not target.is_relative_to(real_root):
        if stat.S_ISDIR(st.st_mode) or is_note(name):
            result.skipped.append(Skip(rel, "symlink_outside", f"points outside the corpus: {target}"))
        return
    if stat.S_ISDIR(st.st_mode):
        key = (st.st_dev, st.st_ino)
        if key in seen_dirs:
            result.skipped.append(Skip(rel, "symlink_loop", f"folder already visited: {target}"))
            return
        seen_dirs.add(key)
        _walk(target, rel + "/", real_root, rules, result, seen_dirs)
    elif is_note(name):
        _add_file(st, rel, result)


def _is_loop(exc: BaseException) -> bool:
    return isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == 40


def _utf8(name: str) -> bool:
    """A name the index can store: file names are bytes, and not every byte string is UTF-8."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _add_file(st: os.stat_result, rel: str, result: ScanResult) -> None:
    if not stat.S_ISREG(st.st_mode):
        result.skipped.append(Skip(rel, "not_regular_file", "not a regular file (fifo, socket or device)"))
    elif problem := hard_link_problem(st):
        result.skipped.append(Skip(rel, problem.reason, problem.detail))
    else:
        result.files[rel] = FileStat(rel, st.st_size, st.st_mtime_ns)
