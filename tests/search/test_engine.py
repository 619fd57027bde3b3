"""Lexical search behaviour on small real indexes: filters, policy, collapse, snippets, exact mode."""

from __future__ import annotations

import sqlite3

import pytest

from dory.models import ReindexRequest, Scope, SearchRequest

NOTES = {
    "people/ada.md": "---\ntitle: Ada Lovelace\ntype: person\ncanonical: true\naliases: [Countess]\n---\n"
    "# Ada Lovelace\n\nWrote the first program for the Analytical Engine.\n",
    "inbox/ada-capture.md": "---\ntype: capture\n---\nAda wrote the first program for the Analytical Engine.\n",
    "knowledge/engines.md": "---\ntitle: Engines\ntype: knowledge\ntags: [history, computing]\ndate: 2024-03-01\n---\n"
    "# Engines\n\n## Difference engine\nBabbage designed the difference engine.\n",
    "knowledge/old.md": "---\ntitle: Old\nstatus: superseded\n---\nAnalytical Engine notes that are outdated.\n",
    "projects/x/state.md": "---\ntitle: X\ntype: project\nstatus: active\ndate: 2025-06-01\n---\n"
    "Error code E_42 appears when the engine (100%) stalls.\n",
}


@pytest.fixture
def svc(lexical_service):
    service = lexical_service(NOTES)
    service.reindex(ReindexRequest())
    return service


def search(svc, query: str, **kw):
    return svc.search(SearchRequest(query=query, mode=kw.pop("mode", "bm25"), **kw))


def test_superseded_notes_are_left_out_and_canonical_ranks_first(svc) -> None:
    res = search(svc, "analytical engine program")
    paths = [h.path for h in res.hits]
    assert "knowledge/old.md" not in paths
    assert paths[0] == "people/ada.md"
    assert res.hits[0].evidence_class == "canonical"


def test_near_duplicate_capture_collapses_into_canonical(svc) -> None:
    paths = [h.path for h in search(svc, "first program analytical engine").hits]
    assert "inbox/ada-capture.md" not in paths


def test_aliases_are_searchable(svc) -> None:
    assert search(svc, "countess").hits[0].path == "people/ada.md"


@pytest.mark.parametrize(
    "scope,expected",
    [
        (Scope(path="knowledge/*"), {"knowledge/engines.md"}),
        (Scope(path="knowledge"), {"knowledge/engines.md"}),
        (Scope(type=["project"]), {"projects/x/state.md"}),
        (Scope(tags=["history"]), {"knowledge/engines.md"}),
        (Scope(tags=["history", "missing"]), set()),
        (Scope(since="2025-01-01"), {"projects/x/state.md"}),
        (Scope(until="2024-12-31"), {"knowledge/engines.md"}),
        (Scope(status=["active"]), {"projects/x/state.md"}),
    ],
)
def test_scope_filters(svc, scope: Scope, expected: set[str]) -> None:
    assert {h.path for h in search(svc, "engine", scope=scope).hits} == expected


def test_hit_fields_line_range_heading_and_snippet(svc) -> None:
    hit = search(svc, "Babbage difference").hits[0]
    assert hit.path == "knowledge/engines.md"
    assert hit.heading_path == ["Engines"] or hit.heading_path[0] == "Engines"
    assert "Babbage" in hit.snippet
    lines = (svc.settings.corpus / hit.path).read_text().split("\n")
    assert any("Babbage" in line for line in lines[hit.start_line - 1 : hit.end_line])
    assert hit.chunk_id.startswith("knowledge/engines.md#")


HOSTILE = ['"', "E_42 AND (", "NEAR(engine", "engine*", "100%", "-engine", "'; DROP TABLE files;--"]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_are_safe_in_every_lexical_mode(svc, query: str) -> None:
    for mode in ("bm25", "exact", "hybrid"):
        search(svc, query, mode=mode)  # no sqlite3.OperationalError
    assert svc.store.conn.execute("SELECT count(*) FROM files").fetchone()[0] == len(NOTES)


def test_exact_mode_matches_literal_text_with_like_wildcards_escaped(svc) -> None:
    assert [h.path for h in search(svc, "E_42", mode="exact").hits] == ["projects/x/state.md"]
    assert [h.path for h in search(svc, "(100%)", mode="exact").hits] == ["projects/x/state.md"]
    assert search(svc, "E%42", mode="exact").hits == []


def test_debug_explains_scores(svc) -> None:
    hit = search(svc, "engine", debug=True).hits[0]
    assert hit.explain is not None and hit.explain.bm25_rank is not None
    assert hit.explain.final == pytest.approx(hit.score, rel=1e-4)


def test_hybrid_without_embedder_degrades_with_warning(svc) -> None:
    res = search(svc, "engine", mode="hybrid")
    assert res.hits and res.warnings[0].startswith("vector search unavailable")


def test_stale_result_is_flagged(svc) -> None:
    (svc.settings.corpus / "knowledge/engines.md").write_text("rewritten without the word")
    hit = search(svc, "Babbage").hits[0]
    assert hit.stale_warning is not None and "changed on disk" in hit.stale_warning


def test_search_before_reindex_is_not_found(lexical_service) -> None:
    from dory.errors import NotFound

    svc = lexical_service({"a.md": "x"})
    with pytest.raises(NotFound, match="dory reindex"):
        search(svc, "x")


def test_no_sqlite_errors_leak(svc) -> None:
    try:
        search(svc, "\u0000")
    except Exception as exc:  # the request model refuses it first
        assert not isinstance(exc, sqlite3.Error)


def test_title_and_headings_weigh_more_than_body(lexical_service) -> None:
    svc = lexical_service(
        {
            "body.md": "# Misc\n\nsome words and then quokka appears in the body of a long paragraph here.\n",
            "title.md": "---\ntitle: Quokka\n---\nA small marsupial.\n",
            "heading.md": "# Animals\n\n## Quokka facts\nA small marsupial living on islands.\n",
        }
    )
    svc.reindex(ReindexRequest())
    paths = [h.path for h in search(svc, "quokka").hits]
    assert paths[-1] == "body.md"
    assert set(paths[:2]) == {"title.md", "heading.md"}


def test_cjk_text_is_found_through_the_trigram_table(write_corpus) -> None:
    from dory.config import load_settings
    from dory.service import DoryService

    root = write_corpus({"jp.md": "# 天気\n\n東京の天気は晴れです。\n", "en.md": "# Weather\n\nsunny\n"})
    svc = DoryService(load_settings(root, {"index.trigram": True, "embedder.backend": "none"}, env={}))
    svc.reindex(ReindexRequest())
    assert [h.path for h in search(svc, "天気は晴れ").hits] == ["jp.md"]
    svc.close()
