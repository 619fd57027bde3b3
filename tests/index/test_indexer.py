"""Reindex against real files: incremental plans, renames, deletes, skips, and never rewriting a note."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from dory.models import ReindexRequest, SearchRequest


def digest_tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".dory" not in p.parts
    }


def paths(svc, query: str, **kw) -> list[str]:
    return [h.path for h in svc.search(SearchRequest(query=query, mode="bm25", **kw)).hits]


def test_incremental_reindex_reads_only_changed_files(lexical_service) -> None:
    svc = lexical_service({"a.md": "# Alpha\napples", "b.md": "# Beta\nbananas"})
    first = svc.reindex(ReindexRequest())
    assert (first.new, first.changed, first.unchanged) == (2, 0, 0)
    again = svc.reindex(ReindexRequest())
    assert (again.new, again.changed, again.unchanged) == (0, 0, 2)
    (svc.settings.corpus / "a.md").write_text("# Alpha\ncherries")
    third = svc.reindex(ReindexRequest())
    assert (third.changed, third.unchanged) == (1, 1)
    assert paths(svc, "cherries") == ["a.md"]
    assert paths(svc, "apples") == []


def test_touch_without_change_is_not_rechunked(lexical_service) -> None:
    svc = lexical_service({"a.md": "# Alpha\napples"})
    svc.reindex(ReindexRequest())
    os.utime(svc.settings.corpus / "a.md", ns=(1, 1))
    res = svc.reindex(ReindexRequest())
    assert (res.touched, res.changed, res.chunks_written) == (1, 0, 0)


def test_rename_moves_rows_without_rechunking(lexical_service) -> None:
    svc = lexical_service({"old/name.md": "---\ntitle: Keep\n---\nunique zebra text"})
    svc.reindex(ReindexRequest())
    before = svc.store.conn.execute("SELECT id FROM chunks").fetchall()
    (svc.settings.corpus / "new").mkdir()
    os.rename(svc.settings.corpus / "old/name.md", svc.settings.corpus / "new/moved.md")
    res = svc.reindex(ReindexRequest())
    assert (res.renamed, res.new, res.deleted, res.chunks_written) == (1, 0, 0, 0)
    assert svc.store.conn.execute("SELECT id FROM chunks").fetchall() == before
    assert paths(svc, "zebra") == ["new/moved.md"]
    assert paths(svc, "moved") == ["new/moved.md"]  # the FTS path column followed the rename


def test_delete_removes_and_plan_changes_nothing(lexical_service) -> None:
    svc = lexical_service({"a.md": "apples", "b.md": "bananas"})
    svc.reindex(ReindexRequest())
    (svc.settings.corpus / "b.md").unlink()
    (svc.settings.corpus / "c.md").write_text("cherries")
    plan = svc.reindex(ReindexRequest(plan_only=True))
    assert plan.planned_paths == {"new": ["c.md"], "changed": [], "deleted": ["b.md"], "renamed": [], "touched": []}
    assert paths(svc, "bananas") == ["b.md"]  # the plan did not touch the index
    svc.reindex(ReindexRequest())
    assert paths(svc, "bananas") == [] and paths(svc, "cherries") == ["c.md"]


def test_empty_scan_never_mass_deletes(lexical_service) -> None:
    svc = lexical_service({"a.md": "apples", "b.md": "bananas"})
    svc.reindex(ReindexRequest())
    for name in ("a.md", "b.md"):
        (svc.settings.corpus / name).unlink()
    res = svc.reindex(ReindexRequest())
    assert res.deleted == 0
    assert res.warnings == ["the corpus scan found no notes at all; refusing to empty the index"]
    assert paths(svc, "apples") == ["a.md"]


def test_hostile_files_are_reported_and_never_modified(lexical_service) -> None:
    files: dict[str, str | bytes] = {
        "good.md": "# Good\nfine text",
        "broken.md": "---\ntitle: [oops\n---\n# Broken YAML\nstill searchable walrus\n",
        "nul.md": b"# Binary\x00\x01",
        "latin.md": "# Caf\xe9\n".encode("latin-1"),
        "empty.md": "",
        "big.md": "# Big\n" + "x" * 3_000_000,
    }
    svc = lexical_service(files)
    (svc.settings.corpus / "loop.md").symlink_to(svc.settings.corpus / "loop.md")
    before = digest_tree(svc.settings.corpus)
    res = svc.reindex(ReindexRequest())
    reasons = {s.path: s.reason for s in res.skipped}
    assert reasons == {
        "nul.md": "nul_bytes",
        "latin.md": "not_utf8",
        "empty.md": "empty",
        "big.md": "too_large",
        "loop.md": "symlink_loop",
    }
    assert paths(svc, "walrus") == ["broken.md"]
    status = svc.status()
    assert {s.path for s in status.skipped} == set(reasons)
    assert [s.path for s in status.broken_frontmatter] == ["broken.md"]
    assert digest_tree(svc.settings.corpus) == before


def test_file_that_becomes_unreadable_leaves_the_index(lexical_service) -> None:
    svc = lexical_service({"a.md": "apples here"})
    svc.reindex(ReindexRequest())
    (svc.settings.corpus / "a.md").write_bytes(b"apples\x00")
    res = svc.reindex(ReindexRequest())
    assert res.deleted == 1 and [s.reason for s in res.skipped] == ["nul_bytes"]
    assert paths(svc, "apples") == []


def test_empty_corpus_indexes_nothing_without_error(lexical_service) -> None:
    svc = lexical_service({})
    res = svc.reindex(ReindexRequest())
    assert (res.new, res.deleted) == (0, 0)
    assert svc.search(SearchRequest(query="anything", mode="bm25")).hits == []
    assert svc.status().files_indexed == 0


def test_a_note_that_breaks_the_indexer_is_skipped_alone_and_the_batch_goes_on(lexical_service, monkeypatch) -> None:
    """Issue 15, item 5: an unforeseen failure on one note (here the chunker raising RecursionError,
    as 5,000-deep structures once did) is undone by itself, reported, and never stops the batch."""
    import dory.index.indexer as indexer

    real = indexer.chunk_lines

    def fragile(lines, *args, **kwargs):
        if any("EXPLODE" in line for line in lines):
            raise RecursionError("maximum recursion depth exceeded")
        return real(lines, *args, **kwargs)

    monkeypatch.setattr(indexer, "chunk_lines", fragile)
    notes = {f"n{i}.md": f"# Note {i}\n\nquinces number {i}\n" for i in range(5)}
    svc = lexical_service({**notes, "bad.md": "# Bad\n\nEXPLODE quinces\n"})
    report = svc.reindex(ReindexRequest())
    assert report.new == 6 and [(s.path, s.reason) for s in report.skipped] == [("bad.md", "index_failed")]
    assert sorted(paths(svc, "quinces")) == sorted(notes)
    assert [(s.path, s.reason) for s in svc.status().skipped] == [("bad.md", "index_failed")]
