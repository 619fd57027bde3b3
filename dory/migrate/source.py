"""The source of a migration as one tree of files: a folder, a zip (zips inside it opened too) or one file.

Nothing here trusts the source. Zip members whose names are absolute, contain `..`, or are links
are never opened (a problem each, so the report names them); the members of all the tree's zips
together (nested ones included) may not number more than `MAX_MEMBERS` nor expand past
`MAX_TOTAL_BYTES`, one member past `MAX_FILE_BYTES`, nor any member past `MAX_RATIO` times its
compressed size (a zip bomb); nested zips are opened `MAX_DEPTH` deep, and one deeper is a problem.
A zip that cannot be read (truncated, not a zip) is one problem and the rest of the tree goes on; so
is a member whose data is corrupt, when a reader reads it (a ValueError, as for any unreadable
file). In a folder, links are never followed, and FIFOs, sockets and devices are never opened
(neither is the Dory corpus, when the source holds it). Files are read only when a reader asks,
one at a time, so memory holds one file, never the export (a nested zip is held whole while open).

Skipped as noise in every tree: `__MACOSX/`, `.DS_Store`, `Thumbs.db`, and hidden folders (`.git`,
`.obsidian`, `.trash`), whose paths are kept in `hidden_dirs` (a folder like `.obsidian/` is a
format's signature; its files are app settings, never imported).
"""

from __future__ import annotations

import io
import os
import stat
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

from dory.migrate.model import ItemProblem, SourceFile

MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_TOTAL_BYTES = 4 * 1024 * 1024 * 1024
MAX_RATIO = 200
MAX_MEMBERS = 200_000
MAX_DEPTH = 3
NOISE_NAMES = frozenset({".DS_Store", "Thumbs.db", "desktop.ini"})
NESTED = "!/"  # joins a zip's path and a member's path inside it
# What a damaged member raises while it is read (bad CRC, broken deflate data, cut short, an
# unknown compression method, a password).
CORRUPT = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError)


@dataclass
class SourceTree:
    """Every file of the source, by its posix path inside it, and the problems met opening it."""

    root: Path
    label: str
    problems: list[ItemProblem] = field(default_factory=list)
    hidden_dirs: set[str] = field(default_factory=set)  # hidden folders seen and skipped: `.obsidian`, `v/.git`
    archives: list[zipfile.ZipFile] = field(default_factory=list)
    members: int = 0  # zip members seen, and the bytes they expand to, across every zip of the tree
    expanded: int = 0
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


ZIP_SUFFIXES = (".zip", ".bear2bk")


def open_source(path: Path, skip: Path | None = None) -> SourceTree:
    """The tree of `path` (a folder, a `.zip`/`.bear2bk` or any single file); `skip` is a folder
    never walked (the corpus, when the source holds it)."""
    tree = SourceTree(root=path, label=_label(path))
    if path.is_dir():
        _add_folder(tree, path, skip)
    else:
        _add_file(tree, path, path.name, path.stat(), "", any_zip=True)
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


def _open_regular(path: Path) -> IO[bytes]:
    """`path` opened for reading, never through a link and never waiting on a FIFO, should one have
    taken the file's place since the tree was listed."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    handle = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        handle.close()
        raise ValueError("no longer a regular file")
    return handle


def _file_reader(path: Path) -> Callable[[], bytes]:
    def read() -> bytes:
        with _open_regular(path) as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise ValueError(f"file is larger than {MAX_FILE_BYTES} bytes")
        return data

    return read


def _file_streamer(path: Path) -> Callable[[], IO[bytes]]:
    return lambda: _open_regular(path)


def _add_folder(tree: SourceTree, root: Path, skip: Path | None) -> None:
    def unreadable(exc: OSError) -> None:
        rel = Path(exc.filename).relative_to(root).as_posix() if exc.filename else "."
        tree.problems.append(ItemProblem(rel, "unreadable", str(exc.strerror or exc)))

    for folder, dirs, names in os.walk(root, onerror=unreadable, followlinks=False):
        kept = []
        for name in sorted(dirs):
            full = Path(folder, name)
            rel = full.relative_to(root).as_posix()
            if full.is_symlink():
                tree.problems.append(ItemProblem(rel, "symlink_skipped", "symbolic links are not followed"))
            elif skip is not None and full == skip:
                tree.problems.append(ItemProblem(rel, "corpus_skipped", "the Dory corpus itself is not imported"))
            elif name.startswith("."):  # never walked: a `.git` folder can hold more files than the notes
                tree.hidden_dirs.add(rel)
            else:
                kept.append(name)
        dirs[:] = kept
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
            _add_file(tree, full, rel, st, rel + NESTED, any_zip=False)


def _add_file(tree: SourceTree, full: Path, rel: str, st: os.stat_result, prefix: str, any_zip: bool) -> None:
    """One file of a folder, or the source itself: a zip is opened (in a folder, one named as a
    zip: office files are zips too, and stay files), anything but a regular file is a problem, and
    so is a file over the size limit."""
    if stat.S_ISLNK(st.st_mode):
        tree.problems.append(ItemProblem(rel, "symlink_skipped", "symbolic links are not followed"))
    elif not stat.S_ISREG(st.st_mode):
        tree.problems.append(ItemProblem(rel, "not_a_file", "not a regular file (fifo, socket or device)"))
    elif st.st_size > MAX_FILE_BYTES:
        tree.problems.append(ItemProblem(rel, "file_too_large", f"{st.st_size} bytes (limit {MAX_FILE_BYTES})"))
    elif full.suffix.lower() in ZIP_SUFFIXES or (any_zip and zipfile.is_zipfile(full)):
        _add_zip(tree, prefix, lambda: full.open("rb"), depth=1, where=rel)
    else:
        tree.add(SourceFile(rel, st.st_size, _file_reader(full), _file_streamer(full)))


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


def _add_zip(tree: SourceTree, prefix: str, opener: Callable[[], IO[bytes]], depth: int, where: str) -> None:
    """Add a zip's members. The archive stays open (closed with the tree): reopening it for every
    member would read its directory once per member."""
    try:
        archive = zipfile.ZipFile(opener())
        infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
        tree.problems.append(ItemProblem(where, "bad_zip", f"cannot read the zip: {exc}"))
        return
    tree.archives.append(archive)
    tree.members += len(infos)
    if tree.members > MAX_MEMBERS:
        tree.problems.append(ItemProblem(where, "zip_bomb", f"{tree.members} zip members (limit {MAX_MEMBERS})"))
        return
    for info in infos:
        rel = prefix + info.filename.replace("\\", "/")
        _note_hidden(tree, prefix, info)
        problem = _member_problem(info)
        escapes = problem is not None and problem[0] == "zip_path_escape"
        if not escapes and (info.is_dir() or is_noise(info.filename)):  # `../x` is no hidden name
            continue
        tree.expanded += info.file_size
        if problem is None and tree.expanded > MAX_TOTAL_BYTES:
            problem = ("zip_bomb", f"the source's zips expand past {MAX_TOTAL_BYTES} bytes")
        nested = info.filename.lower().endswith(ZIP_SUFFIXES)
        if problem is None and nested and depth >= MAX_DEPTH:
            problem = ("zip_bomb", f"a zip nested more than {MAX_DEPTH} deep")
        if problem is not None:
            tree.problems.append(ItemProblem(rel, *problem))
            continue
        reader = _member_reader(archive, info)
        if nested:
            _add_zip(tree, rel + NESTED, lambda reader=reader: io.BytesIO(reader()), depth + 1, rel)  # type: ignore[misc]
        else:
            tree.add(SourceFile(rel, info.file_size, reader, _member_streamer(archive, info)))


def _note_hidden(tree: SourceTree, prefix: str, info: zipfile.ZipInfo) -> None:
    """Record the first hidden folder on a member's path (`v/.obsidian/app.json` → `v/.obsidian`)."""
    parts = PurePosixPath(info.filename.replace("\\", "/")).parts
    folders = parts if info.is_dir() else parts[:-1]
    for n, part in enumerate(folders):
        if part.startswith("."):
            tree.hidden_dirs.add(prefix + "/".join(parts[: n + 1]))
            return


def _member_reader(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Callable[[], bytes]:
    def read() -> bytes:
        try:
            with archive.open(info) as member:
                # Read one byte past the declared size: a member that lies about its size stops there.
                data = member.read(info.file_size + 1)
        except CORRUPT as exc:
            raise ValueError(f"corrupt zip member: {exc}") from exc
        if len(data) > info.file_size:
            raise ValueError("zip member is larger than its header says")
        return data

    return read


def _member_streamer(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Callable[[], IO[bytes]]:
    """A zip member as a stream: zipfile stops at the size the header declares (checked against
    the limits above) and checks the CRC at the end, so a lying member cannot run past it."""

    def open_() -> IO[bytes]:
        try:
            inner = archive.open(info)
        except CORRUPT as exc:  # an unknown method or a password is found when the member is opened
            raise ValueError(f"corrupt zip member: {exc}") from exc
        return io.BufferedReader(_MemberStream(inner))

    return open_


class _MemberStream(io.RawIOBase):
    """A zip member's stream whose corrupt data raises ValueError, as `read()` does, so readers
    need to expect only OSError and ValueError from a source file."""

    def __init__(self, inner: IO[bytes]) -> None:
        super().__init__()
        self.inner = inner

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            data = self.inner.read(len(buffer))
        except CORRUPT as exc:
            raise ValueError(f"corrupt zip member: {exc}") from exc
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self.inner.close()
        super().close()
