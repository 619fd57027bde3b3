"""Ranking with the real model on the corpus `dory init` creates (in process: one model load)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dory.config import load_settings
from dory.corpus.template import copy_template
from dory.models import ReindexRequest, SearchRequest
from dory.service import DoryService

PARAPHRASE = "how do I look after my bread yeast culture"


@pytest.mark.model
def test_vector_mode_ranks_the_best_semantic_match_first_in_an_init_corpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DORY_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "fresh"
    copy_template(root)
    svc = DoryService(load_settings(root, env={}))
    try:
        assert svc.reindex(ReindexRequest()).vectors_pending == 0
        hits = svc.search(SearchRequest(query=PARAPHRASE, mode="vector", debug=True)).hits
    finally:
        svc.close()
    by_vector = sorted(hits, key=lambda h: h.explain.vector_rank if h.explain and h.explain.vector_rank else 999)
    assert by_vector[0].path == "knowledge/sourdough-notes.md"  # the embedder itself gets it right
    paths = [h.path for h in hits]
    assert paths[0] == "knowledge/sourdough-notes.md", paths
