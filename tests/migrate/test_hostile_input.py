"""Hostile and broken sources: each bad thing is one problem with its exact code (or the run's one
clear error), the rest of the source is imported, nothing outside the corpus is written, and no
file the corpus already had changes.

Every test runs under `guard`: the folder holding the corpus and the source (links, FIFOs and all)
is compared before and after, byte for byte, and so is every file the corpus had before the run.
Size limits are made small by patching the module constants, so no test writes gigabytes.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import struct
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.migration import Migrate, tree_hashes

from dory.errors import InvalidInput, NotFound, UsageError
from dory.migrate import formats, source
from dory.migrate.formats import generic
from dory.migrate.model import Item, Output, ReadContext, SourceTreeLike, Yielded, digest_of
from dory.models import MigrateResponse
from dory.service import DoryService

OWN = {"knowledge/mine.md": b"# Mine\n\nthe corpus's own note\n", "notes/todo.md": b"- [ ] nothing\n"}


def state_outside(base: Path, corpus: Path) -> dict[str, str]:
    """Every entry under `base` but the corpus: a file's hash, a link's target, a folder, a FIFO."""
    found: dict[str, str] = {}
    for folder, dirs, files in os.walk(base):
        here = Path(folder)
        dirs[:] = [d for d in dirs if here / d != corpus]
        for name in dirs + files:
            path = here / name
            mode = path.lstat().st_mode
            rel = path.relative_to(base).as_posix()
            if stat.S_ISLNK(mode):
                found[rel] = "link:" + os.readlink(path)
            elif stat.S_ISDIR(mode):
                found[rel] = "folder"
            elif stat.S_ISREG(mode):
                found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                found[rel] = f"special:{stat.S_IFMT(mode)}"
    return found


class Guard:
    """Armed once the test's source is built: from then on nothing outside the corpus may change,
    nor any file the corpus had."""

    def __init__(self, base: Path, corpus: Path) -> None:
        self.base, self.corpus = base, corpus
        self.outside: dict[str, str] | None = None
        self.own: dict[str, str] = {}

    def arm(self) -> None:
        self.outside, self.own = state_outside(self.base, self.corpus), tree_hashes(self.corpus)

    def check(self) -> None:
        assert self.outside is not None, "the test never armed the guard"
        assert state_outside(self.base, self.corpus) == self.outside, "something outside the corpus changed"
        after = tree_hashes(self.corpus)
        assert {rel: after.get(rel) for rel in self.own} == self.own, "a file the corpus had changed"


@pytest.fixture
def guard(tmp_path: Path, corpus: Path) -> Iterator[Guard]:
    for rel, data in OWN.items():
        (corpus / rel).parent.mkdir(parents=True, exist_ok=True)
        (corpus / rel).write_bytes(data)
    checked = Guard(tmp_path, corpus)
    yield checked
    checked.check()


def problems(res: MigrateResponse) -> set[tuple[str, str]]:
    return {(p.source, p.code) for p in res.problems}


def imported(corpus: Path, into: str) -> dict[str, bytes]:
    base = corpus / into
    return {p.relative_to(base).as_posix(): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


def make_zip(members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name, (2024, 1, 1, 0, 0, 0)), data, compress_type=method)
    return buffer.getvalue()


def patch_central(data: bytes, name: str, compressed: int | None, size: int) -> bytes:
    """The zip with `name`'s central directory entry declaring other sizes (what a forged zip says)."""
    at = data.index(b"PK\x01\x02")
    while data[at + 46 : at + 46 + len(name)] != name.encode():
        at = data.index(b"PK\x01\x02", at + 4)
    if compressed is not None:
        data = data[: at + 20] + struct.pack("<I", compressed) + data[at + 24 :]
    return data[: at + 24] + struct.pack("<I", size) + data[at + 28 :]


# -- one folder with a bit of everything ----------------------------------------------------------
def hostile_folder(base: Path) -> Path:
    src = base / "src"
    src.mkdir()
    (src / "ok.md").write_bytes(b"# Fine\n\nheron\n")
    (src / "bad.json").write_bytes(b'{"bird": "heron", ')
    (src / "utf16.md").write_bytes("# Café\n\nnaïve\n".encode("utf-16"))  # with its BOM
    (src / "utf16be.txt").write_bytes(b"\xfe\xff" + "grüß\n".encode("utf-16-be"))
    (src / "utf8bom.md").write_bytes(b"\xef\xbb\xbf# BOM\n")
    (src / "cp1252.md").write_bytes("\u201cquoted\u201d \u2013 caf\xe9\n".encode("cp1252"))
    (src / "latin1.txt").write_bytes("Jürgen, Søren, élan\n".encode("latin-1"))
    (src / "binary.md").write_bytes(b"looks like text\x00but is not")
    (src / "binary.txt").write_bytes(b"\x00\x01\x02")
    (src / "model.weights").write_bytes(b"\x00" * 10)
    (src / "noextension").write_bytes(b"plain")
    os.mkfifo(src / "pipe.md")
    (base / "secret.md").write_bytes(b"outside the source\n")
    os.symlink(base / "secret.md", src / "link.md")
    (base / "elsewhere").mkdir()
    (base / "elsewhere" / "far.md").write_bytes(b"far away\n")
    os.symlink(base / "elsewhere", src / "linked-folder")
    escapes = {"../evil.md": b"evil", "/etc/evil.md": b"abs", "C:\\evil.md": b"win", "a/../../evil2.md": b"up"}
    (src / "escape.zip").write_bytes(make_zip({**escapes, "inside/good.md": b"# Good\n"}))
    link = zipfile.ZipInfo("link.md", (2024, 1, 1, 0, 0, 0))
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    with zipfile.ZipFile(src / "links.zip", "w") as archive:
        archive.writestr(link, "/etc/passwd")
        archive.writestr("fine.md", "# Fine too\n")
    whole = make_zip({f"part/{n}.md": os.urandom(3000).hex().encode() for n in range(6)})
    (src / "truncated.zip").write_bytes(whole[: len(whole) // 2])
    (src / "not-a-zip.zip").write_bytes(b"this was never a zip")
    (src / "corrupt.zip").write_bytes(
        patch_central(
            make_zip({"liar.md": b"x" * 100, "honest.md": b"# Honest\n"}, zipfile.ZIP_STORED), "liar.md", 10, 10
        )
    )
    return src


def test_a_hostile_folder_gives_one_exact_problem_each_and_the_rest_is_imported(
    tmp_path: Path, corpus: Path, migrate: Migrate, guard: Guard
) -> None:
    src = hostile_folder(tmp_path)
    guard.arm()
    res = migrate(src)
    assert problems(res) == {
        ("binary.md", "bad_encoding"),
        ("binary.txt", "bad_encoding"),
        ("model.weights", "unknown_format"),
        ("pipe.md", "not_a_file"),
        ("link.md", "symlink_skipped"),
        ("linked-folder", "symlink_skipped"),
        ("escape.zip!/../evil.md", "zip_path_escape"),
        ("escape.zip!//etc/evil.md", "zip_path_escape"),
        ("escape.zip!/C:/evil.md", "zip_path_escape"),
        ("escape.zip!/a/../../evil2.md", "zip_path_escape"),
        ("links.zip!/link.md", "symlink_skipped"),
        ("truncated.zip", "bad_zip"),
        ("not-a-zip.zip", "bad_zip"),
        ("corrupt.zip!/liar.md", "unreadable"),
    }
    files = imported(corpus, res.into)
    assert set(files) == {
        "ok.md",
        "bad.json.md",
        "utf16.md",
        "utf16be.txt.md",
        "utf8bom.md",
        "cp1252.md",
        "latin1.txt.md",
        "noextension.md",  # text without an extension is evidence
        "escape.zip/inside/good.md",
        "links.zip/fine.md",
        "corrupt.zip/honest.md",
    }
    assert files["utf16.md"] == "# Café\n\nnaïve\n".encode()
    assert files["utf8bom.md"] == b"# BOM\n"
    assert files["cp1252.md"] == "\u201cquoted\u201d \u2013 caf\xe9\n".encode()
    assert "Jürgen, Søren, élan" in files["latin1.txt.md"].decode() and "grüß" in files["utf16be.txt.md"].decode()
    assert b'{"bird": "heron", ' in files["bad.json.md"]
    notes = {n.source: n.note for n in res.notes}
    assert notes["bad.json"].startswith("not valid json, kept as text")
    assert notes["utf16.md"] == "decoded from UTF-16" and notes["cp1252.md"] == "not UTF-8: decoded as Windows-1252"
    assert "utf8bom.md" not in notes and "ok.md" not in notes
    assert not list(corpus.rglob("*evil*")) and not list(corpus.rglob("far.md"))
    report = (corpus / (res.report or "")).read_text()
    assert "`truncated.zip`: bad_zip" in report and "`bad.json`: not valid json" in report


def test_a_zip_source_that_escapes_gives_problems_and_writes_only_inside(
    tmp_path: Path, corpus: Path, migrate: Migrate, guard: Guard
) -> None:
    archive = tmp_path / "export.zip"
    archive.write_bytes(make_zip({"../../evil.md": b"evil", "/tmp/evil.md": b"abs", "notes/a.md": b"# A\n"}))
    guard.arm()
    res = migrate(archive)
    assert problems(res) == {("../../evil.md", "zip_path_escape"), ("/tmp/evil.md", "zip_path_escape")}
    assert imported(corpus, res.into) == {"notes/a.md": b"# A\n"}


def test_a_truncated_or_fake_zip_source_is_one_problem_and_nothing_is_written(
    tmp_path: Path, corpus: Path, migrate: Migrate, guard: Guard
) -> None:
    whole = make_zip({f"n{n}.md": os.urandom(2000).hex().encode() for n in range(5)})
    (tmp_path / "cut.zip").write_bytes(whole[: len(whole) // 2])
    (tmp_path / "fake.zip").write_bytes(b"PK\x03\x04 and then nothing")
    guard.arm()
    for name in ("cut.zip", "fake.zip"):
        res = migrate(tmp_path / name)
        assert problems(res) == {(name, "bad_zip")} and res.run is None and res.created == 0
    assert not (corpus / "references").exists()


# -- zip bombs -------------------------------------------------------------------------------------
def test_zip_bombs_are_refused_member_by_member_and_the_rest_is_imported(
    tmp_path: Path, corpus: Path, migrate: Migrate, guard: Guard
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "ratio.zip").write_bytes(make_zip({"zeros.txt": b"0" * (4 * 1024 * 1024), "ok.md": b"# ok\n"}))
    huge = patch_central(make_zip({"huge.md": b"small really", "ok.md": b"# ok\n"}), "huge.md", None, 2**31)
    (src / "declared.zip").write_bytes(huge)
    guard.arm()
    res = migrate(src)
    assert problems(res) == {("ratio.zip!/zeros.txt", "zip_bomb"), ("declared.zip!/huge.md", "file_too_large")}
    assert set(imported(corpus, res.into)) == {"ratio.zip/ok.md", "declared.zip/ok.md"}


def test_too_many_members_across_the_tree_is_a_zip_bomb(
    tmp_path: Path, corpus: Path, migrate: Migrate, guard: Guard, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(source, "MAX_MEMBERS", 50)
    src = tmp_path / "src"
    src.mkdir()
    (src / "a-small.zip").write_bytes(make_zip({f"n{n}.md": b"# n\n" for n in range(30)}))
    (src / "b-many.zip").write_bytes(make_zip({f"m{n}.md": b"# m\n" for n in range(30)}))
    (src / "plain.md").write_bytes(b"# plain\n")
    guard.arm()
    res = migrate(src)
    assert problems(res) == {("b-many.zip", "zip_bomb")}
    assert len(imported(corpus, res.into)) == 31


def test_a_nested_zip_bomb_is_bounded_across_every_level(
    tmp_path: Path, corpus: Path, migrate: Migrate, guard: Guard, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each inner zip is small, but together they expand past the tree's budget; and zips nested
    deeper than MAX_DEPTH are not opened (nor copied as attachments)."""
    monkeypatch.setattr(source, "MAX_TOTAL_BYTES", 5000)
    inner = [make_zip({f"x{n}/{k}.md": b"#" * 1000 for k in range(2)}) for n in range(4)]
    outer = make_zip({f"inner{n}.zip": data for n, data in enumerate(inner)}, zipfile.ZIP_STORED)
    deep = make_zip({"level4.md": b"# too deep\n"})
    for level in (3, 2, 1):
        deep = make_zip({f"level{level}.zip": deep, f"note{level}.md": b"# shallow\n"})
    src = tmp_path / "src"
    src.mkdir()
    (src / "bomb.zip").write_bytes(outer)
    (tmp_path / "deep").mkdir()
    (tmp_path / "deep" / "deep.zip").write_bytes(deep)
    guard.arm()
    res = migrate(src)
    assert {p.code for p in res.problems} == {"zip_bomb"}
    assert any(p.source.count("!/") == 2 for p in res.problems), "no member of an inner zip was refused"
    assert sum(len(data) for data in imported(corpus, res.into).values()) <= 5000
    monkeypatch.setattr(source, "MAX_TOTAL_BYTES", 10**9)
    deep_res = migrate(tmp_path / "deep", into="knowledge/deep")
    assert problems(deep_res) == {("deep.zip!/level1.zip!/level2.zip!/level3.zip", "zip_bomb")}
    assert set(imported(corpus, "knowledge/deep")) == {
        "deep.zip/note1.md",
        "deep.zip/level1.zip/note2.md",
        "deep.zip/level1.zip/level2.zip/note3.md",
    }


# -- sizes -----------------------------------------------------------------------------------------
def test_files_over_the_limits_are_problems(
    tmp_path: Path, corpus: Path, migrate: Migrate, guard: Guard, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(source, "MAX_FILE_BYTES", 1000)
    monkeypatch.setattr(generic, "MAX_EVIDENCE_BYTES", 300)
    src = tmp_path / "src"
    src.mkdir()
    (src / "big.md").write_bytes(b"#" * 1001)
    (src / "big.png").write_bytes(b"\x89PNG" + b"\x00" * 2000)
    (src / "long.txt").write_bytes(b"word " * 100)
    (src / "member.zip").write_bytes(make_zip({"big.md": os.urandom(600).hex().encode(), "ok.md": b"# ok\n"}))
    (src / "small.md").write_bytes(b"# small\n")
    guard.arm()
    res = migrate(src)
    assert problems(res) == {
        ("big.md", "file_too_large"),
        ("big.png", "file_too_large"),
        ("long.txt", "file_too_large"),
        ("member.zip!/big.md", "file_too_large"),
    }
    assert set(imported(corpus, res.into)) == {"small.md", "member.zip/ok.md"}


def test_a_path_too_long_for_the_file_system_is_a_problem_not_a_stopped_run(
    tmp_path: Path, corpus: Path, migrate: Migrate, guard: Guard
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    deep = "/".join(["d" * 100] * 40) + "/x.md"  # 4 KiB: past PATH_MAX with the corpus in front
    (src / "deep.zip").write_bytes(make_zip({deep: b"# deep\n", "ok.md": b"# ok\n"}))
    guard.arm()
    res = migrate(src)
    assert problems(res) == {(f"deep.zip!/{deep}", "path_too_long")}
    assert imported(corpus, res.into) == {"deep.zip/ok.md": b"# ok\n"}


# -- where the source is, and where it goes --------------------------------------------------------
def test_a_source_that_does_not_exist_is_not_found(tmp_path: Path, migrate: Migrate, guard: Guard) -> None:
    guard.arm()
    with pytest.raises(NotFound) as caught:
        migrate(tmp_path / "nowhere")
    assert caught.value.code == "not_found" and caught.value.exit_code == 3


def test_a_source_inside_the_corpus_is_refused(corpus: Path, migrate: Migrate, guard: Guard) -> None:
    guard.arm()
    for inside in (corpus, corpus / "knowledge", corpus / "notes" / "todo.md"):
        with pytest.raises(InvalidInput) as caught:
            migrate(inside)
        assert caught.value.code == "validation_error" and caught.value.exit_code == 4
    assert not (corpus / "references").exists()


def test_a_source_holding_the_corpus_imports_everything_but_the_corpus(
    tmp_path: Path, corpus: Path, service: DoryService, guard: Guard
) -> None:
    from dory.models import MigrateRequest

    (tmp_path / "letter.md").write_bytes(b"# A letter\n")
    guard.arm()
    res = service.migrations.migrate(MigrateRequest(source=str(tmp_path), into="knowledge/home"))
    assert ("corpus", "corpus_skipped") in problems(res)
    assert "letter.md" in imported(corpus, "knowledge/home")
    assert not any(rel.startswith("corpus/") for rel in imported(corpus, "knowledge/home"))


def test_a_fifo_given_as_the_source_is_a_problem_and_is_never_opened(
    tmp_path: Path, corpus: Path, migrate: Migrate, guard: Guard
) -> None:
    os.mkfifo(tmp_path / "pipe.json")
    guard.arm()
    res = migrate(tmp_path / "pipe.json")
    assert problems(res) == {("pipe.json", "not_a_file")} and res.created == 0


@pytest.mark.parametrize(
    "into", ["..", "../outside", "a/../../b", "/etc", "/abs/folder", "C:\\x", "a\\b", ".dory", "x/.hidden", "."]
)
def test_into_must_be_a_plain_folder_inside_the_corpus(
    tmp_path: Path, corpus: Path, migrate: Migrate, guard: Guard, into: str
) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.md").write_bytes(b"# a\n")
    guard.arm()
    with pytest.raises(UsageError) as caught:
        migrate(tmp_path / "src", into=into)
    assert caught.value.code == "usage_error" and caught.value.exit_code == 2
    assert not (corpus / "references").exists()


def test_an_unknown_format_is_a_usage_error(tmp_path: Path, migrate: Migrate, guard: Guard) -> None:
    guard.arm()
    with pytest.raises(UsageError) as caught:
        migrate(tmp_path, from_format="lotus-notes")
    assert "known formats: " in caught.value.message


def test_a_corpus_file_where_a_folder_is_needed_is_a_problem_not_a_crash(
    tmp_path: Path, corpus: Path, migrate: Migrate, guard: Guard
) -> None:
    (corpus / "knowledge/src").mkdir(parents=True)
    (corpus / "knowledge/src/sub").write_bytes(b"a file named like the source's folder\n")
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "inner.md").write_bytes(b"# inner\n")
    (src / "top.md").write_bytes(b"# top\n")
    guard.arm()
    res = migrate(src)
    assert problems(res) == {("sub/inner.md", "path_blocked")}
    assert (corpus / "knowledge/src/top.md").read_bytes() == b"# top\n"
    assert (corpus / "knowledge/src/sub").read_bytes() == b"a file named like the source's folder\n"


class EscapingReader:
    """A reader with a bug: it proposes paths outside the corpus and into its state folder."""

    name = "escaping"

    def detect(self, tree: SourceTreeLike) -> int:
        return 0

    def read(self, tree: SourceTreeLike, ctx: ReadContext) -> Iterator[Yielded]:
        paths = ["../escaped.md", "/tmp/escaped.md", ".dory/x.md", "knowledge/a/../../../x.md", "knowledge/ok.md"]
        for n, path in enumerate(paths):
            yield Item(f"k{n}", "note", f"s{n}", digest_of(path), [Output(path, b"# x\n")])


def test_a_reader_proposing_paths_outside_the_corpus_never_writes_there(
    tmp_path: Path, corpus: Path, migrate: Migrate, guard: Guard, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(formats, "READERS", [EscapingReader(), *formats.READERS])
    (tmp_path / "src").mkdir()
    guard.arm()
    res = migrate(tmp_path / "src", from_format="escaping")
    assert problems(res) == {(f"s{n}", "unsafe_path") for n in range(4)}
    assert (corpus / "knowledge/ok.md").read_bytes() == b"# x\n" and res.created == 1
    assert not (corpus / ".dory" / "x.md").exists()


def test_a_reader_that_raises_is_one_problem_and_what_it_read_before_is_kept(
    tmp_path: Path, corpus: Path, migrate: Migrate, guard: Guard, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Failing:
        name = "failing"

        def detect(self, tree: SourceTreeLike) -> int:
            return 0

        def read(self, tree: SourceTreeLike, ctx: ReadContext) -> Iterator[Yielded]:
            yield Item("first", "note", "first.md", digest_of("1"), [Output(f"{ctx.into}/first.md", b"# 1\n")])
            raise RuntimeError("the format changed under us")

    monkeypatch.setattr(formats, "READERS", [Failing(), *formats.READERS])
    (tmp_path / "src").mkdir()
    guard.arm()
    res = migrate(tmp_path / "src", from_format="failing")
    assert [(p.code, p.message) for p in res.problems] == [
        ("reader_failed", "failing reader stopped: RuntimeError: the format changed under us")
    ]
    assert imported(corpus, res.into) == {"first.md": b"# 1\n"}
