"""DoryService.get against real files: exact line slices, hashes, frontmatter, and every way a path or a
file can be hostile."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from dory.config import load_settings
from dory.errors import DoryError, InvalidInput, NotFound, PathOutsideCorpus, UnreadableFile
from dory.models import GetRequest
from dory.service import DoryService

TEN = "".join(f"line {n}\n" for n in range(1, 11))


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "ten.md").write_text(TEN)
    return root


@pytest.fixture
def svc(corpus: Path):
    service = DoryService(load_settings(corpus, env={"DORY_EMBEDDER_BACKEND": "none"}))
    yield service
    service.close()


def get(svc: DoryService, path: str, **kw):
    return svc.get(GetRequest(path=path, **kw))


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


# -- line slicing --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("from_line", "lines", "first", "last"),
    [
        (1, None, 1, 10),
        (3, 4, 3, 6),
        (10, 1, 10, 10),
        (8, 10, 8, 10),  # asking past the end stops at the last line
        (1, 1, 1, 1),
    ],
)
def test_get_returns_exactly_the_requested_lines(svc, from_line: int, lines: int | None, first: int, last: int) -> None:
    res = get(svc, "ten.md", from_line=from_line, lines=lines)
    assert (res.from_line, res.to_line, res.total_lines) == (first, last, 10)
    assert res.content == "\n".join(f"line {n}" for n in range(first, last + 1))
    assert res.hash == sha(TEN.encode())
    assert (res.path, res.title, res.frontmatter, res.frontmatter_error) == ("ten.md", "ten", {}, None)


def test_start_past_the_end_reports_the_range_it_actually_returned(svc) -> None:
    res = get(svc, "ten.md", from_line=50, lines=5)
    lines = TEN.split("\n")
    assert res.to_line <= res.total_lines == 10
    assert res.content == "\n".join(lines[res.from_line - 1 : res.to_line])


def test_line_numbers_count_only_newlines_like_an_editor(svc, corpus: Path) -> None:
    (corpus / "odd.md").write_text("a\x0cb\u2028c\nsecond\nthird", encoding="utf-8")  # no final newline
    res = get(svc, "odd.md", from_line=2)
    assert (res.total_lines, res.from_line, res.to_line, res.content) == (3, 2, 3, "second\nthird")


def test_crlf_file_lines_frontmatter_and_hash(svc, corpus: Path) -> None:
    raw = b"---\r\ntitle: Windows note\r\ntags: [a, b]\r\n---\r\n# Heading\r\nfirst line\r\nsecond line\r\n"
    (corpus / "crlf.md").write_bytes(raw)
    res = get(svc, "crlf.md", from_line=6, lines=2)
    assert (res.total_lines, res.from_line, res.to_line) == (7, 6, 7)
    assert res.content == "first line\nsecond line"  # no stray \r
    assert res.frontmatter == {"title": "Windows note", "tags": ["a", "b"]}
    assert res.title == "Windows note"
    assert res.hash == sha(raw)  # the hash is of the bytes on disk, CRs included


def test_utf8_bom_and_utf16_files_are_read(svc, corpus: Path) -> None:
    (corpus / "bom.md").write_bytes("\ufeff# Titre\ncafé\n".encode())
    (corpus / "u16.md").write_bytes("# Sixteen\nwide\n".encode("utf-16"))
    assert get(svc, "bom.md").content == "# Titre\ncafé"
    res = get(svc, "u16.md")
    assert (res.title, res.content, res.hash) == ("Sixteen", "# Sixteen\nwide", sha((corpus / "u16.md").read_bytes()))


def test_path_is_normalised(svc, corpus: Path) -> None:
    (corpus / "sub").mkdir()
    (corpus / "sub" / "n.md").write_text("# N\n")
    for spelling in ("./sub/n.md", "sub//n.md", "sub\\n.md", "sub/./n.md"):
        assert get(svc, spelling).path == "sub/n.md", spelling


def test_symlink_to_a_note_inside_the_corpus_is_followed(svc, corpus: Path) -> None:
    os.symlink(corpus / "ten.md", corpus / "alias.md")
    res = get(svc, "alias.md", lines=1)
    assert (res.path, res.content, res.hash) == ("alias.md", "line 1", sha(TEN.encode()))


# -- frontmatter ---------------------------------------------------------------------------------
FRONTMATTER = """---
title: Typed values
date: 2024-01-02
when: 2024-01-02 10:11:12
at: 10:11:12
count: 3
ratio: 0.5
flag: yes
nothing: ~
nan: .nan
tags: [x, "#y"]
nested: {a: [1, {b: 2024-05-06}]}
set: !!set {p, q}
blob: !!binary aGVsbG8=
1: numeric key
---
# Body
"""


def test_frontmatter_values_are_json_safe(svc, corpus: Path) -> None:
    (corpus / "typed.md").write_text(FRONTMATTER)
    res = get(svc, "typed.md")
    fm = res.frontmatter
    assert fm["date"] == "2024-01-02" and fm["when"] == "2024-01-02T10:11:12"
    assert fm["at"] == 36672  # YAML 1.1 reads 10:11:12 as a base-60 integer
    assert (fm["count"], fm["ratio"], fm["flag"], fm["nothing"], fm["nan"]) == (3, 0.5, True, None, None)
    assert fm["tags"] == ["x", "#y"]
    assert fm["nested"] == {"a": [1, {"b": "2024-05-06"}]}
    assert sorted(fm["set"]) == ["p", "q"]
    assert fm["blob"] == "hello"
    assert fm["1"] == "numeric key"
    json.dumps(fm, allow_nan=False)  # strict JSON
    assert res.title == "Typed values" and res.frontmatter_error is None


def test_infinite_frontmatter_values_are_json_safe(svc, corpus: Path) -> None:
    (corpus / "inf.md").write_text("---\nbig: .inf\nsmall: -.inf\n---\nbody\n")
    json.dumps(get(svc, "inf.md").frontmatter, allow_nan=False)


def test_block_scalar_at_the_end_of_frontmatter_keeps_its_newline(svc, corpus: Path) -> None:
    (corpus / "block.md").write_text("---\ntitle: T\nsummary: |\n  first\n  second\n---\nbody\n")
    assert get(svc, "block.md").frontmatter["summary"] == "first\nsecond\n"


def test_broken_yaml_is_returned_whole_with_the_error(svc, corpus: Path, tmp_path: Path) -> None:
    raw = b"---\ntitle: [unclosed\ntags: x\n---\n# Still a note\nbody text\n"
    (corpus / "broken.md").write_bytes(raw)
    res = get(svc, "broken.md")
    assert res.frontmatter == {}
    assert res.frontmatter_error is not None
    assert res.frontmatter_error.startswith("broken YAML frontmatter: while parsing a flow sequence")
    assert res.content == raw.decode().rstrip("\n")  # every line, the --- fences included
    assert (res.total_lines, res.title, res.hash) == (6, "Still a note", sha(raw))
    assert (corpus / "broken.md").read_bytes() == raw


@pytest.mark.parametrize(
    ("block", "error"),
    [
        ("- a\n- b", "frontmatter is a list, not a mapping"),
        ("just a string", "frontmatter is a str, not a mapping"),
        ("? [a, b]\n: c", "broken YAML frontmatter: while constructing a mapping"),
        ("x: !custom 1", "broken YAML frontmatter: could not determine a constructor for the tag '!custom'"),
    ],
)
def test_frontmatter_that_is_not_a_plain_mapping_is_reported(svc, corpus: Path, block: str, error: str) -> None:
    (corpus / "odd.md").write_text(f"---\n{block}\n---\n# Odd\n")
    res = get(svc, "odd.md")
    assert res.frontmatter == {}
    assert res.frontmatter_error is not None and res.frontmatter_error.startswith(error)
    assert res.title == "Odd"


def test_unclosed_frontmatter_fence_is_plain_text(svc, corpus: Path) -> None:
    (corpus / "open.md").write_text("---\ntitle: never closed\n# Heading\n")
    res = get(svc, "open.md")
    assert (res.frontmatter, res.frontmatter_error, res.title) == ({}, None, "Heading")


# -- hostile paths -------------------------------------------------------------------------------
@pytest.fixture
def hostile(corpus: Path, tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\nnot yours\n")
    os.symlink(outside / "secret.md", corpus / "link-out.md")
    os.symlink(outside, corpus / "dir-out")
    os.symlink(corpus / "loop-b.md", corpus / "loop-a.md")
    os.symlink(corpus / "loop-a.md", corpus / "loop-b.md")
    os.symlink(corpus / "nowhere.md", corpus / "dangling.md")
    (corpus / "folder").mkdir()
    return corpus


@pytest.mark.parametrize(
    ("path", "error", "code", "message"),
    [
        ("../outside/secret.md", PathOutsideCorpus, "path_outside_corpus", "path escapes the corpus"),
        ("folder/../../outside/secret.md", PathOutsideCorpus, "path_outside_corpus", "path escapes the corpus"),
        ("..\\outside\\secret.md", PathOutsideCorpus, "path_outside_corpus", "path escapes the corpus"),
        ("/etc/passwd", PathOutsideCorpus, "path_outside_corpus", "path must be relative to the corpus"),
        ("~/secret.md", PathOutsideCorpus, "path_outside_corpus", "path must be relative to the corpus"),
        ("C:/secret.md", PathOutsideCorpus, "path_outside_corpus", "path must be relative to the corpus"),
        ("link-out.md", PathOutsideCorpus, "path_outside_corpus", "path leads outside the corpus through a symlink"),
        (
            "dir-out/secret.md",
            PathOutsideCorpus,
            "path_outside_corpus",
            "path leads outside the corpus through a symlink",
        ),
        ("loop-a.md", InvalidInput, "validation_error", "symlink loop at loop-a.md"),
        ("folder", InvalidInput, "validation_error", "path is a folder, not a file: folder"),
        (".", InvalidInput, "validation_error", "path names the corpus root, not a file"),
        ("ten.md\x00.txt", InvalidInput, "validation_error", "path contains a NUL byte"),
        ("   ", InvalidInput, "validation_error", "path is empty"),
        ("missing.md", NotFound, "not_found", "no such file in the corpus: missing.md"),
        ("dangling.md", NotFound, "not_found", "no such file in the corpus: dangling.md"),
    ],
)
def test_hostile_paths_raise_the_exact_error(
    svc, hostile: Path, path: str, error: type, code: str, message: str
) -> None:
    with pytest.raises(error) as info:
        get(svc, path)
    assert type(info.value) is error
    assert info.value.code == code
    assert message in info.value.message


@pytest.mark.parametrize("path", [".git/config", ".obsidian/workspace.json", ".env"])
def test_get_refuses_files_the_index_ignores(svc, corpus: Path, path: str) -> None:
    (corpus / path).parent.mkdir(parents=True, exist_ok=True)
    (corpus / path).write_text('[remote "origin"]\n\turl = https://user:s3cret@example.com/x.git\n')
    with pytest.raises(DoryError):
        get(svc, path)


def test_absolute_path_into_the_corpus_is_still_refused(svc, corpus: Path) -> None:
    with pytest.raises(PathOutsideCorpus):
        get(svc, str(corpus / "ten.md"))


# -- unreadable files ----------------------------------------------------------------------------
def test_50_mb_file_is_too_large_and_left_untouched(svc, corpus: Path) -> None:
    big = corpus / "huge.md"
    block = ("# Huge\n" + "all work and no play makes a very long note " * 40 + "\n").encode()
    block = (block * (1024 * 1024 // len(block) + 1))[: 1024 * 1024]
    with big.open("wb") as handle:
        for _ in range(50):
            handle.write(block)
    before = big.stat()
    digest = hashlib.sha256(big.read_bytes()).hexdigest()
    with pytest.raises(UnreadableFile) as info:
        get(svc, "huge.md")
    assert info.value.code == "unreadable_file" and info.value.exit_code == 4
    assert info.value.details == {"path": "huge.md", "reason": "too_large"}
    assert info.value.message == "huge.md: 52428800 bytes is over the 2000000-byte cap"
    after = big.stat()
    assert after.st_size == before.st_size == 50 * 1024 * 1024
    assert after.st_mtime_ns == before.st_mtime_ns
    assert hashlib.sha256(big.read_bytes()).hexdigest() == digest


def test_size_cap_follows_the_setting(corpus: Path) -> None:
    (corpus / "mid.md").write_text("x" * 3000)
    service = DoryService(load_settings(corpus, {"index.max_file_bytes": 10_000}, env={}))
    try:
        assert service.get(GetRequest(path="mid.md")).total_lines == 1
    finally:
        service.close()


@pytest.mark.parametrize(
    ("data", "reason", "message"),
    [
        ("# Caf\xe9 au lait\n".encode("latin-1"), "not_utf8", "odd.md: not valid UTF-8: byte 0xe9 at offset 5"),
        (b"# Binary\x00\x01\x02", "nul_bytes", "odd.md: contains NUL bytes at offset 8 (binary file?)"),
        (b"", "empty", "odd.md: empty file"),
        (b"  \n\n\t\n", "empty", "odd.md: empty file"),
    ],
)
def test_unreadable_file_is_reported_with_its_reason(svc, corpus: Path, data: bytes, reason: str, message: str) -> None:
    (corpus / "odd.md").write_bytes(data)
    with pytest.raises(UnreadableFile) as info:
        get(svc, "odd.md")
    assert info.value.details == {"path": "odd.md", "reason": reason}
    assert info.value.message == message
    assert (corpus / "odd.md").read_bytes() == data
