"""Write paths: where an exact write may put a note (dory.memory.write_paths)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dory.corpus.paths import IgnoreRules
from dory.errors import (
    DoryError,
    InvalidInput,
    NameTooLong,
    PathNotAllowed,
    PathNotWritable,
    PathOutsideCorpus,
)
from dory.memory.write_paths import MAX_NOTE_NAME_BYTES, check_write_path

RULES = IgnoreRules(["private/*", "*.draft.md"])


def snapshot(base: Path) -> dict[str, tuple[str, str]]:
    """Everything under `base`: kind plus link target or file content, without following links."""
    seen: dict[str, tuple[str, str]] = {}
    for folder, dirs, files in os.walk(base):
        for name in dirs + files:
            path = Path(folder) / name
            key = str(path.relative_to(base))
            if path.is_symlink():
                seen[key] = ("link", os.readlink(path))
            elif path.is_dir():
                seen[key] = ("dir", "")
            elif path.is_file():
                seen[key] = ("file", path.read_text())
            else:
                seen[key] = ("other", "")
    return seen


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    for folder in ("notes", "wiki", "sources/semantic/2026/01/01", ".dory", ".git", "private"):
        (root / folder).mkdir(parents=True)
    (root / "notes" / "existing.md").write_text("# hi\n")
    (root / "wiki" / "page.md").write_text("# generated\n")
    (tmp_path / "outside").mkdir()
    return root


def refused(root: Path, user_path: str, cls: type[DoryError], *, allow_evidence: bool = False) -> DoryError:
    before = snapshot(root.parent)
    with pytest.raises(DoryError) as info:
        check_write_path(root, user_path, RULES, allow_evidence=allow_evidence)
    assert type(info.value) is cls, (user_path, info.value)
    assert info.value.code == cls.code
    assert snapshot(root.parent) == before
    return info.value


def accepted(root: Path, user_path: str, *, allow_evidence: bool = False) -> tuple[str, Path]:
    before = snapshot(root.parent)
    result = check_write_path(root, user_path, RULES, allow_evidence=allow_evidence)
    assert snapshot(root.parent) == before
    return result


@pytest.mark.parametrize(
    "bad",
    [
        "../x.md",
        "a/../../x.md",
        "/etc/x.md",
        "C:\\x.md",
        "C:x.md",
        "~/x.md",
        "a\\..\\..\\x.md",
        "notes/../../outside/x.md",
        "\\\\server\\share\\x.md",
    ],
)
def test_paths_leaving_the_corpus_are_refused(corpus: Path, bad: str) -> None:
    refused(corpus, bad, PathOutsideCorpus)


@pytest.mark.parametrize("bad", ["a\x00.md", "notes/x.md\x00.txt", "", "   ", ".", "./"])
def test_nul_and_empty_paths_are_validation_errors(corpus: Path, bad: str) -> None:
    refused(corpus, bad, InvalidInput)


@pytest.mark.parametrize(
    "bad",
    [
        "note.md.txt",
        "note.md ",
        "note.md.",
        "note.ｍd",
        "note.md\u200b",
        ".md",
        "note.markdown",
        "note",
        "note.MD",
        "notes/Note.Md",
        "..md",
        "notes/",
        " note.md",
        "notes /x.md",
        "notes./x.md",
        "note\u00a0x.md",
        "no\u202ete.md",
        "n\u200dote.md",
        "note\u200e.md",
        "note\x07.md",
        "note\x1b.md",
        "note\x85.md",
        "note\U000e0041.md",
        "note\ufe0f\ufe0f.md",
        "note\u3164.md",
        "note\u2028x.md",
    ],
)
def test_lookalike_and_non_markdown_names_are_not_allowed(corpus: Path, bad: str) -> None:
    refused(corpus, bad, PathNotAllowed)


def test_unsafe_path_character_is_named_in_the_error(corpus: Path) -> None:
    error = refused(corpus, "notes/a\u200bb.md", PathNotAllowed)
    assert "U+200B" in error.message
    assert error.details["codepoint"] == "U+200B"
    assert "\\u200b" in error.details["path"]  # shown escaped, so the report is not itself deceptive


@pytest.mark.parametrize(
    "bad",
    [
        "x.md~",
        ".#x.md",
        "x.swp",
        "x.md.swp",
        "notes/.x.md",
        ".hidden/x.md",
        ".git/x.md",
        "node_modules/x.md",
        "a/__pycache__/x.md",
        ".obsidian/x.md",
        "private/x.md",
        "notes/x.draft.md",
        "x (conflicted copy 2024).md",
        "n.sync-conflict-20240101.md",
    ],
)
def test_hidden_ignored_and_temporary_names_are_not_allowed(corpus: Path, bad: str) -> None:
    refused(corpus, bad, PathNotAllowed)


@pytest.mark.parametrize(
    "bad",
    [
        ".dory/index.md",
        ".DORY/x.md",
        ".Dory/sub/x.md",
        "notes/.dory/x.md",
        "wiki/x.md",
        "WIKI/x.md",
        "wiki/sub/page.md",
        "wiki/page.md",
        "sources/semantic/2026/01/01/x.md",
        "Sources/Semantic/x.md",
        "logs/writes/2026-01-01.md",
        "Logs/Writes/x.md",
    ],
)
def test_protected_areas_are_not_writable(corpus: Path, bad: str) -> None:
    refused(corpus, bad, PathNotWritable)


def test_allow_evidence_opens_only_sources_semantic(corpus: Path) -> None:
    rel, target = accepted(corpus, "sources/semantic/2026/01/01/x.md", allow_evidence=True)
    assert rel == "sources/semantic/2026/01/01/x.md"
    assert target == corpus.resolve() / rel
    refused(corpus, ".dory/x.md", PathNotWritable, allow_evidence=True)
    refused(corpus, "wiki/x.md", PathNotWritable, allow_evidence=True)


@pytest.mark.parametrize(
    ("given", "rel"),
    [
        ("notes/new.md", "notes/new.md"),
        ("./notes//new.md", "notes/new.md"),
        ("notes\\new.md", "notes/new.md"),
        ("wiki.md", "wiki.md"),
        ("sources/x.md", "sources/x.md"),
        ("sources/semantic.md", "sources/semantic.md"),
        ("brand/new/deep/folder/x.md", "brand/new/deep/folder/x.md"),
        ("notes/existing.md", "notes/existing.md"),
        ("notes/café 日本.md", "notes/café 日本.md"),
        ("notes/v1.2 plan.md", "notes/v1.2 plan.md"),
    ],
)
def test_ordinary_paths_are_accepted_without_creating_anything(corpus: Path, given: str, rel: str) -> None:
    got_rel, target = accepted(corpus, given)
    assert got_rel == rel
    assert target == corpus.resolve() / rel
    assert target.is_absolute()


def test_folder_symlink_leaving_the_corpus_is_refused(corpus: Path) -> None:
    os.symlink(corpus.parent / "outside", corpus / "out")
    error = refused(corpus, "out/x.md", PathOutsideCorpus)
    assert "symlink" in error.message
    refused(corpus, "out/sub/x.md", PathOutsideCorpus)


def test_folder_symlink_to_system_tmp_is_refused(corpus: Path) -> None:
    os.symlink("/tmp", corpus / "tmp")
    refused(corpus, "tmp/x.md", PathOutsideCorpus)


def test_dangling_folder_symlinks(corpus: Path) -> None:
    os.symlink(corpus.parent / "outside" / "missing", corpus / "gone_out")
    os.symlink(corpus / "missing", corpus / "gone_in")
    refused(corpus, "gone_out/x.md", PathOutsideCorpus)
    error = refused(corpus, "gone_in/x.md", InvalidInput)
    assert "broken symlink" in error.message


def test_symlink_loop_is_a_validation_error(corpus: Path) -> None:
    os.symlink(corpus / "loop_b", corpus / "loop_a")
    os.symlink(corpus / "loop_a", corpus / "loop_b")
    error = refused(corpus, "loop_a/x.md", InvalidInput)
    assert "symlink loop" in error.message


@pytest.mark.parametrize("points_to", ["notes/existing.md", "../outside/secret.md", "notes/missing.md"])
def test_symlinked_target_file_is_not_allowed(corpus: Path, points_to: str) -> None:
    (corpus.parent / "outside" / "secret.md").write_text("secret")
    os.symlink(points_to, corpus / "notes" / "link.md")
    error = refused(corpus, "notes/link.md", PathNotAllowed)
    assert "is a symlink; Dory writes only regular files" in error.message


def test_folder_symlink_inside_the_corpus_is_allowed(corpus: Path) -> None:
    os.symlink("notes", corpus / "alias")
    rel, target = accepted(corpus, "alias/new.md")
    assert rel == "alias/new.md"
    assert target == corpus.resolve() / "notes" / "new.md"
    assert accepted(corpus, "alias/existing.md")[1] == corpus.resolve() / "notes" / "existing.md"


def test_symlinked_corpus_root_is_allowed(corpus: Path) -> None:
    link = corpus.parent / "root_link"
    os.symlink(corpus, link)
    rel, target = accepted(link, "notes/new.md")
    assert (rel, target) == ("notes/new.md", corpus.resolve() / "notes" / "new.md")


@pytest.mark.parametrize(
    ("link_to", "cls"),
    [
        ("wiki", PathNotWritable),
        (".dory", PathNotWritable),
        ("sources/semantic", PathNotWritable),
        (".git", PathNotAllowed),
        ("private", PathNotAllowed),
    ],
)
def test_folder_symlink_into_a_protected_area_is_refused(corpus: Path, link_to: str, cls: type[DoryError]) -> None:
    os.symlink(f"../{link_to}", corpus / "notes" / "sneaky")
    error = refused(corpus, "notes/sneaky/x.md", cls)
    assert "through a symlink" in error.message


def test_existing_directory_named_like_a_note_is_refused(corpus: Path) -> None:
    (corpus / "notes" / "x.md").mkdir()
    error = refused(corpus, "notes/x.md", InvalidInput)
    assert "folder" in error.message


def test_existing_file_on_the_way_is_refused(corpus: Path) -> None:
    error = refused(corpus, "notes/existing.md/x.md", InvalidInput)
    assert "is a file, not a folder" in error.message


def test_special_file_target_is_refused(corpus: Path) -> None:
    os.mkfifo(corpus / "notes" / "pipe.md")
    error = refused(corpus, "notes/pipe.md", InvalidInput)
    assert "not a regular file" in error.message


def test_a_note_name_leaves_room_for_temporary_and_tombstone_names(corpus: Path) -> None:
    """A folder may use all 255 bytes; a note's name leaves room for `.<name>.dory-old-<pid>-<hex>.tmp`
    and `<stem>.tombstone.md`, so no later step of a write can hit the file system's limit."""
    longest = MAX_NOTE_NAME_BYTES - len(".md")
    accepted(corpus, "a" * longest + ".md")
    error = refused(corpus, "a" * (longest + 1) + ".md", NameTooLong)
    assert error.code == "name_too_long"
    refused(corpus, "é" * 127 + ".md", NameTooLong)  # 257 bytes, 130 characters
    accepted(corpus, "d" * 255 + "/x.md")
    refused(corpus, "d" * 256 + "/x.md", NameTooLong)


def test_path_length_limit_is_1024_bytes(corpus: Path) -> None:
    folders = "/".join(["d" * 99] * 10)  # 999 bytes
    accepted(corpus, folders + "/" + "x" * 21 + ".md")  # exactly 1024 bytes
    error = refused(corpus, folders + "/" + "x" * 22 + ".md", NameTooLong)
    assert "1024" in error.message
