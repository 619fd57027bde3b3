"""The link graph through the real indexer: resolution at query time, incremental updates (missing
targets appearing, renames, entity pages added, renamed, retired and deleted), BFS queries and lint."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from dory.config import load_settings
from dory.memory import graph
from dory.models import LinkLintRequest, LinkRequest, ReindexRequest, ReindexResponse
from dory.service import DoryService

Build = Callable[..., DoryService]


@pytest.fixture
def build(tmp_path: Path) -> Iterator[Build]:
    """build(files, name="corpus", index__batch_files=2, ...) writes a corpus, indexes it (no vectors) and
    returns its service."""
    services: list[DoryService] = []

    def make(files: dict[str, str], name: str = "corpus", **overrides: Any) -> DoryService:
        root = tmp_path / name
        for rel, text in files.items():
            write(root, rel, text)
        dotted = {key.replace("__", "."): value for key, value in overrides.items()}
        svc = DoryService(load_settings(root, {"embedder.backend": "none", **dotted}, env={}))
        services.append(svc)
        svc.reindex(ReindexRequest())
        return svc

    yield make
    for svc in services:
        svc.close()


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def move(svc: DoryService, old: str, new: str) -> None:
    (svc.settings.corpus / new).parent.mkdir(parents=True, exist_ok=True)
    os.rename(svc.settings.corpus / old, svc.settings.corpus / new)


def reindex(svc: DoryService) -> ReindexResponse:
    return svc.reindex(ReindexRequest())


def edges(svc: DoryService, path: str, **options: Any) -> set[tuple[str, str, str, int, bool]]:
    res = svc.links(LinkRequest(path=path, max_edges=10_000, **options))
    return {(e.source, e.target, e.kind, e.line, e.resolved) for e in res.edges}


def out(svc: DoryService, path: str) -> dict[str, str | None]:
    """Each explicit link's target as written → the note it resolves to now (None when broken)."""
    table = graph.names(svc.store.conn)
    rows = svc.store.conn.execute(
        "SELECT kind, target, target_key FROM links WHERE file_id = (SELECT id FROM files "
        "WHERE path = ?) AND kind != 'mention'",
        (path,),
    ).fetchall()
    return {target: table.resolve(path, kind, target, key) for kind, target, key in rows}


def mention_rows(svc: DoryService) -> set[tuple[str, str, int, str]]:
    return {
        tuple(row)
        for row in svc.store.conn.execute(
            "SELECT f.path, l.target, l.line, l.label FROM links l JOIN files f ON f.id = l.file_id "
            "WHERE l.kind = 'mention'"
        )
    }


def all_rows(svc: DoryService) -> set[tuple]:
    links = svc.store.conn.execute(
        "SELECT f.path, l.kind, l.target, l.target_key, l.heading, l.label, l.line FROM links l "
        "JOIN files f ON f.id = l.file_id"
    ).fetchall()
    names = svc.store.conn.execute(
        "SELECT f.path, n.name, n.kind FROM link_names n JOIN files f ON f.id = n.file_id WHERE n.kind = 'alias'"
    ).fetchall()
    return {tuple(row) for row in links} | {("name", *row) for row in names}


def stamps(svc: DoryService) -> dict[str, tuple[int, str]]:
    """path → (file id, indexed_at): unchanged when the note was not rewritten."""
    return {row[0]: (row[1], row[2]) for row in svc.store.conn.execute("SELECT path, id, indexed_at FROM files")}


ALICE = "---\ntitle: Alice Smith\naliases: [Ali]\n---\n# Alice Smith\n"


# --- resolution -----------------------------------------------------------------------------------


def test_wikilinks_resolve_by_path_then_file_name_then_alias(build: Build) -> None:
    svc = build(
        {
            "index.md": "[[Projects/Plan]]\n[[plan]]\n[[Deep Note]]\n[[nick]]\n[[b/dup]]\n[[dup]]\n[[nowhere]]\n"
            "[[projects/plan.md]]\n[[h#Goals|goals]]",
            "projects/plan.md": "# Plan",
            "zz/plan.md": "# Other plan",
            "a/b/c/Deep Note.md": "# Deep",
            "other.md": "---\naliases: [Deep Note]\n---\nnot this one",
            "aliased.md": "---\naliases: [Nick]\n---\nbody",
            "h.md": "# H",
            "x/b/dup.md": "# 1",
            "y/dup.md": "# 2",
            "w/dup.md": "# 3",
            "aa/dup.md": "# 4",
        }
    )
    assert out(svc, "index.md") == {
        "Projects/Plan": "projects/plan.md",  # exact path, any case
        "plan": "zz/plan.md",  # by file name anywhere: the shortest path
        "Deep Note": "a/b/c/Deep Note.md",  # a file name beats an alias
        "nick": "aliased.md",
        "b/dup": "x/b/dup.md",  # a partial path matches the end of a path
        "dup": "w/dup.md",  # same length: alphabetical
        "nowhere": None,
        "projects/plan.md": "projects/plan.md",
        "h": "h.md",
    }
    heading = svc.links(LinkRequest(path="index.md", direction="out")).edges
    assert [(e.target, e.heading, e.label) for e in heading if e.line == 9] == [("h.md", "Goals", "goals")]
    assert edges(svc, "aliased.md", direction="in") == {("index.md", "aliased.md", "wikilink", 4, True)}
    assert edges(svc, "x/b/dup.md", direction="in") == {("index.md", "x/b/dup.md", "wikilink", 5, True)}


def test_paths_differing_only_in_case_resolve_to_the_alphabetically_first(build: Build) -> None:
    svc = build({"src.md": "[[CASE]]", "case.md": "# lower"})
    write(svc.settings.corpus, "Case.md", "# upper")
    reindex(svc)
    assert out(svc, "src.md") == {"CASE": "Case.md"}


def test_markdown_links_resolve_from_the_linking_notes_folder(build: Build) -> None:
    svc = build(
        {
            "a/b/n.md": "[up](../x.md)\n[same](y.md)\n[root](/top.md)\n[named](elsewhere.md)\n[out](../../../z.md)\n"
            "[gone](../missing.md)\n[space](my%20note.md)\n[[../x]]\n[[./y]]",
            "a/x.md": "# x",
            "a/b/y.md": "# y here",
            "y.md": "# y at the root",
            "top.md": "# top",
            "q/elsewhere.md": "# e",
            "a/b/my note.md": "# spaced",
        }
    )
    assert out(svc, "a/b/n.md") == {
        "../x.md": "a/x.md",
        "y.md": "a/b/y.md",
        "/top.md": "top.md",
        "elsewhere.md": "q/elsewhere.md",  # not next to the note: found by file name, as Obsidian does
        "../../../z.md": None,
        "../missing.md": None,
        "my note.md": "a/b/my note.md",
        "../x": "a/x.md",
        "./y": "a/b/y.md",  # a wikilink written as a relative path is one too
    }
    backlinks = edges(svc, "a/x.md", direction="in")
    assert backlinks == {("a/b/n.md", "a/x.md", "markdown", 1, True), ("a/b/n.md", "a/x.md", "wikilink", 8, True)}


# --- incremental updates through the indexer ------------------------------------------------------


def test_a_link_to_a_missing_note_resolves_once_the_note_exists(build: Build) -> None:
    svc = build({"src.md": "intro\n[[Later Note]]\n"})
    assert edges(svc, "src.md") == {("src.md", "Later Note", "wikilink", 2, False)}
    lint = svc.link_lint(LinkLintRequest())
    assert [(b.source, b.line, b.target, b.reason) for b in lint.broken] == [
        ("src.md", 2, "Later Note", 'no note named "Later Note"')
    ]
    before = stamps(svc)["src.md"]
    write(svc.settings.corpus, "notes/Later Note.md", "# Later\n")
    res = reindex(svc)
    assert (res.new, res.changed) == (1, 0)
    assert stamps(svc)["src.md"] == before  # the linking note was not re-read
    assert edges(svc, "src.md") == {("src.md", "notes/Later Note.md", "wikilink", 2, True)}
    assert edges(svc, "notes/Later Note.md", direction="in") == {("src.md", "notes/Later Note.md", "wikilink", 2, True)}
    assert svc.link_lint(LinkLintRequest()).broken_total == 0
    (svc.settings.corpus / "notes/Later Note.md").unlink()
    reindex(svc)
    assert edges(svc, "src.md") == {("src.md", "Later Note", "wikilink", 2, False)}


def test_renamed_targets_resolve_as_obsidian_would(build: Build) -> None:
    svc = build({"src.md": "[[Target]]\n[[old/Target]]\n[rel](old/Target.md)", "old/Target.md": "# The target\n"})
    assert set(out(svc, "src.md").values()) == {"old/Target.md"}
    move(svc, "old/Target.md", "new/Target.md")
    assert reindex(svc).renamed == 1
    assert out(svc, "src.md") == {"Target": "new/Target.md", "old/Target": None, "old/Target.md": None}
    move(svc, "new/Target.md", "new/Renamed.md")
    reindex(svc)
    assert out(svc, "src.md") == {"Target": None, "old/Target": None, "old/Target.md": None}
    assert {b.target for b in svc.link_lint(LinkLintRequest()).broken} == {"Target", "old/Target", "old/Target.md"}


def test_a_moved_note_reads_its_relative_links_from_its_new_folder(build: Build) -> None:
    svc = build({"a/src.md": "[x](x.md)\n[[x]]", "a/x.md": "# ax", "b/x.md": "# bx", "bb/c/x.md": "# far"})
    assert out(svc, "a/src.md") == {"x.md": "a/x.md", "x": "a/x.md"}
    move(svc, "a/src.md", "b/src.md")
    res = reindex(svc)
    assert (res.renamed, res.chunks_written) == (1, 0)
    assert out(svc, "b/src.md") == {"x.md": "b/x.md", "x": "a/x.md"}  # a wikilink does not depend on its folder


def test_rename_note_rewrites_the_stored_path_and_file_name(build: Build) -> None:
    svc = build({"a/old name.md": "---\naliases: [Nick]\n---\nbody"})
    move(svc, "a/old name.md", "b/New Name.md")
    reindex(svc)
    with svc.store.conn:
        graph.rename_note(svc.store.conn, "a/old name.md", "b/New Name.md")
    rows = svc.store.conn.execute("SELECT name, kind FROM link_names").fetchall()
    assert sorted(tuple(row) for row in rows) == [("b/new name", "path"), ("new name", "stem"), ("nick", "alias")]


NOTES = {
    "journal/monday.md": "# Monday\n\nLunch with Alice Smith.\n\nLater Ali called.\n",
    "journal/tuesday.md": "Nothing here\n\n```\nAlice Smith in code\n```\n`Alice Smith` [[Alice Smith]]\n",
    "journal/wed.md": "---\ntitle: Alice Smith\n---\n",  # frontmatter only: not a mention
    "journal/thu.md": "Alice Smithers and alicesmith are someone else\n",
    "journal/fri.md": "# Friday\n\n\n\nAli only\n",
}


def test_a_new_person_page_adds_mentions_to_notes_that_are_not_rewritten(build: Build) -> None:
    svc = build(NOTES)
    assert mention_rows(svc) == set()
    before = stamps(svc)
    write(svc.settings.corpus, "people/alice-smith.md", ALICE)
    res = reindex(svc)
    assert (res.new, res.changed) == (1, 0)
    assert mention_rows(svc) == {
        ("journal/monday.md", "people/alice-smith.md", 3, "Alice Smith"),
        ("journal/fri.md", "people/alice-smith.md", 5, "Ali"),
    }
    after = stamps(svc)
    assert {path: after[path] for path in before} == before
    assert edges(svc, "people/alice-smith.md", direction="in") == {
        ("journal/monday.md", "people/alice-smith.md", "mention", 3, True),
        ("journal/fri.md", "people/alice-smith.md", "mention", 5, True),
    }
    assert edges(svc, "people/alice-smith.md", direction="in", mentions=False) == set()


def test_entity_page_renamed_retired_and_deleted(build: Build) -> None:
    svc = build({**NOTES, "people/alice-smith.md": ALICE})
    assert {row[:2] for row in mention_rows(svc)} == {
        ("journal/monday.md", "people/alice-smith.md"),
        ("journal/fri.md", "people/alice-smith.md"),
    }
    move(svc, "people/alice-smith.md", "people/alice-jones.md")
    assert reindex(svc).renamed == 1
    assert {row[1] for row in mention_rows(svc)} == {"people/alice-jones.md"}
    write(svc.settings.corpus, "people/alice-jones.md", ALICE.replace("---\n#", "status: superseded\n---\n#"))
    reindex(svc)
    assert mention_rows(svc) == set()
    write(svc.settings.corpus, "people/alice-jones.md", ALICE)
    reindex(svc)
    assert len(mention_rows(svc)) == 2
    (svc.settings.corpus / "people/alice-jones.md").unlink()
    reindex(svc)
    assert mention_rows(svc) == set()
    assert "journal/monday.md" in svc.link_lint(LinkLintRequest()).orphans


def test_changed_aliases_and_shared_names(build: Build) -> None:
    svc = build({**NOTES, "people/alice-smith.md": ALICE})
    write(svc.settings.corpus, "people/alice-smith.md", ALICE.replace("[Ali]", "[Allie]"))
    reindex(svc)
    assert {row[0] for row in mention_rows(svc)} == {"journal/monday.md"}  # "Ali" no longer names her
    write(svc.settings.corpus, "people/alice-smith.md", ALICE)
    write(svc.settings.corpus, "people/ali-khan.md", "---\ntitle: Ali Khan\naliases: [Ali]\n---\n# Ali Khan\n")
    reindex(svc)
    assert {row[0] for row in mention_rows(svc)} == {"journal/monday.md"}  # two people called Ali: neither
    (svc.settings.corpus / "people/ali-khan.md").unlink()
    reindex(svc)
    assert {row[0] for row in mention_rows(svc)} == {"journal/monday.md", "journal/fri.md"}


def test_entity_page_and_notes_in_one_batch_whatever_the_order(build: Build) -> None:
    svc = build({"a-first.md": "Alice Smith", "zz-last.md": "see Ali", "people/alice-smith.md": ALICE})
    assert {row[0] for row in mention_rows(svc)} == {"a-first.md", "zz-last.md"}


def test_mentions_match_a_fresh_index_after_many_changes(build: Build, tmp_path: Path) -> None:
    svc = build(
        {
            **NOTES,
            "people/alice-smith.md": ALICE,
            "projects/dory/state.md": "# Dory\n",
            "log.md": "Worked on dory with Bob Stone and Alice Smith\n",
        },
        index__batch_files=2,
    )
    corpus = svc.settings.corpus
    write(corpus, "people/bob-stone.md", "---\ntitle: Bob Stone\n---\n# Bob\n")
    write(corpus, "late.md", "Bob Stone met Ali about [[state]]\n")
    move(svc, "people/alice-smith.md", "people/alice-s.md")
    (corpus / "journal/thu.md").unlink()
    reindex(svc)
    write(corpus, "people/bob-stone.md", "---\ntitle: Robert Stone\naliases: [Bob Stone, Bobby]\n---\n# Bob\n")
    write(corpus, "journal/sat.md", "Bobby and Alice Smith went sailing\n")
    reindex(svc)
    fresh = tmp_path / "fresh"
    shutil.copytree(corpus, fresh, ignore=shutil.ignore_patterns(".dory"))
    again = build({}, name="fresh")
    assert all_rows(svc) == all_rows(again)
    assert {row[:2] for row in mention_rows(svc)} >= {
        ("late.md", "people/bob-stone.md"),
        ("journal/sat.md", "people/bob-stone.md"),
        ("log.md", "projects/dory/state.md"),
    }


def test_notes_written_while_entity_pages_change_agree_with_the_end_of_the_batch(build: Build, tmp_path: Path) -> None:
    """Mid-batch the registry passes through states neither the old nor the new index has ("Sam"
    names one person only between the rewrite of sam-b and the move of sam-c); a note written then
    must not keep a mention from that moment."""

    def person(title: str, aliases: str) -> str:
        return f"---\ntitle: {title}\naliases: [{aliases}]\n---\n# {title}\n"

    svc = build(
        {
            "people/sam-a.md": person("Sam A", "Sam"),
            "people/sam-b.md": person("Sam B", "Sam"),
            "drafts/sam-c.md": person("Sam C", "Sam"),
            "zz.md": "nothing yet\n",
        }
    )
    corpus = svc.settings.corpus
    write(corpus, "people/sam-b.md", person("Sam B", "Sammy"))
    write(corpus, "zz.md", "Met Sam today\n")
    move(svc, "drafts/sam-c.md", "people/sam-c.md")
    reindex(svc)
    assert mention_rows(svc) == set()  # "Sam" names two people again: neither
    shutil.copytree(corpus, tmp_path / "fresh", ignore=shutil.ignore_patterns(".dory"))
    assert all_rows(svc) == all_rows(build({}, name="fresh"))


def test_mentions_never_point_at_a_deleted_page_even_without_the_stored_names(build: Build) -> None:
    svc = build({**NOTES, "people/alice-smith.md": ALICE, "people/bob.md": "---\ntitle: Bob Stone\n---\n# B\n"})
    assert len(mention_rows(svc)) == 2
    with svc.store.conn:
        svc.store.conn.execute("DELETE FROM meta WHERE key IN (?, ?)", (graph.MENTION_NAMES, graph.MENTION_STAMP))
    (svc.settings.corpus / "people/alice-smith.md").unlink()
    reindex(svc)
    assert mention_rows(svc) == set()


def test_an_entity_page_edit_that_keeps_its_names_rescans_no_note(
    build: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc = build({**NOTES, "people/alice-smith.md": ALICE})
    rescanned: list[int] = []
    real = graph._rescan_mentions
    monkeypatch.setattr(
        graph, "_rescan_mentions", lambda conn, file_id, m: (rescanned.append(file_id), real(conn, file_id, m))
    )
    write(svc.settings.corpus, "people/alice-smith.md", ALICE + "\nLikes sailing.\n")
    assert reindex(svc).changed == 1
    assert rescanned == []
    write(svc.settings.corpus, "people/alice-smith.md", ALICE.replace("[Ali]", "[Ali, Alice]"))
    reindex(svc)
    assert rescanned  # a new name: the notes that may hold it are looked at
    assert ("journal/thu.md", "people/alice-smith.md", 1, "Alice") in mention_rows(svc)


def test_names_with_letters_that_do_not_fold_to_ascii_are_found(build: Build) -> None:
    svc = build({"trip.md": "# Trip\nMet Bjørn Berg in Oslo.\n"})
    write(svc.settings.corpus, "people/bjorn-berg.md", "---\ntitle: Bjørn Berg\n---\n# Bjørn\n")
    reindex(svc)
    assert mention_rows(svc) == {("trip.md", "people/bjorn-berg.md", 2, "Bjørn Berg")}


def test_a_tokenizer_that_keeps_accents_falls_back_to_scanning_every_note(build: Build) -> None:
    svc = build({"cafe.md": "Zoë was here\n"}, index__tokenizer="ascii")
    write(svc.settings.corpus, "people/zoe.md", "---\ntitle: Zoe\n---\n# Zoe\n")
    reindex(svc)
    assert mention_rows(svc) == {("cafe.md", "people/zoe.md", 1, "Zoë")}


# --- queries --------------------------------------------------------------------------------------

GRAPH = {
    "a.md": "# A\n[[b]]\nPat Lee says hi\n[[x/ex]]\n[[b|again]]\n",
    "b.md": "# B\n[[c]]\n",
    "c.md": "# C\n[[d]]\n",
    "d.md": "# D\n",
    "e.md": "# E\n[[a]]\n",
    "x/ex.md": "# Ex\n[[far]]\n",
    "far.md": "# Far\n",
    "people/pat-lee.md": "---\ntitle: Pat Lee\n---\n# Pat\n",
}


def test_neighbors_out_in_and_both_with_depth(build: Build) -> None:
    svc = build(GRAPH)
    assert edges(svc, "a.md", direction="out") == {
        ("a.md", "b.md", "wikilink", 2, True),
        ("a.md", "people/pat-lee.md", "mention", 3, True),
        ("a.md", "x/ex.md", "wikilink", 4, True),
    }  # [[b]] twice: one edge, at its first line
    assert edges(svc, "a.md", direction="out", depth=2) - edges(svc, "a.md", direction="out") == {
        ("b.md", "c.md", "wikilink", 2, True),
        ("x/ex.md", "far.md", "wikilink", 2, True),
    }
    assert edges(svc, "a.md", direction="in") == {("e.md", "a.md", "wikilink", 2, True)}
    assert edges(svc, "c.md", direction="in", depth=2) == {
        ("b.md", "c.md", "wikilink", 2, True),
        ("a.md", "b.md", "wikilink", 2, True),
    }
    assert edges(svc, "b.md", direction="both", depth=2) == {
        ("a.md", "b.md", "wikilink", 2, True),
        ("b.md", "c.md", "wikilink", 2, True),
        ("c.md", "d.md", "wikilink", 2, True),
        ("e.md", "a.md", "wikilink", 2, True),
        ("a.md", "people/pat-lee.md", "mention", 3, True),
        ("a.md", "x/ex.md", "wikilink", 4, True),
    }


def test_neighbors_exclude_prefix_mentions_and_truncation(build: Build) -> None:
    svc = build(GRAPH)
    assert edges(svc, "a.md", direction="out", depth=2, exclude_prefix=["x/"]) == {
        ("a.md", "b.md", "wikilink", 2, True),
        ("a.md", "people/pat-lee.md", "mention", 3, True),
        ("b.md", "c.md", "wikilink", 2, True),
    }  # x/ex.md dropped, and far.md is not reached through it
    assert edges(svc, "a.md", direction="out", mentions=False) == {
        ("a.md", "b.md", "wikilink", 2, True),
        ("a.md", "x/ex.md", "wikilink", 4, True),
    }
    full = svc.links(LinkRequest(path="b.md", direction="both", depth=3))
    capped = svc.links(LinkRequest(path="b.md", direction="both", depth=3, max_edges=2))
    assert (full.count, full.total, full.truncated) == (7, 7, False)
    assert (capped.count, capped.total, capped.truncated) == (2, 7, True)
    assert capped.edges == full.edges[:2]  # nearest first, in a stable order
    assert [e.source for e in full.edges[:3]] == ["a.md", "b.md", "a.md"]  # depth 1 (sorted), then depth 2


def test_lint_broken_links_with_lines_and_orphans(build: Build) -> None:
    svc = build(
        {
            "a.md": "ok [[b]]\n\n[[Nope]]\n```\n[[InCode]]\n```\n[bad](../../x.md)\n[gone](sub/none.md)\n",
            "b.md": "# B\n",
            "lonely.md": "# Lonely\n",
            "self.md": "# Self\n[[self]]\n",
            "m.md": "Pat Lee called\n",
            "people/pat-lee.md": "---\ntitle: Pat Lee\n---\n# Pat\n",
            "skip/c.md": "[[Missing]]\n",
            "skip/alone.md": "# Alone\n",
        }
    )
    res = svc.link_lint(LinkLintRequest(exclude_prefix=["skip/"]))
    assert [(b.source, b.line, b.target, b.kind, b.reason) for b in res.broken] == [
        ("a.md", 3, "Nope", "wikilink", 'no note named "Nope"'),
        ("a.md", 7, "../../x.md", "markdown", "points outside the corpus"),
        ("a.md", 8, "sub/none.md", "markdown", 'no note at "sub/none.md"'),
    ]
    assert res.orphans == ["lonely.md", "self.md"]  # a link to itself connects nothing
    assert (res.files, res.edges, res.broken_total, res.orphans_total, res.truncated) == (6, 3, 3, 2, False)
    capped = svc.link_lint(LinkLintRequest(max_items=1))
    assert (len(capped.broken), capped.broken_total, len(capped.orphans), capped.orphans_total, capped.truncated) == (
        1,
        4,
        1,
        4,
        True,
    )
    assert capped.orphans == ["lonely.md"] and capped.broken[0].target == "Nope"
