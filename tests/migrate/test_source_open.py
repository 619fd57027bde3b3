"""SourceFile.open: a file of the source as a stream (folders, zips, zips in zips), so a reader can
take a large file a part at a time; the bytes are those `read()` gives. A damaged zip member
raises ValueError either way (readers expect OSError and ValueError from a source file)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from support.migration import Migrate

from dory.migrate.source import open_source


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def test_every_kind_of_source_file_opens_as_a_stream(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    big = b"heron " * 50_000
    (src / "plain.enex").write_bytes(big)
    (src / "outer.zip").write_bytes(_zip({"a/in.enex": big, "inner.zip": _zip({"deep.enex": b"egret"})}))
    with open_source(src) as tree:
        rels = [f.rel for f in tree.files()]
        assert rels == ["outer.zip!/a/in.enex", "outer.zip!/inner.zip!/deep.enex", "plain.enex"]
        for file in tree.files():
            with file.open() as stream:
                first = stream.read(10)
                assert first + stream.read() == file.read()
    with open_source(src / "plain.enex") as single:
        (only,) = single.files()
        with only.open() as stream:
            assert stream.read() == big


def _corrupt_first_member(tmp_path: Path) -> Path:
    data = bytearray(_zip({"a.md": b"heron " * 1000, "b.md": b"egret " * 1000}))
    start = data.index(b"a.md") + len(b"a.md")  # the first member's deflated bytes follow its name
    data[start + 5 : start + 25] = bytes(b ^ 0xFF for b in data[start + 5 : start + 25])
    path = tmp_path / "damaged.zip"
    path.write_bytes(bytes(data))
    return path


def test_a_damaged_zip_member_raises_value_error_read_whole_or_streamed(tmp_path: Path) -> None:
    with open_source(_corrupt_first_member(tmp_path)) as tree:
        damaged = tree.get("a.md")
        assert damaged is not None
        with pytest.raises(ValueError, match="corrupt zip member"):
            damaged.read()
        with pytest.raises(ValueError, match="corrupt zip member"), damaged.open() as stream:
            stream.read()


def test_a_damaged_zip_member_is_one_problem_and_the_rest_is_imported(
    tmp_path: Path, corpus: Path, migrate: Migrate
) -> None:
    """zlib's error used to escape read() and stop the reader: everything after it was lost."""
    res = migrate(_corrupt_first_member(tmp_path))
    assert [(p.source, p.code) for p in res.problems] == [("a.md", "unreadable")]
    assert (corpus / "knowledge/damaged/b.md").read_bytes() == b"egret " * 1000
