"""Frontmatter on writes: vocabulary, defaults by place, synonyms, and how notes are rendered."""

from __future__ import annotations

import pytest

from dory.corpus.document import parse_document
from dory.errors import InvalidFrontmatter
from dory.memory.frontmatter import merge, normalise, render


@pytest.mark.parametrize(
    ("path", "kind", "status", "canonical"),
    [
        ("people/ada.md", "person", "active", True),
        ("projects/atlas/state.md", "project", "active", True),
        ("projects/atlas/notes.md", "note", "active", False),
        ("decisions/use-x.md", "decision", "active", True),
        ("inbox/idea.md", "capture", "raw", False),
        ("digests/daily/2026-11-20.md", "digest-daily", "done", False),
        ("anything/else.md", "note", "active", False),
    ],
)
def test_defaults_follow_the_layout(path: str, kind: str, status: str, canonical: bool) -> None:
    fm = normalise({}, path)
    assert (fm["type"], fm["status"], fm["canonical"]) == (kind, status, canonical)
    assert fm["source_kind"] == ("canonical" if canonical else "human")
    assert list(fm)[:5] == ["title", "type", "status", "canonical", "source_kind"]


def test_synonyms_template_leftovers_and_unknown_keys() -> None:
    fm = normalise(
        {
            "type": "Todo # or note",
            "status": "In Progress",
            "tags": "a, #b",
            "aliases": "Ada",
            "created": "2026-11-20T10:00:00",
            "mood": {"x": 1},
        },
        "inbox/x.md",
    )
    assert fm["type"] == "capture" and fm["status"] == "active"
    assert fm["tags"] == ["a", "b"] and fm["aliases"] == ["Ada"] and fm["created"] == "2026-11-20"
    assert fm["mood"] == {"x": 1}


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({"type": "banana"}, "type"),
        ({"status": 3}, "status"),
        ({"canonical": "maybe"}, "canonical"),
        ({"created": "yesterday"}, "created"),
        ({"visibility": "secret"}, "visibility"),
        ({"title": ["x"]}, "title"),
    ],
)
def test_values_outside_the_vocabulary_are_refused(given: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidFrontmatter) as err:
        normalise(given, "knowledge/x.md")
    assert err.value.code == "invalid_frontmatter" and err.value.details["field"] == field


def test_merge_unites_tags_and_aliases() -> None:
    assert merge({"tags": ["a"], "title": "Old"}, {"tags": ["b", "a"], "title": "New"}) == {
        "tags": ["a", "b"],
        "title": "New",
    }


def test_render_round_trips_through_the_reader() -> None:
    fm = normalise({"title": 'Zoë: a "quoted" title', "created": "2026-11-20", "tags": ["x"]}, "people/zoe.md")
    data = render(fm, "\n\nBody line\n\n")
    assert data.startswith(b"---\ntitle:") and data.endswith(b"\n\nBody line\n")
    assert b"created: 2026-11-20\n" in data  # a YAML date, unquoted, as editors write it
    doc = parse_document("people/zoe.md", data)
    assert doc.frontmatter_error is None and doc.frontmatter["title"] == fm["title"]
    assert doc.frontmatter["created"] == "2026-11-20"
