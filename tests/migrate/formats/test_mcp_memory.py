"""The MCP memory server's graph: entities become canonical pages with their observations as claims,
relations become links (plain text when they dangle), repeated names merge, broken lines are one
problem each, and the claim store holds every claim with its evidence, before and after a reindex."""

from __future__ import annotations

import json
from pathlib import Path

from support.migration import Migrate, tree_hashes

from dory.memory import claims
from dory.migrate.formats.generic import MAX_EVIDENCE_BYTES
from dory.models import LinkLintRequest, MigrateUndoRequest, ReindexRequest, SearchRequest
from dory.service import DoryService

GRAPH = [
    {"type": "entity", "name": "Ada Lovelace", "entityType": "person", "observations": ["Wrote the first program"]},
    {"type": "entity", "name": "Analytical Engine", "entityType": "Project", "observations": ["Never built"]},
    {"type": "entity", "name": "ada lovelace", "entityType": "Mathematician", "observations": ["Born in 1815"]},
    {"type": "entity", "name": "Use Babbage notation", "entityType": "decision", "observations": ["Chosen in 1843"]},
    {"type": "relation", "from": "Ada Lovelace", "to": "Analytical Engine", "relationType": "wrote notes on"},
    {"type": "relation", "from": "Ada Lovelace", "to": "Lord Byron", "relationType": "daughter of"},
]


def _write_graph(folder: Path, records: list[dict[str, object]], extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "memory.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n" + extra, encoding="utf-8")
    return folder


def _body(corpus: Path, rel: str) -> str:
    """The page below its frontmatter."""
    return (corpus / rel).read_text("utf-8").split("\n---\n", 1)[1]


def test_entities_become_pages_with_claims_and_relations_become_links(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    res = migrate(_write_graph(tmp_path / "graph", GRAPH))
    assert res.format == "mcp-memory" and res.into == "references/mcp-memory/graph"
    assert res.problems == []
    assert res.items == {"evidence": 1, "entity-source": 3, "claim": 6, "entity": 3}
    by_name = {e.name: e for e in res.entities}
    assert by_name["Ada Lovelace"].path == "people/ada-lovelace.md" and by_name["Ada Lovelace"].claims == 4
    assert by_name["Ada Lovelace"].merged == ["ada lovelace"]  # two lines, one entity
    assert by_name["Analytical Engine"].path == "projects/analytical-engine/state.md"
    assert by_name["Use Babbage notation"].path == "decisions/use-babbage-notation.md"

    page = _body(corpus, "people/ada-lovelace.md")
    assert "- wrote notes on [[projects/analytical-engine/state|Analytical Engine]]" in page
    assert "- daughter of Lord Byron" in page  # dangling: plain text, no link
    assert "[[" not in page.split("daughter of", 1)[1].split("\n", 1)[0]
    assert "aliases:" in (corpus / "people/ada-lovelace.md").read_text()

    active = claims.claims_for(service.store.conn, "person:ada-lovelace")
    assert sorted(c.statement for c in active) == [
        "Born in 1815",
        "Wrote the first program",
        "daughter of Lord Byron",
        "wrote notes on [[projects/analytical-engine/state|Analytical Engine]]",
    ]
    for claim in active:
        artifact = (corpus / claim.evidence).read_text("utf-8")
        assert claim.evidence.startswith("sources/semantic/") and "source_kind: semantic" in artifact
        assert "Evidence: [[references/mcp-memory/graph/memory.jsonl|memory.jsonl]]" in artifact
    assert (corpus / "references/mcp-memory/graph/memory.jsonl.md").is_file()
    decision = claims.claims_for(service.store.conn, "decision:use-babbage-notation")
    assert [(c.kind, c.statement) for c in decision] == [("decision", "Chosen in 1843")]
    assert service.link_lint(LinkLintRequest()).broken_total == 0
    hits = service.search(SearchRequest(query="first program", mode="bm25")).hits
    assert "people/ada-lovelace.md" in {h.path for h in hits}


def test_the_claim_store_comes_back_the_same_after_a_full_reindex(
    tmp_path: Path, migrate: Migrate, service: DoryService
) -> None:
    migrate(_write_graph(tmp_path / "graph", GRAPH))
    before = claims.dump(service.store.conn)
    assert len(before) == 6
    service.reindex(ReindexRequest(full=True, vectors=False))
    assert claims.dump(service.store.conn) == before


def test_a_second_run_creates_nothing(tmp_path: Path, corpus: Path, migrate: Migrate) -> None:
    src = _write_graph(tmp_path / "graph", GRAPH)
    first = migrate(src)
    before = tree_hashes(corpus)
    second = migrate(src)
    assert second.run is None and second.created == 0
    # the pages of the first run are the corpus's entities now: only their claims are proposed again
    assert all(e.existing for e in second.entities) and "entity" not in second.items
    assert second.skipped_unchanged == sum(first.items.values()) - first.items["entity"]
    assert tree_hashes(corpus) == before


def test_an_edited_graph_adds_only_the_new_claims(tmp_path: Path, corpus: Path, migrate: Migrate) -> None:
    src = _write_graph(tmp_path / "graph", GRAPH)
    migrate(src)
    page = (corpus / "people/ada-lovelace.md").read_bytes()
    more = [*GRAPH, {"type": "entity", "name": "Ada Lovelace", "entityType": "person", "observations": ["Died 1852"]}]
    res = migrate(_write_graph(tmp_path / "graph", more))
    assert res.changed_since == 2  # the evidence file and Ada's lines
    assert res.items["claim"] == 7 and res.destinations == {"references": 1, "sources": 1}
    assert (corpus / "people/ada-lovelace.md").read_bytes() == page  # an existing page is never rewritten


def test_broken_lines_are_one_problem_each_and_the_rest_is_imported(
    tmp_path: Path, corpus: Path, migrate: Migrate
) -> None:
    records: list[dict[str, object]] = [
        GRAPH[0],
        {"type": "entity", "entityType": "person", "observations": ["no name"]},
        {"type": "entity", "name": "Babbage", "entityType": "person", "observations": "not a list"},
        {"type": "entity", "name": "Charles", "entityType": "person", "observations": ["Engineer", 3]},
        {"type": "relation", "from": "Ada Lovelace", "relationType": "knows"},
        {"type": "comment", "text": "?"},
    ]
    extra = '["an array"]\n\n{"type":"entity","name":"Cut short","observ'
    res = migrate(_write_graph(tmp_path / "graph", records, extra))
    assert [(p.source, p.code) for p in res.problems] == [
        ("memory.jsonl#L2", "bad_record"),
        ("memory.jsonl#L3", "bad_record"),
        ("memory.jsonl#L4", "bad_record"),
        ("memory.jsonl#L5", "bad_record"),
        ("memory.jsonl#L6", "unknown_record"),
        ("memory.jsonl#L7", "bad_record"),
        ("memory.jsonl#L9", "bad_json_line"),
    ]
    assert "line 9" in res.problems[-1].message
    assert {e.name: e.claims for e in res.entities} == {"Ada Lovelace": 1, "Charles": 1}
    assert "- Engineer" in _body(corpus, "people/charles.md")


def test_the_one_document_shape_is_read_too(tmp_path: Path, corpus: Path, migrate: Migrate) -> None:
    src = tmp_path / "old"
    src.mkdir()
    graph = {
        "entities": [{"name": "Dory", "entityType": "product", "observations": ["A memory layer"]}, "oops"],
        "relations": [{"from": "Dory", "to": "SQLite", "relationType": "stores its index in"}],
    }
    (src / "memory.json").write_text(json.dumps(graph, indent=2))
    (src / "notes.md").write_text("# Notes\n\nabout Dory\n")
    res = migrate(src)
    assert res.format == "mcp-memory"
    assert [(p.source, p.code) for p in res.problems] == [("memory.json#entities[1]", "bad_record")]
    assert res.items["note"] == 1  # other files are read as the generic reader reads them
    body = _body(corpus, "projects/dory/state.md")
    assert "- A memory layer" in body and "- stores its index in SQLite" in body


def test_mindstrike_sample(samples: Path, corpus: Path, migrate: Migrate, service: DoryService) -> None:
    src = samples / "mcp-memory/mindstrike/memory.jsonl"
    res = migrate(src)
    assert res.format == "mcp-memory" and res.problems == []
    assert res.items == {"evidence": 1, "entity-source": 18, "claim": 158, "entity": 18}
    assert len(res.entities) == 18 and not any(e.merged for e in res.entities)
    # 23 relations, one to "MindStrike", which is no entity: plain text; the other 22 are links
    statements = [row["statement"] for row in claims.dump(service.store.conn)]
    assert len(statements) == 158
    assert sum("[[concepts/" in s for s in statements) == 22
    assert "is part of MindStrike" in statements
    assert service.link_lint(LinkLintRequest()).broken_total == 0
    before = tree_hashes(corpus)
    assert migrate(src).created == 0 and tree_hashes(corpus) == before


def test_server_memory_editor_sample_merges_repeated_names(
    samples: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    src = samples / "mcp-memory/server-memory-editor"
    res = migrate(src)
    assert res.problems == [] and res.items["entity-source"] == 7 and res.items["entity"] == 7
    by_name = {e.name: e for e in res.entities}
    assert by_name["mcp-server-memory"].claims == 13  # 5 lines, 11 observations, 2 relations
    assert by_name["D3.js"].claims == 10  # 4 lines, 8 observations, 2 relations
    assert by_name["зонтичный-issue-7"].path == "concepts/зонтичныи-issue-7.md"  # Cyrillic kept
    assert len(list((corpus / "concepts").glob("d3*"))) == 1
    conn = service.store.conn
    d3 = claims.claims_for(conn, "concept:d3-js")
    assert {"Библиотека визуализации данных, v7.8.5", "Лицензия: ISC", "created by Mike Bostock"} <= {
        c.statement for c in d3
    }
    dangling = ["deployed via GitHub Pages", "created by Mike Bostock", "maintained by Observable"]
    dangling += ["developed by Anthropic", "integrates with Claude Desktop"]
    statements = [row["statement"] for row in claims.dump(conn)]
    assert set(dangling) <= set(statements)  # 5 dangling relations, as plain text
    assert sum("[[" in s for s in statements) == 13 - 5
    assert service.link_lint(LinkLintRequest()).broken_total == 0
    before = tree_hashes(corpus)
    assert migrate(src).created == 0 and tree_hashes(corpus) == before


def test_undo_removes_pages_and_claims_and_keeps_an_edited_page(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    before = tree_hashes(corpus)
    res = migrate(_write_graph(tmp_path / "graph", GRAPH))
    assert res.run is not None and len(claims.dump(service.store.conn)) == 6
    edited = corpus / "projects/analytical-engine/state.md"
    edited.write_text(edited.read_text("utf-8") + "\nMy own line.\n", encoding="utf-8")
    undone = service.migrations.undo(MigrateUndoRequest(run=res.run))
    assert undone.kept_edited == ["projects/analytical-engine/state.md"]
    assert claims.dump(service.store.conn) == []  # every claim artifact was the run's: all gone
    left = set(tree_hashes(corpus)) - set(before)
    assert {p for p in left if not p.startswith("references/reports/")} == {"projects/analytical-engine/state.md"}


def test_a_graph_too_large_to_keep_as_evidence_still_gives_its_claims(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    junk = "x" * (MAX_EVIDENCE_BYTES + 10)
    res = migrate(_write_graph(tmp_path / "graph", GRAPH[:1], junk + "\n"))
    assert [(p.source, p.code) for p in res.problems] == [
        ("memory.jsonl", "file_too_large"),
        ("memory.jsonl#L2", "bad_json_line"),
    ]
    [claim] = claims.claims_for(service.store.conn, "person:ada-lovelace")
    artifact = (corpus / claim.evidence).read_text("utf-8")
    assert "source: memory.jsonl#L1" in artifact and "Evidence:" not in artifact
