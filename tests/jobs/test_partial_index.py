"""Partial lexical passes (`apply_changes(paths=...)`): what the daemon runs for a watcher batch."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from dory.models import SearchRequest
from dory.service import DoryService


def files(svc: DoryService) -> dict[str, str]:
    return {row["path"]: row["sha256"] for row in svc.store.conn.execute("SELECT path, sha256 FROM files")}


def chunk_ids(svc: DoryService, path: str) -> list[int]:
    return [
        row[0]
        for row in svc.store.conn.execute(
            "SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.path = ? ORDER BY c.ordinal", (path,)
        )
    ]


def skipped(svc: DoryService) -> dict[str, str]:
    return {row["path"]: row["reason"] for row in svc.store.conn.execute("SELECT path, reason FROM skipped")}


def hits(svc: DoryService, query: str) -> list[str]:
    return [h.path for h in svc.search(SearchRequest(query=query, mode="bm25")).hits]


def counts(response) -> tuple[int, int, int, int, int]:
    return response.new, response.changed, response.renamed, response.deleted, response.touched


@pytest.fixture
def indexed(lexical_service):
    def build(corpus: dict[str, str | bytes]) -> DoryService:
        svc = lexical_service(corpus)
        first = svc.owner.apply_changes()
        assert first.new == sum(1 for p in corpus if p.endswith(".md") and "bad" not in p)
        return svc

    return build


def test_rename_within_scope_moves_rows(indexed) -> None:
    svc = indexed({"old/name.md": "# Name\nunique zebra text", "other.md": "other"})
    before = chunk_ids(svc, "old/name.md")
    root = svc.settings.corpus
    (root / "new").mkdir()
    os.rename(root / "old/name.md", root / "new/moved.md")
    res = svc.owner.apply_changes(paths=["old/name.md", "new/moved.md"])
    assert counts(res) == (0, 0, 1, 0, 0)
    assert res.chunks_written == 0
    assert chunk_ids(svc, "new/moved.md") == before
    assert chunk_ids(svc, "old/name.md") == []
    assert set(files(svc)) == {"new/moved.md", "other.md"}
    assert hits(svc, "zebra") == ["new/moved.md"]


def test_rename_with_the_folders_as_scope(indexed) -> None:
    svc = indexed({"a/x.md": "alpha words here"})
    before = chunk_ids(svc, "a/x.md")
    root = svc.settings.corpus
    os.rename(root / "a", root / "b")
    res = svc.owner.apply_changes(paths=["a", "b"])
    assert counts(res) == (0, 0, 1, 0, 0)
    assert chunk_ids(svc, "b/x.md") == before


def test_deleted_path_in_scope_is_deleted(indexed) -> None:
    svc = indexed({"a.md": "apples", "b.md": "bananas"})
    (svc.settings.corpus / "a.md").unlink()
    res = svc.owner.apply_changes(paths=["a.md"])
    assert counts(res) == (0, 0, 0, 1, 0)
    assert set(files(svc)) == {"b.md"}
    assert hits(svc, "apples") == []


def test_changes_outside_the_scope_are_not_touched(indexed) -> None:
    svc = indexed({"a.md": "apples", "b.md": "bananas", "c.md": "cherries"})
    before = files(svc)
    root = svc.settings.corpus
    (root / "a.md").write_text("apricots", encoding="utf-8")
    (root / "b.md").write_text("blueberries", encoding="utf-8")  # changed, but not reported
    (root / "c.md").unlink()  # deleted, but not reported
    (root / "d.md").write_text("dates", encoding="utf-8")  # new, but not reported
    res = svc.owner.apply_changes(paths=["a.md"])
    assert counts(res) == (0, 1, 0, 0, 0)
    assert res.unchanged == 0
    after = files(svc)
    assert set(after) == {"a.md", "b.md", "c.md"}
    assert after["b.md"] == before["b.md"] and after["c.md"] == before["c.md"]
    assert hits(svc, "bananas") == ["b.md"]
    assert hits(svc, "apricots") == ["a.md"]
    # the full pass afterwards repairs the rest
    full = svc.owner.apply_changes()
    assert (full.new, full.changed, full.deleted) == (1, 1, 1)


def test_unchanged_path_in_scope_is_counted_unchanged(indexed) -> None:
    svc = indexed({"a.md": "apples", "b.md": "bananas"})
    res = svc.owner.apply_changes(paths=["a.md"])
    assert counts(res) == (0, 0, 0, 0, 0)
    assert res.unchanged == 1  # only the scope is looked at


def test_folder_moved_in_is_all_new_and_removed_is_all_deleted(indexed, tmp_path: Path) -> None:
    svc = indexed(
        {"keep.md": "keep", "proj.md": "sibling file", "proj-x/a.md": "dash sibling", "proj2/a.md": "digit sibling"}
    )
    root = svc.settings.corpus
    outside = tmp_path / "outside" / "proj"
    outside.mkdir(parents=True)
    (outside / "one.md").write_text("first note", encoding="utf-8")
    (outside / "deep").mkdir()
    (outside / "deep" / "two.md").write_text("second note", encoding="utf-8")
    (outside / "deep" / "image.png").write_bytes(b"\x89PNG")
    shutil.move(str(outside), str(root / "proj"))
    res = svc.owner.apply_changes(paths=["proj"])
    assert counts(res) == (2, 0, 0, 0, 0)
    assert {"proj/one.md", "proj/deep/two.md"} <= set(files(svc))
    shutil.rmtree(root / "proj")
    res = svc.owner.apply_changes(paths=["proj"])
    assert counts(res) == (0, 0, 0, 2, 0)
    # siblings whose names merely start with the folder's name are outside the scope
    assert set(files(svc)) == {"keep.md", "proj.md", "proj-x/a.md", "proj2/a.md"}


def test_subfolder_scope_covers_only_that_subfolder(indexed) -> None:
    svc = indexed({"p/a.md": "one", "p/sub/b.md": "two", "p/sub/c/d.md": "three"})
    root = svc.settings.corpus
    shutil.rmtree(root / "p")
    res = svc.owner.apply_changes(paths=["p/sub"])
    assert counts(res) == (0, 0, 0, 2, 0)
    assert set(files(svc)) == {"p/a.md"}


@pytest.mark.parametrize(
    "name",
    [
        ".note.md.swp",
        "x.sync-conflict-1.md",
        ".obsidian/x.md",
        ".hidden.md",
        "notes/.hidden/y.md",
        "~$lock.md",
        "doc (conflicted copy 2024).md",
        ".git/notes.md",
        "node_modules/pkg/readme.md",
        "note.md~",
        "notes.txt",
    ],
)
def test_temp_and_ignored_names_are_never_indexed(indexed, name: str) -> None:
    svc = indexed({"a.md": "apples"})
    path = svc.settings.corpus / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("secret temporary words", encoding="utf-8")
    res = svc.owner.apply_changes(paths=[name])
    assert counts(res) == (0, 0, 0, 0, 0)
    assert res.skipped == []
    assert set(files(svc)) == {"a.md"}
    assert hits(svc, "temporary") == []


def test_ignored_folder_as_scope_is_not_walked(indexed) -> None:
    svc = indexed({"a.md": "apples"})
    (svc.settings.corpus / ".obsidian" / "plugins").mkdir(parents=True)
    (svc.settings.corpus / ".obsidian" / "plugins" / "p.md").write_text("plugin", encoding="utf-8")
    res = svc.owner.apply_changes(paths=[".obsidian", ".obsidian/plugins"])
    assert counts(res) == (0, 0, 0, 0, 0)
    assert set(files(svc)) == {"a.md"}


def test_user_ignore_globs_apply_to_partial_scans(lexical_service) -> None:
    svc = lexical_service({"a.md": "apples"})
    svc.settings.index.ignore = ["drafts/*"]
    svc.owner.apply_changes()
    (svc.settings.corpus / "drafts").mkdir()
    (svc.settings.corpus / "drafts" / "x.md").write_text("draft text", encoding="utf-8")
    assert counts(svc.owner.apply_changes(paths=["drafts/x.md", "drafts"])) == (0, 0, 0, 0, 0)
    assert set(files(svc)) == {"a.md"}


def test_temp_file_swap_lands_as_a_change(indexed) -> None:
    """vim-style save: write .swp, move the old note away, put the new one in place."""
    svc = indexed({"n/note.md": "old words"})
    root = svc.settings.corpus
    (root / "n" / ".note.md.swp").write_text("swap", encoding="utf-8")
    (root / "n" / "note.md").write_text("new words", encoding="utf-8")
    res = svc.owner.apply_changes(paths=["n/.note.md.swp", "n/note.md", "n/note.md~"])
    assert counts(res) == (0, 1, 0, 0, 0)
    assert set(files(svc)) == {"n/note.md"}


def test_empty_partial_scan_deletes_the_paths(indexed) -> None:
    svc = indexed({"a.md": "apples", "b.md": "bananas"})
    root = svc.settings.corpus
    (root / "a.md").unlink()
    (root / "b.md").unlink()
    res = svc.owner.apply_changes(paths=["a.md", "b.md"])
    assert counts(res) == (0, 0, 0, 2, 0)
    assert files(svc) == {}
    assert not any("refusing" in w for w in res.warnings)


def test_full_scan_still_refuses_to_empty_the_index(indexed) -> None:
    svc = indexed({"a.md": "apples", "b.md": "bananas"})
    root = svc.settings.corpus
    (root / "a.md").unlink()
    (root / "b.md").unlink()
    res = svc.owner.apply_changes()
    assert res.deleted == 0
    assert set(files(svc)) == {"a.md", "b.md"}


def test_skipped_records_outside_the_scope_survive(indexed) -> None:
    svc = indexed({"a.md": "apples", "bad.md": b"binary\x00data", "sub/bad2.md": b"more\x00binary"})
    assert skipped(svc) == {"bad.md": "nul_bytes", "sub/bad2.md": "nul_bytes"}
    (svc.settings.corpus / "a.md").write_text("apricots", encoding="utf-8")
    res = svc.owner.apply_changes(paths=["a.md"])
    assert counts(res) == (0, 1, 0, 0, 0)
    assert skipped(svc) == {"bad.md": "nul_bytes", "sub/bad2.md": "nul_bytes"}


def test_skipped_records_inside_the_scope_are_updated(indexed) -> None:
    svc = indexed({"a.md": "apples", "bad.md": b"binary\x00data", "sub/bad2.md": b"more\x00binary"})
    root = svc.settings.corpus
    (root / "bad.md").write_text("fixed now", encoding="utf-8")  # repaired: indexed, skip forgotten
    (root / "sub" / "bad2.md").unlink()  # gone: skip forgotten
    res = svc.owner.apply_changes(paths=["bad.md", "sub"])
    assert counts(res) == (1, 0, 0, 0, 0)
    assert skipped(svc) == {}
    assert set(files(svc)) == {"a.md", "bad.md"}


def test_new_bad_file_in_scope_is_recorded_as_skipped(indexed) -> None:
    svc = indexed({"a.md": "apples"})
    (svc.settings.corpus / "broken.md").write_bytes(b"\x00\x01")
    res = svc.owner.apply_changes(paths=["broken.md"])
    assert [(s.path, s.reason) for s in res.skipped] == [("broken.md", "nul_bytes")]
    assert skipped(svc) == {"broken.md": "nul_bytes"}


def test_partial_pass_does_not_mark_a_full_reindex(indexed) -> None:
    svc = indexed({"a.md": "apples"})
    last = svc.store.meta("last_reindex")
    (svc.settings.corpus / "b.md").write_text("bananas", encoding="utf-8")
    svc.owner.apply_changes(paths=["b.md"])
    assert svc.store.meta("last_reindex") == last
    assert svc.store.meta("last_change") is not None
