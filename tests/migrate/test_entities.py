"""Entities across a source: spellings that differ in case, accents, punctuation or script fold alike,
aliases join clusters, the corpus's entities keep their pages (claims only), ambiguous names are
never guessed, and links go to real pages only."""

from __future__ import annotations

import json
from pathlib import Path

from support.migration import Migrate, tree_hashes

from dory.memory import claims
from dory.memory.entities import Entity, Registry
from dory.migrate.entities import EntityContext, compile_entities, name_key
from dory.migrate.model import Observation, ReadContext
from dory.models import LinkLintRequest
from dory.service import DoryService

CTX = ReadContext(into="references/x", now="2025-01-02T03:04:05Z")


def _graph(path: Path, *records: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")


def _entity(name: str, entity_type: str, *observations: str) -> dict[str, object]:
    return {"type": "entity", "name": name, "entityType": entity_type, "observations": list(observations)}


def test_name_key_folds_case_accents_and_punctuation_in_every_script() -> None:
    assert name_key("Zoë  O'Brien_Smith") == name_key("zoe o-brien smith") == "zoe o brien smith"
    assert name_key("D3.js") == name_key("d3 JS") == "d3 js"
    assert name_key("Проект Ёлка") == "проект елка"  # not "" as an ASCII fold would give
    assert name_key("зонтичный-issue-7") != name_key("issue-7")
    assert name_key("?!") == ""
    assert len({name_key("C"), name_key("C++"), name_key("c#"), name_key("C-Sharp")}) == 3  # C# = C-Sharp
    assert name_key("#tag +1") == "tag 1"


def test_spellings_across_documents_become_one_page(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    src = tmp_path / "graphs"
    _graph(src / "a.jsonl", _entity("Zoë O'Brien", "person", "Runs the lab"), _entity("Проект", "project", "Начат"))
    _graph(src / "b.jsonl", _entity("zoe o-brien", "person", "Runs the lab", "Likes tea"))
    _graph(src / "c.jsonl", _entity("ZOE O BRIEN", "Researcher", "Speaks Irish"), _entity("проект", "project", "Идёт"))
    res = migrate(src)
    assert [(e.name, e.path, e.claims) for e in res.entities] == [
        ("Zoë O'Brien", "people/zoe-o-brien.md", 3),  # the same statement twice is one claim
        ("Проект", "projects/проект/state.md", 2),
    ]
    assert res.entities[0].merged == ["ZOE O BRIEN", "zoe o-brien"]
    assert sorted(p.name for p in (corpus / "people").iterdir()) == ["zoe-o-brien.md"]
    page = (corpus / "people/zoe-o-brien.md").read_text("utf-8")
    assert "title: Zoë O'Brien" in page and "ZOE O BRIEN" in page  # merged spellings are aliases
    stored = claims.claims_for(service.store.conn, "person:zoe-o-brien")
    assert sorted(c.statement for c in stored) == ["Likes tea", "Runs the lab", "Speaks Irish"]
    assert len(claims.claims_for(service.store.conn, "project:проект")) == 2


def test_an_entity_the_corpus_has_keeps_its_page_and_gets_claims(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    page = corpus / "people/ada.md"
    page.parent.mkdir(parents=True)
    page.write_text("---\ntitle: Ada Lovelace\ntype: person\naliases: [Countess of Lovelace]\n---\n\n# Ada\n")
    service.index_paths(["people/ada.md"])
    before = page.read_bytes()
    src = tmp_path / "g"
    _graph(
        src / "memory.jsonl",
        _entity("ada lovelace", "person", "Wrote the first program"),
        _entity("Countess of Lovelace", "person", "Born 1815"),  # the page's alias: the same entity
        _entity("Babbage", "person", "Friend of Ada"),
        {"type": "relation", "from": "Babbage", "to": "Ada Lovelace", "relationType": "corresponded with"},
    )
    res = migrate(src)
    assert res.problems == []
    assert [(e.name, e.path, e.existing, e.claims) for e in res.entities] == [
        ("Ada Lovelace", "people/ada.md", True, 2),
        ("Babbage", "people/babbage.md", False, 2),
    ]
    assert page.read_bytes() == before and res.items["entity"] == 1
    assert sorted(c.statement for c in claims.claims_for(service.store.conn, "person:ada")) == [
        "Born 1815",
        "Wrote the first program",
    ]
    assert "- corresponded with [[people/ada|Ada Lovelace]]" in (corpus / "people/babbage.md").read_text("utf-8")
    assert service.link_lint(LinkLintRequest()).broken_total == 0
    hashes = tree_hashes(corpus)
    assert migrate(src).created == 0 and tree_hashes(corpus) == hashes


def test_a_name_two_pages_share_is_never_guessed() -> None:
    registry = Registry(
        [
            Entity("person:al-one", "person", "al-one", "people/al-one.md", "Al One", ("AL",)),
            Entity("person:al-two", "person", "al-two", "people/al-two.md", "Al Two", ("AL",)),
        ]
    )
    ectx = EntityContext(registry)
    items = compile_entities([Observation("AL", "person", "Plays chess")], CTX, ectx)
    assert [(e.path, e.existing) for e in ectx.summary] == [("people/al.md", False)]
    assert {i.kind for i in items} == {"claim", "entity"}


def test_aliases_join_clusters_and_a_slug_beats_a_title() -> None:
    registry = Registry(
        [
            Entity("concept:mercury", "concept", "mercury", "concepts/mercury.md", "Quicksilver"),
            Entity("concept:planet", "concept", "planet", "concepts/planet.md", "Mercury"),
        ]
    )
    ectx = EntityContext(registry)
    observations = [
        Observation("Hg", "concept", "Liquid at room temperature", aliases=("Mercury",)),
        Observation("mercury", "concept", "Toxic"),
    ]
    compile_entities(observations, CTX, ectx)
    # one cluster (Hg = Mercury by alias), placed on the page whose slug is "mercury"
    assert [(e.path, e.existing, e.claims) for e in ectx.summary] == [("concepts/mercury.md", True, 2)]


def test_links_go_to_whole_words_outside_other_links_and_names_may_hold_any_character() -> None:
    observations = [
        Observation("Ada", "person", "Met Adams and Ada's friend C\\D", links=("Adams", "C\\D")),
        Observation("Adams", "person", "A name"),
        Observation("C\\D", "concept", "A backslash in a name"),
        Observation("Bob", "person", "Knows Ada and Adams", links=("Ada", "Adams")),
    ]
    ectx = EntityContext()
    items = compile_entities(observations, CTX, ectx)
    text = b"".join(out.data for item in items for out in item.outputs).decode()
    assert "Met [[people/adams|Adams]] and Ada's friend [[concepts/c-d|C\\D]]" in text
    assert "Knows [[people/ada|Ada]] and [[people/adams|Adams]]" in text


def test_claim_artifacts_are_the_same_bytes_on_every_run() -> None:
    observations = [Observation("Ada", "person", "Wrote a program", source="m.jsonl#L1", evidence="references/x/m.md")]
    first = compile_entities(observations, CTX, EntityContext())
    later = ReadContext(into="references/x", now="2026-01-01T00:00:00Z")
    claim_keys = {i.key: i.digest for i in first if i.kind == "claim"}
    assert {i.key: i.digest for i in compile_entities(observations, later, EntityContext()) if i.kind == "claim"} == (
        claim_keys
    )
    assert compile_entities(observations, CTX, EntityContext())[0].outputs == first[0].outputs
