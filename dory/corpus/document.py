"""Read one markdown note: bytes → text → frontmatter + body + title.

Reading never modifies the file. Problems are typed: `ReadProblem` means the file is skipped (with
a reason); a broken frontmatter block is *not* a skip: the note is indexed as plain text and the
problem is recorded on the document.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import glob
import hashlib
import math
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from frontmatter.default_handlers import YAMLHandler

from dory.corpus.atomic import set_aside
from dory.models.common import MAX_NESTING

FRONTMATTER_MAX_BYTES = 64 * 1024
# Caps the size of what YAML aliases can expand to (a "billion laughs" block stays small on disk).
FRONTMATTER_MAX_NODES = 5000
_FENCE = re.compile(r"^-{3,}\s*$")
_ATX_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$")
_YAML = YAMLHandler()
# How often a read follows a note that writes keep swapping under it. Each retry means one more
# write completed meanwhile, so the bound only stops a reader from chasing an endless stream.
_SWAP_RETRIES = 100


class ReadProblem(Exception):
    """The file cannot be indexed; `reason` is a stable code, the message says why."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


@dataclass
class Document:
    path: str
    text: str
    sha256: str
    size: int
    frontmatter: dict[str, Any] = field(default_factory=dict)
    frontmatter_error: str | None = None
    body_start: int = 0  # 0-based index of the first body line in split_lines(text)
    title: str = ""

    @property
    def lines(self) -> list[str]:
        return split_lines(self.text)


def split_lines(text: str) -> list[str]:
    """Lines as editors number them: split on LF only (CR of CRLF dropped), unlike str.splitlines,
    which also breaks on form feeds and Unicode separators and would shift every line number."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def sha256_hex(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def decode_note(data: bytes) -> str:
    """UTF-8 (with or without BOM) or BOM-marked UTF-16; anything else is refused."""
    if b"\x00" in data and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        offset = data.index(b"\x00")
        raise ReadProblem("nul_bytes", f"contains NUL bytes at offset {offset} (binary file?)")
    try:
        utf16 = data.startswith((b"\xff\xfe", b"\xfe\xff"))
        text = data.decode("utf-16") if utf16 else data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ReadProblem("not_utf8", f"not valid UTF-8: byte 0x{data[exc.start]:02x} at offset {exc.start}") from exc
    if "\x00" in text:
        raise ReadProblem("nul_bytes", "contains NUL characters")
    return text


def read_regular(path: Path, max_bytes: int) -> bytes:
    """The bytes of a note, at most `max_bytes` (checked while reading, not only before). A FIFO,
    socket or device is refused without blocking on it, and so is a hard-linked file (see
    `hard_link_problem`); FileNotFoundError passes through.

    A Dory write in another thread or process may have renamed the note aside for a moment (see
    `atomic.set_aside`): the version set aside is read then, so a reader sees the old note or the
    new one, never a missing one."""
    for _ in range(_SWAP_RETRIES):
        try:
            return _read_one(path, path, max_bytes)
        except FileNotFoundError:
            aside = set_aside(path)
            if aside is None:
                raise
        try:
            return _read_one(aside, path, max_bytes)
        except FileNotFoundError:
            continue  # the swap finished or was undone meanwhile: the path holds a file again
    raise FileNotFoundError(errno.ENOENT, "the note kept being replaced while it was read", str(path))


def _read_one(opened: Path, note: Path, max_bytes: int) -> bytes:
    """Read `opened`, which is `note` itself or the version of it a write has set aside."""
    fd = os.open(opened, os.O_RDONLY | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ReadProblem("not_regular_file", "not a regular file (fifo, socket or device)")
        # A second look at the link count: a write's temporary name may be removed between the
        # fstat and the search for it (the note is then back to one name).
        if (problem := hard_link_problem(st, note)) and os.fstat(fd).st_nlink > 1:
            raise problem
        if st.st_size > max_bytes:
            raise ReadProblem("too_large", f"{st.st_size} bytes is over the {max_bytes}-byte cap")
        chunks, total = [], 0
        while chunk := os.read(fd, min(1 << 20, max_bytes + 1 - total)):
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:  # grew while being read
                raise ReadProblem("too_large", f"over the {max_bytes}-byte cap")
        return b"".join(chunks)
    finally:
        os.close(fd)


def hard_link_problem(st: os.stat_result, path: Path | None = None) -> ReadProblem | None:
    """The policy on hard links: a file with more than one name is not read. A hard link is not a
    symlink, and nothing on it says where its other names are: one may lie outside the corpus (a
    private file linked in), and finding out would mean searching the whole file system. So, as for
    a symlink leaving the corpus, the content is not taken for a note; a note meant to live in two
    places stays in the corpus and is symlinked from the other place.

    One exception: Dory's own atomic writes link a temporary file into place and then remove it (and
    a swap that is undone links the version it set aside back), so for a moment a note has two
    names, the second being that temporary file beside it. A reader
    (an HTTP GET during a write) must not see a hard link then. A scan passes no path: it runs as the
    index's owner, never beside that owner's writes."""
    if st.st_nlink <= 1 or (path is not None and st.st_nlink == 2 and _own_write_in_progress(st, path)):
        return None
    return ReadProblem(
        "hard_link",
        f"the file has {st.st_nlink} names (hard links), maybe outside the corpus; Dory reads only notes "
        "with one name: copy it instead, or symlink to it from outside the corpus",
    )


def _own_write_in_progress(st: os.stat_result, path: Path) -> bool:
    """Whether the other name of `path` is the temporary file of a Dory write linking it into place
    (a new version, or an old one being put back)."""
    for temp in path.parent.glob(f".{glob.escape(path.name)}.dory-*.tmp"):
        with contextlib.suppress(OSError):
            if temp.stat().st_ino == st.st_ino and temp.stat().st_dev == st.st_dev:
                return True
    return False


def read_document(root: Path, rel: str, max_bytes: int) -> Document:
    try:
        data = read_regular(root / rel, max_bytes)
    except OSError as exc:
        raise ReadProblem("unreadable", exc.strerror or str(exc)) from exc
    if not data.strip():
        raise ReadProblem("empty", "empty file")
    return parse_document(rel, data)


def parse_document(rel: str, data: bytes) -> Document:
    text = decode_note(data)
    doc = Document(path=rel, text=text, sha256=sha256_hex(data), size=len(data))
    lines = split_lines(text)
    fence_end = _frontmatter_end(lines)
    if fence_end is not None:
        # The final newline matters to YAML: a block scalar (`key: |`) at the end keeps its "\n".
        block = "".join(line + "\n" for line in lines[1:fence_end])
        try:
            doc.frontmatter = _parse_yaml_mapping(block)
            doc.body_start = fence_end + 1
        except ValueError as exc:
            doc.frontmatter_error = str(exc)
    doc.title = _title(doc, lines, rel)
    return doc


def _frontmatter_end(lines: list[str]) -> int | None:
    """Index of the closing `---` when the file opens with a frontmatter fence."""
    if not lines or lines[0].rstrip() != "---":
        return None
    for index in range(1, len(lines)):
        if _FENCE.match(lines[index]) or lines[index].rstrip() == "...":
            return index
    return None


def _parse_yaml_mapping(block: str) -> dict[str, Any]:
    if len(block.encode("utf-8")) > FRONTMATTER_MAX_BYTES:
        raise ValueError(f"frontmatter is over {FRONTMATTER_MAX_BYTES} bytes")
    if not block.strip():
        return {}
    try:
        data = _YAML.load(block)
    except yaml.YAMLError as exc:
        raise ValueError(f"broken YAML frontmatter: {_one_line(exc)}") from exc
    except RecursionError as exc:
        raise ValueError("broken YAML frontmatter: nested too deeply") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"frontmatter is a {type(data).__name__}, not a mapping")
    budget = [FRONTMATTER_MAX_NODES]
    return {str(key): to_jsonable(value, budget, 1) for key, value in data.items()}


def to_jsonable(value: Any, budget: list[int], depth: int) -> Any:
    """YAML values → JSON-safe values (dates become ISO strings), bounded in total size and in
    depth (`depth` levels hold this value): a few hundred levels parse, then break every reader
    that serialises the note's metadata."""
    budget[0] -= 1
    if budget[0] < 0:
        raise ValueError("frontmatter expands to too many values (YAML alias bomb?)")
    if isinstance(value, dict | list | tuple | set) and value and depth >= MAX_NESTING:
        raise ValueError(f"frontmatter is nested deeper than {MAX_NESTING} levels")
    if isinstance(value, dict):
        return {str(key): to_jsonable(item, budget, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple | set):
        return [to_jsonable(item, budget, depth + 1) for item in value]
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if value is None or isinstance(value, str | int | float | bool):
        if isinstance(value, float) and not math.isfinite(value):  # NaN and ±inf are not JSON
            return None
        return value
    return str(value)


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())[:300]


def _title(doc: Document, lines: list[str], rel: str) -> str:
    title = doc.frontmatter.get("title")
    if isinstance(title, str | int | float) and str(title).strip():
        return str(title).strip()
    in_fence = False
    for line in lines[doc.body_start :]:
        stripped = line.lstrip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
        elif not in_fence and (match := _ATX_HEADING.match(line)):
            return match.group(1).strip()
    return Path(rel).stem


def frontmatter_list(value: Any) -> list[str]:
    """`tags: a, b`, `tags: [a, b]` and `aliases: x` all become lists of strings."""
    if value is None:
        return []
    if isinstance(value, str):
        return [part.strip().lstrip("#") for part in re.split(r"[,\n]", value) if part.strip()]
    if isinstance(value, list):
        return [str(item).strip().lstrip("#") for item in value if item is not None and str(item).strip()]
    return [str(value)]
