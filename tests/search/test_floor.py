"""The relevance floor (issue 19): no evidence, no hit; weak hits only on request, never logged."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from dory.config import load_settings
from dory.corpus.template import copy_template
from dory.models import ReindexRequest, SearchRequest
from dory.search.floor import with_evidence
from dory.service import DoryService


def test_evidence_is_a_lexical_match_or_a_cosine_at_the_floor() -> None:
    lists = {"bm25": [(1, -3.0)], "vector": [(2, 0.41), (3, 0.40), (4, 0.39), (1, 0.1)]}
    assert with_evidence(lists, 0.40) == {1, 2, 3}
    assert with_evidence({"vector": [(5, 0.2)]}, 0.40) == set()
    assert with_evidence({}, 0.40) == set()


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DoryService]:
    """The corpus `dory init` creates, with the real model (one load for the module)."""
    root = tmp_path_factory.mktemp("floor") / "corpus"
    copy_template(root)
    service = DoryService(load_settings(root, env={}))
    assert service.reindex(ReindexRequest()).vectors_pending == 0
    yield service
    service.close()


def recalled_paths(service: DoryService, query: str) -> list[str]:
    path: Path = service.settings.recall_log_path
    if not path.exists():
        return []
    with sqlite3.connect(path) as conn:
        return [row[0] for row in conn.execute("SELECT path FROM recall_events WHERE query = ?", (query,))]


@pytest.mark.model
@pytest.mark.parametrize("mode", ["hybrid", "vector"])
def test_a_word_found_nowhere_returns_nothing_and_says_why(svc: DoryService, mode: str) -> None:
    res = svc.search(SearchRequest(query="zebra stripes", mode=mode))
    assert res.hits == []
    assert any("no result has real evidence" in w and "--include-weak" in w for w in res.warnings)
    assert recalled_paths(svc, "zebra stripes") == []


@pytest.mark.model
def test_weak_hits_on_request_are_marked_low_and_never_recalled(svc: DoryService) -> None:
    query = "zebra stripes savanna"
    res = svc.search(SearchRequest(query=query, include_weak=True))
    assert res.hits, "the nearest chunks are still there when asked for"
    assert all(h.weak is True and h.confidence == "low" for h in res.hits)
    assert recalled_paths(svc, query) == []


@pytest.mark.model
def test_a_paraphrase_without_shared_words_is_still_evidence(svc: DoryService) -> None:
    """The floor must not cost the vector side its point: a meaning match with no keyword in common."""
    query = "looking after a yeast starter for loaves"
    res = svc.search(SearchRequest(query=query, mode="vector", debug=True))
    assert res.hits and res.hits[0].path == "knowledge/sourdough-notes.md"
    assert res.hits[0].weak is None
    assert "knowledge/sourdough-notes.md" in recalled_paths(svc, query)


@pytest.mark.model
def test_min_score_cuts_the_tail_and_keyword_hits_are_never_weak(svc: DoryService) -> None:
    every = svc.search(SearchRequest(query="index fresh daemon", mode="bm25", record=False)).hits
    assert len(every) >= 2 and all(h.weak is None for h in every)
    cut = every[1].score
    kept = svc.search(SearchRequest(query="index fresh daemon", mode="bm25", record=False, min_score=cut)).hits
    assert kept and all(h.score >= cut for h in kept) and len(kept) < len(every)
    assert [h.path for h in kept] == [h.path for h in every if h.score >= cut]
