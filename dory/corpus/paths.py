"""Path rules: what counts as a note, what is ignored, and how a user path maps into the corpus."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from dory.corpus.atomic import set_aside
from dory.errors import InvalidInput, NotFound, PathNotAllowed, PathOutsideCorpus

# Folders never walked, wherever they appear.
IGNORED_DIRS = frozenset({".dory", ".git", ".obsidian", ".trash", "node_modules", "__pycache__", ".venv"})
# Corpus folders never indexed, watched nor served to agents:
# quarantined writes wait in the first for a person; exports dropped into the second wait for the
# migrate-inbox job (dory/jobs/migrate_inbox.py), raw material that is not memory until migrated.
QUARANTINE_DIR = "inbox/quarantine"
IMPORT_DIR = "inbox/import"
UNSERVED_DIRS = frozenset({QUARANTINE_DIR, IMPORT_DIR})
# The write log: one JSON line per file each write changed (who, when, through what, which lines).
WRITE_LOG_DIR = "logs/writes"
# Agent session transcripts: served by `get`, indexed in the session plane, never in durable memory.
SESSIONS_ROOT = "logs/sessions"
# The compiled wiki is generated from canonical pages: readable, never indexed as evidence.
WIKI_ROOT = "wiki"
# Editor and sync-tool droppings (vim, JetBrains, sed -i, Syncthing, Dropbox, Office locks).
TEMP_PATTERNS = (
    "*~",
    "*.swp",
    "*.swx",
    "*.tmp",
    "4913",
    "*___jb_tmp___",
    "*___jb_old___",
    "sed??????",
    "*.sync-conflict-*",
    "* (conflicted copy *",
    "~$*",
    ".#*",
)


def is_temp_name(name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in TEMP_PATTERNS)


class IgnoreRules:
    """Decides which relative paths are skipped: built-in folders, hidden and temp names, user globs."""

    def __init__(self, globs: Iterable[str] = (), excluded_dirs: Iterable[str] = ()) -> None:
        self.globs = tuple(globs)
        self.excluded_dirs = frozenset(excluded_dirs)  # corpus folders one index leaves to another

    @classmethod
    def durable(cls, globs: Iterable[str] = ()) -> IgnoreRules:
        """The rules of the durable index: everything but the session plane and the generated wiki."""
        return cls(globs, excluded_dirs=(SESSIONS_ROOT, WIKI_ROOT))

    def skips_dir(self, name: str, rel: str) -> bool:
        return (
            name in IGNORED_DIRS
            or name.startswith(".")
            or rel in UNSERVED_DIRS
            or rel in self.excluded_dirs
            or self._user_match(rel + "/")
        )

    def skips_file(self, name: str, rel: str) -> bool:
        if name.startswith(".") or is_temp_name(name):
            return True
        return self._user_match(rel)

    def ignores_parents(self, rel: str) -> bool:
        """True when a folder on the way to `rel` is skipped."""
        parts = rel.split("/")
        return any(self.skips_dir(name, "/".join(parts[:depth])) for depth, name in enumerate(parts[:-1], start=1))

    def ignores_path(self, rel: str, is_dir: bool) -> bool:
        name = rel.rsplit("/", 1)[-1]
        if self.ignores_parents(rel):
            return True
        return self.skips_dir(name, rel) if is_dir else self.skips_file(name, rel)

    def _user_match(self, rel: str) -> bool:
        return any(fnmatch.fnmatch(rel, glob) or fnmatch.fnmatch(rel.rstrip("/"), glob) for glob in self.globs)


def is_note(name: str) -> bool:
    return name.lower().endswith(".md")


def normalize_rel(user_path: str) -> str:
    """Validate a corpus-relative path given by a caller and return it in POSIX form.

    Rejects absolute paths, `..` climbing above the root, NUL bytes and empty paths before touching the disk.
    """
    if not user_path or not user_path.strip():
        raise InvalidInput("path is empty", path=user_path)
    if "\x00" in user_path:
        raise InvalidInput("path contains a NUL byte", path=user_path.replace("\x00", "\\x00"))
    candidate = user_path.replace("\\", "/")
    pure = PurePosixPath(candidate)
    if pure.is_absolute() or candidate.startswith("~") or (len(candidate) > 1 and candidate[1] == ":"):
        raise PathOutsideCorpus(f"path must be relative to the corpus: {user_path}", path=user_path)
    # `..` is read the way a shell reads it, step by step: `notes/../x.md` is `x.md`, inside the
    # corpus; only a step above the root escapes. Symlinks are judged later, on the real path.
    parts: list[str] = []
    for part in pure.parts:
        if part == "..":
            if not parts:
                raise PathOutsideCorpus(f"path escapes the corpus: {user_path}", path=user_path)
            parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    if not parts:
        raise InvalidInput("path names the corpus root, not a file", path=user_path)
    return "/".join(parts)


def resolve_inside(root: Path, user_path: str) -> tuple[str, Path]:
    """Map a caller's relative path to a real file inside `root`, following symlinks safely.

    Returns (normalised relative path, resolved absolute path). Raises PathOutsideCorpus when the
    path or any symlink on it leads outside the corpus, NotFound when nothing is there.
    """
    rel = normalize_rel(user_path)
    real_root = root.resolve()
    try:
        resolved = (real_root / rel).resolve(strict=True)
    except FileNotFoundError as exc:
        swapped = _being_swapped(real_root / rel)
        if swapped is None:
            raise NotFound(f"no such file in the corpus: {rel}", path=rel) from exc
        resolved = swapped
    except RuntimeError as exc:  # Python raises this for symlink loops
        raise InvalidInput(f"symlink loop at {rel}", path=rel) from exc
    except OSError as exc:
        if exc.errno == 40:  # ELOOP
            raise InvalidInput(f"symlink loop at {rel}", path=rel) from exc
        raise NotFound(f"cannot open {rel}: {exc.strerror}", path=rel) from exc
    if not resolved.is_relative_to(real_root):
        raise PathOutsideCorpus(f"path leads outside the corpus through a symlink: {rel}", path=rel)
    if resolved.is_dir():
        raise InvalidInput(f"path is a folder, not a file: {rel}", path=rel)
    return rel, resolved


def _being_swapped(path: Path) -> Path | None:
    """The real path of a note that a write has renamed aside for a moment (it is still there:
    reading it reads the version set aside), or None when nothing is there at all."""
    try:
        folder = path.parent.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    return folder / path.name if set_aside(folder / path.name) is not None else None


def relpath(root: Path, path: Path) -> str:
    return os.path.relpath(path, root).replace(os.sep, "/")


def check_visible(rel: str, rules: IgnoreRules, via: str = "") -> None:
    """Refuse a path the indexer would never see: inside a hidden or ignored folder, or a hidden,
    temporary or ignored name (`via` says how the caller got there, e.g. through a symlink)."""
    parts = rel.split("/")
    for depth, name in enumerate(parts[:-1], start=1):
        if rules.skips_dir(name, "/".join(parts[:depth])):
            raise PathNotAllowed(f"{rel}{via} is inside a hidden or ignored folder ({name}/)", path=rel)
    if rules.skips_file(parts[-1], rel):
        raise PathNotAllowed(f"{rel}{via} is a hidden, temporary or ignored name", path=rel)


def resolve_note(root: Path, user_path: str, rules: IgnoreRules) -> tuple[str, Path]:
    """Like resolve_inside, but only for notes Dory would index: a markdown file that no ignore
    rule hides (so `.git/config`, `.env` or `.dory/` are never served to an agent)."""
    rel, resolved = resolve_inside(root, user_path)
    check_visible(rel, rules)
    if not is_note(rel.rsplit("/", 1)[-1]) or not is_note(resolved.name):
        raise PathNotAllowed(f"{rel} is not a markdown note (.md)", path=rel)
    return rel, resolved
