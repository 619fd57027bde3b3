import os
from pathlib import Path

import pytest

from dory.corpus.paths import IgnoreRules, normalize_rel, resolve_inside
from dory.errors import InvalidInput, NotFound, PathOutsideCorpus


@pytest.mark.parametrize(
    "bad", ["../etc/passwd", "a/../../x.md", "/etc/passwd", "~/notes.md", "C:/x.md", "..\\..\\x.md"]
)
def test_traversal_is_refused(bad: str) -> None:
    with pytest.raises(PathOutsideCorpus):
        normalize_rel(bad)


def test_nul_and_empty_paths() -> None:
    with pytest.raises(InvalidInput, match="NUL byte"):
        normalize_rel("a\x00.md")
    with pytest.raises(InvalidInput, match="empty"):
        normalize_rel("  ")


def test_symlink_leaving_the_corpus_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "c"
    root.mkdir()
    (tmp_path / "secret.md").write_text("secret")
    os.symlink(tmp_path / "secret.md", root / "link.md")
    with pytest.raises(PathOutsideCorpus, match="symlink"):
        resolve_inside(root, "link.md")


def test_symlink_loop_and_missing_file(tmp_path: Path) -> None:
    os.symlink(tmp_path / "b.md", tmp_path / "a.md")
    os.symlink(tmp_path / "a.md", tmp_path / "b.md")
    with pytest.raises(InvalidInput, match="symlink loop"):
        resolve_inside(tmp_path, "a.md")
    with pytest.raises(NotFound):
        resolve_inside(tmp_path, "nope.md")


def test_ignore_rules() -> None:
    rules = IgnoreRules(["private/*", "*.draft.md"])
    assert rules.skips_dir(".obsidian", ".obsidian")
    assert rules.skips_dir("node_modules", "x/node_modules")
    assert rules.skips_dir("private", "private")
    for name in [".note.md.swp", "note.md~", "x.md___jb_tmp___", "sedAb12Cd", "n.sync-conflict-2024.md", ".hidden.md"]:
        assert rules.skips_file(name, name), name
    assert rules.skips_file("a.draft.md", "k/a.draft.md")
    assert not rules.skips_file("note.md", "k/note.md")


def test_a_note_a_write_has_set_aside_for_a_moment_still_resolves(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / f".plan.md.dory-old-{os.getpid()}-0123abcd.tmp").write_text("old\n")
    rel, resolved = resolve_inside(tmp_path, "notes/plan.md")
    assert (rel, resolved) == ("notes/plan.md", tmp_path.resolve() / "notes" / "plan.md")
    with pytest.raises(NotFound):  # another note's set-aside version is not this one
        resolve_inside(tmp_path, "notes/other.md")
    with pytest.raises(NotFound):  # nor is a folder that does not exist
        resolve_inside(tmp_path, "missing/plan.md")
