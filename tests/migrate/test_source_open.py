"""SourceFile.open: a file of the source as a stream (folders, zips, zips in zips), so a reader can
take a large file a part at a time; the bytes are those `read()` gives."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

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
