"""The source of a migration as one tree of files: a folder, a zip (zips inside it opened too) or one file.

Nothing here trusts the source. Zip members whose names are absolute, contain `..`, or are links
are never opened (a problem each, so the report names them); the members of every zip together
may not expand past `MAX_TOTAL_BYTES`, one member past `MAX_FILE_BYTES`, nor any member past
`MAX_RATIO` times its compressed size (a zip bomb); nested zips are opened `MAX_DEPTH` deep. A zip
that cannot be read (truncated, not a zip) is one problem and the rest of the tree goes on. Files
are read only when a reader asks, one at a time, so memory holds one file, never the export.

Skipped as noise in every tree: `__MACOSX/`, `.DS_Store`, `Thumbs.db`, and hidden folders (`.git`,
`.obsidian`, `.trash`) except where a reader asks for them by path.
"""

from __future__ import annotations

import io
import os
import stat
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO

from dory.migrate.model import ItemProblem, SourceFile

MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_TOTAL_BYTES = 4 * 1024 * 1024 * 1024
MAX_RATIO = 200
MAX_MEMBERS = 200_000
MAX_DEPTH = 3
NOISE_NAMES = frozenset({".DS_Store", "Thumbs.db", "desktop.ini"})
NESTED = "!/"  # joins a zip's path and a member's path inside it


@dataclass
class SourceTree:
    """Every file of the source, by its posix path inside it, and the problems met opening it."""

    root: Path
    label: str
    problems: list[ItemProblem] = field(default_factory=list)
    archives: list[zipfile.ZipFile] = field(default_factory=list)
    _files: dict[str, SourceFile] = field(default_factory=dict)

    def __enter__(self) -> SourceTree:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for archive in self.archives:
            archive.close()
        self.archives.clear()

    def files(self) -> Iterator[SourceFile]:
        return iter(sorted(self._files.values(), key=lambda f: f.rel))

    def get(self, rel: str) -> SourceFile | None:
        return self._files.get(rel)

    def add(self, file: SourceFile) -> None:
        self._files[file.rel] = file

    def __len__(self) -> int:
        return len(self._files)


def open_source(path: Path) -> SourceTree:
    """The tree of `path` (a folder, a `.zip`/`.bear2bk` or any single file)."""
    tree = SourceTree(root=path, label=_label(path))
    if path.is_dir():
        _add_folder(tree, path)
    elif zipfile.is_zipfile(path) or path.suffix.lower() in (".zip", ".bear2bk"):
        # By name too: a truncated download is a `bad_zip` problem, not a file to copy as it is.
        _add_zip(tree, "", lambda: path.open("rb"), depth=1)
    else:
        size = path.stat().st_size
        tree.add(SourceFile(path.name, size, _file_reader(path, size)))
    return tree


def _label(path: Path) -> str:
    name = path.name or "source"
    for ext in (".zip", ".bear2bk", ".json", ".jsonl", ".enex"):
        if name.lower().endswith(ext):
            return name[: -len(ext)] or "source"
    return name


def is_noise(rel: str) -> bool:
    parts = PurePosixPath(rel).parts
    return any(p == "__MACOSX" or p in NOISE_NAMES or p.startswith("._") for p in parts) or any(
        p.startswith(".") for p in parts[:-1]
    )


def _file_reader(path: Path, size: int) -> Callable[[], bytes]:
    def read() -> bytes:
        if size > MAX_FILE_BYTES:
            raise ValueError(f"file is larger than {MAX_FILE_BYTES} bytes")
        return path.read_bytes()

    return read


def _add_folder(tree: SourceTree, root: Path) -> None:
    for folder, dirs, names in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not Path(folder, d).is_symlink())
        for name in sorted(names):
            full = Path(folder, name)
            rel = full.relative_to(root).as_posix()
            if is_noise(rel):
                continue
            try:
                st = full.lstat()
            except OSError as exc:
                tree.problems.append(ItemProblem(rel, "unreadable", str(exc.strerror or exc)))
                continue
            if stat.S_ISLNK(st.st_mode):
                tree.problems.append(ItemProblem(rel, "symlink_skipped", "symbolic links are not followed"))
            elif not stat.S_ISREG(st.st_mode):
                tree.problems.append(ItemProblem(rel, "not_a_file", "not a regular file (fifo, socket or device)"))
            elif zipfile.is_zipfile(full) and full.suffix.lower() in (".zip", ".bear2bk"):
                _add_zip(tree, rel + NESTED, lambda full=full: full.open("rb"), depth=1)  # type: ignore[misc]
            else:
                tree.add(SourceFile(rel, st.st_size, _file_reader(full, st.st_size)))


def _member_problem(info: zipfile.ZipInfo) -> tuple[str, str] | None:
    """Why a zip member must not be opened, or None."""
    name = info.filename.replace("\\", "/")
    parts = PurePosixPath(name).parts
    if name.startswith("/") or ".." in parts or (len(name) > 1 and name[1] == ":") or "\x00" in name:
        return "zip_path_escape", f"member path leaves the archive: {name!r}"
    if stat.S_ISLNK(info.external_attr >> 16):
        return "symlink_skipped", "symbolic link inside the zip"
    if info.file_size > MAX_FILE_BYTES:
        return "file_too_large", f"member expands to {info.file_size} bytes (limit {MAX_FILE_BYTES})"
    if info.file_size > MAX_RATIO * max(info.compress_size, 1) and info.file_size > 1024 * 1024:
        return "zip_bomb", f"member expands {info.file_size // max(info.compress_size, 1)}x (limit {MAX_RATIO}x)"
    return None


def _add_zip(tree: SourceTree, prefix: str, opener: Callable[[], IO[bytes]], depth: int) -> None:
    """Add a zip's members. The archive stays open (closed with the tree): reopening it for every
    member would read its directory once per member."""
    where = prefix.removesuffix(NESTED) or tree.root.name
    try:
        archive = zipfile.ZipFile(opener())
        infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
        tree.problems.append(ItemProblem(where, "bad_zip", f"cannot read the zip: {exc}"))
        return
    tree.archives.append(archive)
    if len(infos) > MAX_MEMBERS:
        tree.problems.append(ItemProblem(where, "zip_bomb", f"{len(infos)} members (limit {MAX_MEMBERS})"))
        return
    total = 0
    for info in infos:
        rel = prefix + info.filename.replace("\\", "/")
        if info.is_dir() or is_noise(info.filename):
            continue
        problem = _member_problem(info)
        total += info.file_size
        if problem is None and total > MAX_TOTAL_BYTES:
            problem = ("zip_bomb", f"the zip expands past {MAX_TOTAL_BYTES} bytes")
        if problem is not None:
            tree.problems.append(ItemProblem(rel, *problem))
            continue
        reader = _member_reader(archive, info)
        if info.filename.lower().endswith((".zip", ".bear2bk")) and depth < MAX_DEPTH:
            _add_zip(tree, rel + NESTED, lambda reader=reader: io.BytesIO(reader()), depth + 1)  # type: ignore[misc]
        else:
            tree.add(SourceFile(rel, info.file_size, reader))


def _member_reader(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Callable[[], bytes]:
    def read() -> bytes:
        with archive.open(info) as member:
            # Read one byte past the declared size: a member that lies about its size stops there.
            data = member.read(info.file_size + 1)
        if len(data) > info.file_size:
            raise ValueError("zip member is larger than its header says")
        return data

    return read
