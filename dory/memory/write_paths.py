"""Write paths: where Dory may write a note a caller names.

A pure check: it reads the disk (for symlinks) but never creates, changes or deletes anything.

- A note name ends in exactly `.md`, lowercase: `.MD` or `.Md` is refused, so Dory never creates
  `x.md` next to `x.MD` (two files on Linux, one on macOS and Windows). Existing `.MD` notes stay
  readable; they are just not a write target.
- Unsafe characters in a path (control, format/invisible, bidi, variation selectors, unusual spaces)
  raise PathNotAllowed: an invisible character in a name makes a second file that looks exactly like
  the first. Paths are stricter than content here (no emoji ZWJ). The one exception is NUL, which
  `normalize_rel` already refuses with InvalidInput.
- Components with leading/trailing spaces or a trailing dot are refused (`note.md `, `notes./x.md`):
  lookalikes of another name, and silently renamed on Windows.
- `.dory/`, `wiki/`, `sources/semantic/` and `logs/writes/` (the write log) are matched
  case-insensitively (a case-insensitive filesystem treats `Wiki/` as `wiki/`), and are checked
  again on the real path when a symlinked folder is on the way.
- A symlinked folder that leads to another folder inside the corpus is allowed (people organise
  notes that way); one that leads outside is not. The target itself may not be a symlink.
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from pathlib import Path

from dory.corpus.atomic import TEMP_NAME_OVERHEAD
from dory.corpus.paths import WRITE_LOG_DIR, IgnoreRules, check_visible, normalize_rel, relpath
from dory.errors import InvalidInput, NameTooLong, PathNotAllowed, PathNotWritable, PathOutsideCorpus
from dory.memory.safety import SELECTORS, describe_char

MAX_COMPONENT_BYTES = 255  # NAME_MAX on Linux and macOS
# A note's own name leaves room for the temporary names beside it and for its tombstone's name.
MAX_NOTE_NAME_BYTES = MAX_COMPONENT_BYTES - TEMP_NAME_OVERHEAD - len(".tombstone")
MAX_PATH_BYTES = 1024  # a relative path; leaves room for the corpus root under PATH_MAX
NOTE_SUFFIX = ".md"
EVIDENCE_PREFIX = ("sources", "semantic")
WRITE_LOG_PREFIX = tuple(WRITE_LOG_DIR.split("/"))

_PATH_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_PATH_FORBIDDEN_CHARS = frozenset("\u034f\u115f\u1160\u3164\uffa0")
_SELECTOR = re.compile(f"[{SELECTORS}]")


def _unsafe_path_char(rel: str) -> str | None:
    for char in rel:
        category = unicodedata.category(char)
        if category in _PATH_FORBIDDEN_CATEGORIES or (category == "Zs" and char != " "):
            return char
        if char in _PATH_FORBIDDEN_CHARS or _SELECTOR.fullmatch(char):
            return char
    return None


def _check_characters(rel: str) -> None:
    char = _unsafe_path_char(rel)
    if char is not None:
        shown = rel.encode("unicode_escape").decode("ascii")
        raise PathNotAllowed(
            f"path contains an unsafe character {describe_char(char)}: {shown}",
            path=shown,
            codepoint=f"U+{ord(char):04X}",
        )


def _check_lengths(rel: str) -> None:
    """Names the file system would refuse are refused before anything touches the disk."""
    if len(rel.encode("utf-8")) > MAX_PATH_BYTES:
        raise NameTooLong(f"path is longer than {MAX_PATH_BYTES} bytes", path=rel[:200])
    *folders, name = rel.split("/")
    for part in folders:
        if len(part.encode("utf-8")) > MAX_COMPONENT_BYTES:
            raise NameTooLong(
                f"a folder name is longer than {MAX_COMPONENT_BYTES} bytes: {part[:60]}...", path=rel[:200]
            )
    if len(name.encode("utf-8")) > MAX_NOTE_NAME_BYTES:
        raise NameTooLong(
            f"the file name is longer than {MAX_NOTE_NAME_BYTES} bytes (the file system allows "
            f"{MAX_COMPONENT_BYTES}; Dory keeps room for its temporary files): {name[:60]}...",
            path=rel[:200],
        )


def _check_shapes(rel: str) -> None:
    """Names that are lookalikes of other names: edge spaces, a trailing dot (Windows drops it)."""
    for part in rel.split("/"):
        if part != part.strip() or part.endswith("."):
            raise PathNotAllowed(f"path component {part!r} starts or ends with a space or ends with a dot", path=rel)


def _check_protected(rel: str, allow_evidence: bool, via: str = "") -> None:
    """Areas Dory never writes to: its own state, the generated wiki, immutable evidence, the write log."""
    parts = [part.casefold() for part in rel.split("/")]
    if ".dory" in parts[:-1]:
        raise PathNotWritable(f"{rel}{via} is inside .dory/, Dory's derived state", path=rel)
    if parts[0] == "wiki" and len(parts) > 1:
        raise PathNotWritable(f"{rel}{via} is inside wiki/, which is generated", path=rel)
    if tuple(parts[:2]) == EVIDENCE_PREFIX and len(parts) > 2 and not allow_evidence:
        raise PathNotWritable(f"{rel}{via} is inside sources/semantic/, which holds immutable evidence", path=rel)
    if tuple(parts[:2]) == WRITE_LOG_PREFIX and len(parts) > 2:
        raise PathNotWritable(f"{rel}{via} is inside {WRITE_LOG_DIR}/, Dory's record of who wrote what", path=rel)


def _check_note_name(rel: str) -> None:
    name = rel.rsplit("/", 1)[-1]
    stem = name[: -len(NOTE_SUFFIX)]
    if not name.endswith(NOTE_SUFFIX) or not stem.strip("."):
        hint = " (use a lowercase .md)" if name.lower().endswith(NOTE_SUFFIX) else ""
        raise PathNotAllowed(f"{rel} is not a markdown note name ending in .md{hint}", path=rel)


def _resolve_existing(path: Path, rel: str, real_root: Path) -> Path:
    """The real location of an existing path, refusing loops, dangling links and escapes."""
    try:
        real = path.resolve(strict=True)
    except RuntimeError as exc:  # Python 3.11/3.12 report symlink loops this way
        raise InvalidInput(f"symlink loop on the way to {rel}", path=rel) from exc
    except FileNotFoundError as exc:  # a dangling symlink: say where it points if that is outside
        if not path.resolve().is_relative_to(real_root):
            raise PathOutsideCorpus(f"{rel} leads outside the corpus through a symlink", path=rel) from exc
        raise InvalidInput(f"a broken symlink is on the way to {rel}", path=rel) from exc
    except OSError as exc:
        if exc.errno == 40:  # ELOOP (Python 3.13+)
            raise InvalidInput(f"symlink loop on the way to {rel}", path=rel) from exc
        raise InvalidInput(f"cannot inspect {rel}: {exc.strerror}", path=rel) from exc
    if not real.is_relative_to(real_root):
        raise PathOutsideCorpus(f"{rel} leads outside the corpus through a symlink", path=rel)
    return real


def _deepest_existing_folder(root: Path, real_root: Path, rel: str) -> tuple[Path, list[str]]:
    """Walk the folders of `rel` that exist; return the real deepest one and the parts below it."""
    parts = rel.split("/")
    real_parent = real_root
    for depth in range(1, len(parts)):  # folders only; the final name is checked by _check_target
        folder = root.joinpath(*parts[:depth])
        if not os.path.lexists(folder):
            return real_parent, parts[depth - 1 :]
        real_parent = _resolve_existing(folder, rel, real_root)
        if not real_parent.is_dir():
            raise InvalidInput(f"{'/'.join(parts[:depth])} is a file, not a folder", path=rel)
    return real_parent, parts[-1:]


def _check_target(target: Path, rel: str) -> None:
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InvalidInput(f"cannot inspect {rel}: {exc.strerror}", path=rel) from exc
    if stat.S_ISLNK(mode):
        raise PathNotAllowed(f"{rel} is a symlink; Dory writes only regular files", path=rel)
    if stat.S_ISDIR(mode):
        raise InvalidInput(f"{rel} is a folder, not a file", path=rel)
    if not stat.S_ISREG(mode):
        raise InvalidInput(f"{rel} is not a regular file", path=rel)


def check_write_path(root: Path, user_path: str, rules: IgnoreRules, allow_evidence: bool = False) -> tuple[str, Path]:
    """Validate a caller's path for a write; return (normalised relative path, absolute path to write).

    The absolute path has its existing folders resolved (symlinked folders inside the corpus are
    allowed) but its final component is never followed. Nothing is created. `allow_evidence` lets
    the semantic-write engine write its artifacts under sources/semantic/.
    """
    rel = normalize_rel(user_path)
    _check_characters(rel)
    _check_lengths(rel)
    _check_protected(rel, allow_evidence)
    _check_shapes(rel)
    check_visible(rel, rules)
    _check_note_name(rel)
    real_root = root.resolve()
    real_parent, below = _deepest_existing_folder(root, real_root, rel)
    real_rel = "/".join([relpath(real_root, real_parent), *below]).removeprefix("./")
    if real_rel != rel:  # a symlinked folder moved us: the real place must obey the same rules
        _check_protected(real_rel, allow_evidence, via=f" (through a symlink, from {rel})")
        check_visible(real_rel, rules, via=f" (through a symlink, from {rel})")
    target = real_parent.joinpath(*below)
    _check_target(target, rel)
    return rel, target
