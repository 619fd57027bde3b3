"""The freshness contract in the service: writes answer with the index generation that holds them, a
read can wait for a generation, and a wait that cannot be met ends with index_behind."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from support.waiting import DEADLINE_S

from dory.config import load_settings
from dory.errors import IndexBehind
from dory.models import MemoryWriteRequest, ReindexRequest, SearchRequest, WriteRequest
from dory.service import DoryService

NOTES: dict[str, str | bytes] = {
    "notes/a.md": "# A\n\nalpha\n",
    "people/ada-lovelace.md": "---\ntitle: Ada Lovelace\n---\n\n## Summary\n\nMathematician.\n",
}


@pytest.fixture
def svc(lexical_service: Callable[[dict[str, str | bytes]], DoryService]) -> DoryService:
    service = lexical_service(NOTES)
    service.reindex(ReindexRequest())
    return service


def test_each_write_answers_with_a_higher_generation_that_status_and_reads_see(svc: DoryService) -> None:
    start = svc.generation()
    first = svc.write(WriteRequest(path="notes/b.md", kind="create", content="# B\n\nbravo quokka\n"))
    assert first.generation is not None and first.generation > start
    memory = svc.memory_write(
        MemoryWriteRequest(subject="Ada Lovelace", content="Ada wrote notes.", allow_canonical=True)
    )
    assert memory.generation is not None and memory.generation > first.generation
    assert svc.status().generation == memory.generation == svc.generation()
    assert svc.wait_for_generation(first.generation, 0) == memory.generation
    hits = svc.search(SearchRequest(query="quokka", mode="bm25")).hits
    assert [h.path for h in hits] == ["notes/b.md"]


def test_a_reindex_that_changes_nothing_keeps_the_generation(svc: DoryService) -> None:
    before = svc.generation()
    assert svc.reindex(ReindexRequest()).generation == before
    assert svc.index_paths(["notes/a.md"]).generation == before


def test_waiting_for_a_generation_not_reached_is_index_behind_with_the_current_one(svc: DoryService) -> None:
    now = svc.generation()
    with pytest.raises(IndexBehind) as info:
        svc.wait_for_generation(now + 1, 0)
    assert info.value.code == "index_behind" and info.value.http_status == 503
    assert info.value.details == {"generation": now, "min_generation": now + 1}


def test_a_waiting_reader_is_answered_by_the_write_that_reaches_its_generation(svc: DoryService) -> None:
    wanted = svc.generation() + 1
    seen: list[int] = []
    reader = threading.Thread(target=lambda: seen.append(svc.wait_for_generation(wanted, DEADLINE_S)))
    reader.start()
    svc.write(WriteRequest(path="notes/c.md", kind="create", content="# C\n\ncharlie\n"))
    reader.join(DEADLINE_S)
    assert seen and seen[0] >= wanted


def test_a_corpus_never_indexed_is_at_generation_zero(tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    service = DoryService(load_settings(tmp_path / "c", env={"DORY_EMBEDDER_BACKEND": "none"}))
    try:
        assert service.generation() == 0
        assert not (tmp_path / "c" / ".dory" / "index.sqlite").exists()
    finally:
        service.close()
