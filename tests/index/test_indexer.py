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


def test_a_note_whose_indexing_failed_once_is_retried_by_the_next_reindex(lexical_service, monkeypatch) -> None:
    """A transient failure must not hide a note that never changes (a claim artifact) until a full
    reindex: unlike a verdict on the bytes, `index_failed` is tried again on the next pass."""
    import dory.index.indexer as indexer

    real = indexer.chunk_lines
    failures = iter([RuntimeError("database was busy for a moment")])

    def flaky(lines, *args, **kwargs):
        if any("flaky" in line for line in lines):
            failure = next(failures, None)
            if failure is not None:
                raise failure
        return real(lines, *args, **kwargs)

    monkeypatch.setattr(indexer, "chunk_lines", flaky)
    svc = lexical_service({"steady.md": "# Steady\n\nquinces\n", "claim.md": "# Claim\n\nflaky quinces\n"})
    first = svc.reindex(ReindexRequest())
    assert [(s.path, s.reason) for s in first.skipped] == [("claim.md", "index_failed")]
    assert paths(svc, "flaky") == []
    second = svc.reindex(ReindexRequest())
    assert (second.new, second.skipped) == (1, [])
    assert paths(svc, "flaky") == ["claim.md"] and svc.status().skipped == []


def test_hard_linked_note_stays_out_of_the_index_until_its_outside_name_is_gone(lexical_service, tmp_path) -> None:
    """Issue 15, item 6: a hard link inside the corpus to a private file outside it was indexed."""
    svc = lexical_service({"plain.md": "# Plain\n\nquinces\n"})
    outside = tmp_path / "private.txt"
    outside.write_text("# Secret\n\nthe door code is walrus4711\n")
    os.link(outside, svc.settings.corpus / "linked.md")
    before = digest_tree(svc.settings.corpus)
    res = svc.reindex(ReindexRequest())
    assert res.new == 1 and [(s.path, s.reason) for s in res.skipped] == [("linked.md", "hard_link")]
    assert paths(svc, "walrus4711") == [] and paths(svc, "quinces") == ["plain.md"]
    assert [(s.path, s.reason) for s in svc.status().skipped] == [("linked.md", "hard_link")]
    assert digest_tree(svc.settings.corpus) == before and outside.read_text().endswith("walrus4711\n")
    outside.unlink()  # one name left, inside the corpus: an ordinary note (size and mtime unchanged)
    assert svc.reindex(ReindexRequest()).new == 1
    assert paths(svc, "walrus4711") == ["linked.md"] and svc.status().skipped == []


def test_indexed_note_that_gets_a_second_name_leaves_the_index(lexical_service, tmp_path) -> None:
    svc = lexical_service({"a.md": "# A\n\nquinces\n", "b.md": "# B\n\nmedlars\n"})
    svc.reindex(ReindexRequest())
    os.link(svc.settings.corpus / "a.md", tmp_path / "elsewhere.md")
    res = svc.reindex(ReindexRequest())
    assert res.deleted == 1 and [s.reason for s in res.skipped] == ["hard_link"]
    assert paths(svc, "quinces") == []


def test_a_skip_not_about_the_bytes_is_retried_though_size_and_mtime_did_not_change(lexical_service) -> None:
    """A permission fixed with chmod, a link count dropping to one: neither changes size or mtime,
    so only a verdict on the bytes (too large, not UTF-8, ...) may spare an unchanged file a re-read."""
    svc = lexical_service({"b.md": "# B\n\nmedlars\n"})
    svc.reindex(ReindexRequest())  # after the first (full) reindex, known skips are remembered
    (svc.settings.corpus / "a.md").write_text("# A\n\nquinces\n")
    st = (svc.settings.corpus / "a.md").stat()
    with svc.resources.store().conn as conn:  # what a reindex records after EACCES (root cannot cause one)
        conn.execute(
            "INSERT INTO skipped(path, size, mtime_ns, reason, detail, seen_at) VALUES (?, ?, ?, ?, ?, ?)",
            ("a.md", st.st_size, st.st_mtime_ns, "unreadable", "Permission denied", "2026-01-01T00:00:00Z"),
        )
    res = svc.reindex(ReindexRequest())
    assert (res.new, res.skipped) == (1, [])
    assert paths(svc, "quinces") == ["a.md"]
