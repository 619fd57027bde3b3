"""mem0 exports (built from mem0's documented `get_all` shapes; no real export exists): each memory is
a claim about its user's person page, with a kind from its categories, the date mem0 gave it, and the
export kept as evidence; graph relations become links; a rerun creates nothing."""

from __future__ import annotations

import json
from pathlib import Path

from support.migration import Migrate, tree_hashes

from dory.memory import claims
from dory.models import LinkLintRequest, SearchRequest
from dory.service import DoryService

MEMORIES = [
    {
        "id": "0b1c2d3e-0000-4000-8000-000000000001",
        "memory": "Is a vegetarian and allergic to nuts",
        "hash": "a1",
        "metadata": None,
        "categories": ["food", "health"],
        "created_at": "2024-07-20T01:30:36.275141-07:00",
        "updated_at": "2024-07-21T09:00:00-07:00",
        "user_id": "alice",
    },
    {
        "id": "0b1c2d3e-0000-4000-8000-000000000002",
        "memory": "Prefers morning meetings and async communication",
        "hash": "a2",
        "metadata": {},
        "categories": ["user_preferences"],
        "created_at": "2024-07-22T10:00:00Z",
        "updated_at": None,
        "user_id": "alice",
    },
    {
        "id": "0b1c2d3e-0000-4000-8000-000000000003",
        "memory": "Likes hiking on weekends",
        "hash": "a3",
        "created_at": "2024-08-01T10:00:00Z",
        "user_id": "Alice",
    },
    {
        "id": "0b1c2d3e-0000-4000-8000-000000000004",
        "memory": "Is leading the API redesign project",
        "hash": "c1",
        "metadata": {"type": "project"},
        "created_at": "2024-08-02T10:00:00Z",
        "user_id": "carl",
    },
    {
        "id": "0b1c2d3e-0000-4000-8000-000000000005",
        "memory": "Answers in French when asked in French",
        "hash": "g1",
        "metadata": {"type": "preference"},
        "created_at": "2024-08-03T10:00:00Z",
        "agent_id": "travel-agent",
    },
]


def _export(folder: Path, value: object, name: str = "mem0-export.json") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(value, indent=2), encoding="utf-8")
    return folder


def test_memories_become_claims_on_their_users_pages(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    res = migrate(_export(tmp_path / "mem0", {"results": MEMORIES}))
    assert res.format == "mem0" and res.into == "references/mem0/mem0" and res.problems == []
    assert res.items == {"evidence": 1, "memory": 5, "claim": 5, "entity": 3}
    by_name = {e.name: e for e in res.entities}
    assert by_name["alice"].path == "people/alice.md" and by_name["alice"].claims == 3
    assert by_name["alice"].merged == ["Alice"]
    assert by_name["carl"].path == "people/carl.md"
    assert by_name["travel-agent"].path == "concepts/travel-agent.md"  # an agent is not a person

    alice = {c.statement: c for c in claims.claims_for(service.store.conn, "person:alice")}
    assert {s: c.kind for s, c in alice.items()} == {
        "Is a vegetarian and allergic to nuts": "fact",
        "Prefers morning meetings and async communication": "preference",  # user_preferences
        "Likes hiking on weekends": "preference",  # worded as mem0 words preferences
    }
    assert alice["Is a vegetarian and allergic to nuts"].valid_from == "2024-07-21T09:00:00-07:00"  # updated_at
    assert alice["Prefers morning meetings and async communication"].valid_from == "2024-07-22T10:00:00Z"
    artifact = (corpus / alice["Likes hiking on weekends"].evidence).read_text("utf-8")
    assert "source: mem0-export.json#0b1c2d3e-0000-4000-8000-000000000003" in artifact
    assert "Evidence: [[references/mem0/mem0/mem0-export.json|mem0-export.json]]" in artifact
    page = (corpus / "people/alice.md").read_text("utf-8")
    assert "## Preferences And Working Style\n\n- Prefers morning meetings" in page
    [agent] = claims.claims_for(service.store.conn, "concept:travel-agent")
    assert agent.kind == "preference"  # metadata type
    hits = service.search(SearchRequest(query="vegetarian", mode="bm25")).hits
    assert "people/alice.md" in {h.path for h in hits}


def test_a_bare_list_with_graph_relations_and_a_broken_memory(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    records: list[object] = [*MEMORIES[:2], {"id": "x", "memory": "", "user_id": "alice"}, "junk"]
    src = _export(tmp_path / "m", records)
    res = migrate(src)
    assert res.format == "mem0"
    assert [(p.source, p.code) for p in res.problems] == [
        ("mem0-export.json#results[2]", "bad_record"),
        ("mem0-export.json#results[3]", "bad_record"),
    ]
    assert res.items["memory"] == 2

    graph = {
        "results": MEMORIES[:1],
        "relations": [
            {"source": "alice", "relationship": "works_with", "target": "carl"},
            {"source": "alice", "relationship": "lives_in", "destination": "san_francisco"},
            {"source": "alice", "relationship": "knows"},
        ],
    }
    res = migrate(_export(tmp_path / "g", graph), into="references/mem0/graph")
    assert [(p.source, p.code) for p in res.problems] == [("mem0-export.json#relations[2]", "bad_record")]
    statements = {c.statement for c in claims.claims_for(service.store.conn, "person:alice")}
    assert "lives in san_francisco" in statements  # no such entity: plain text
    assert "works with carl" in statements  # carl is not an entity of this corpus either
    assert service.link_lint(LinkLintRequest()).broken_total == 0


def test_a_relation_to_an_entity_of_the_export_is_a_link(tmp_path: Path, corpus: Path, migrate: Migrate) -> None:
    graph = {"results": MEMORIES, "relations": [{"source": "alice", "relationship": "works_with", "target": "carl"}]}
    migrate(_export(tmp_path / "g", graph))
    assert "- works with [[people/carl|carl]]" in (corpus / "people/alice.md").read_text("utf-8")


def test_an_existing_page_named_by_alias_gets_the_claims(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    page = corpus / "people/alice-martin.md"
    page.parent.mkdir(parents=True)
    page.write_text("---\ntitle: Alice Martin\ntype: person\naliases: [alice]\n---\n\n# Alice Martin\n")
    service.index_paths(["people/alice-martin.md"])
    before = page.read_bytes()
    res = migrate(_export(tmp_path / "mem0", {"results": MEMORIES[:3]}))
    assert [(e.name, e.existing) for e in res.entities] == [("Alice Martin", True)]
    assert "entity" not in res.items and page.read_bytes() == before
    assert len(claims.claims_for(service.store.conn, "person:alice-martin")) == 3


def test_a_second_run_creates_nothing(tmp_path: Path, corpus: Path, migrate: Migrate) -> None:
    src = _export(tmp_path / "mem0", {"results": MEMORIES})
    migrate(src)
    before = tree_hashes(corpus)
    again = migrate(src)
    assert again.run is None and again.created == 0 and tree_hashes(corpus) == before


def test_an_updated_memory_is_a_new_claim(tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService) -> None:
    migrate(_export(tmp_path / "mem0", {"results": MEMORIES[:1]}))
    changed = dict(MEMORIES[0], memory="Is a vegan", hash="a9", updated_at="2024-09-01T00:00:00Z")
    res = migrate(_export(tmp_path / "mem0", {"results": [changed]}))
    assert res.changed_since == 2 and res.items["claim"] == 1
    statements = {c.statement for c in claims.claims_for(service.store.conn, "person:alice")}
    assert statements == {"Is a vegetarian and allergic to nuts", "Is a vegan"}


def test_json_of_neither_memory_tool_is_left_to_the_generic_reader(tmp_path: Path, migrate: Migrate) -> None:
    src = _export(tmp_path / "plain", {"results": [{"title": "not a memory"}], "relations": [{"a": 1}]})
    assert migrate(src, dry_run=True).format == "generic"
