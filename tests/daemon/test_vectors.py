"""Lexical first, vectors in the background: a real daemon with the real MiniLM model."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.daemon import daemon_env
from support.waiting import DEADLINE_S, wait_until

from dory.config import load_settings
from dory.daemon.embedder import EmbedWorker
from dory.daemon.process import Daemon
from dory.models import SearchRequest
from dory.service import DoryService

pytestmark = pytest.mark.model


def make_corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "notes").mkdir(parents=True)
    (root / "notes/bread.md").write_text("# Bread\n\nKnead the dough and let it rise overnight.\n")
    return root


def test_new_text_is_found_by_keywords_first_and_by_meaning_once_embedded(tmp_path: Path) -> None:
    root = make_corpus(tmp_path)
    settings = load_settings(root, {"daemon.debounce_ms": 50, "daemon.faiss_save_s": 0.2}, env={})
    daemon = Daemon(settings)
    daemon.start()
    reader = DoryService(settings)  # another reader of the index; it reloads FAISS when the daemon saves it

    def search(query: str, mode: str):
        return reader.search(SearchRequest(query=query, mode=mode))

    try:
        assert daemon.startup_done.wait(DEADLINE_S), "the start-up reconcile never finished"
        wait_until(lambda: daemon.snapshot()["idle"], what="the first embedding pass")
        daemon.embedder.stop()  # hold the background embedder so the backlog can be observed
        (root / "notes/penguins.md").write_text("# Penguins\n\nEmperor penguins huddle together in Antarctic winter.\n")
        wait_until(lambda: bool(search("penguins", "bm25").hits), what="keyword search to find the note")
        hybrid = search("birds that live in the cold", "hybrid")
        assert hybrid.vectors_pending >= 1
        assert "chunks are not embedded yet; their text is found by keywords only" in " ".join(hybrid.warnings)
        assert daemon.snapshot()["vectors_pending"] >= 1 and not daemon.snapshot()["idle"]
        daemon.embedder = EmbedWorker(daemon.service, daemon.writer)
        daemon.writer.on_change = daemon.embedder.wake
        daemon.embedder.start()
        daemon.embedder.wake()

        def found_by_meaning() -> bool:
            hits = search("birds that live in the cold", "vector").hits
            return bool(hits) and hits[0].path == "notes/penguins.md"

        wait_until(found_by_meaning, what="vector search to find the note")
        assert daemon.snapshot()["vectors_pending"] == 0
    finally:
        reader.close()
        daemon.stop()


def test_a_rename_moves_vectors_and_embeds_nothing(tmp_path: Path, daemon_factory) -> None:
    root = make_corpus(tmp_path)
    daemon = daemon_factory(root, daemon_env(lexical=False)).start()
    embedded = daemon.status().embedder["embedded"]
    os.rename(root / "notes/bread.md", root / "notes/sourdough.md")
    wait_until(lambda: daemon.status().writer["files_changed"] >= 2, what="the rename")  # startup + rename
    status = daemon.wait_idle()
    assert status.embedder["embedded"] == embedded
    code, body, _ = daemon.cli("search", "letting dough rise", "-m", "vector", "-k", "1")
    assert code == 0 and body["hits"][0]["path"] == "notes/sourdough.md"
    assert daemon.stop() == 0


def test_a_rename_that_changes_what_the_embedder_is_given_replaces_the_stale_vector(
    tmp_path: Path, daemon_factory
) -> None:
    root = tmp_path / "corpus"
    (root / "notes").mkdir(parents=True)
    # The title comes from the heading and equals the file name: the embedder is given it only once
    # the note has another name.
    (root / "notes/Bread.md").write_text("Knead the dough and let it rise overnight.\n\n# Bread\n\nBake it hot.\n")
    daemon = daemon_factory(root, daemon_env(lexical=False)).start()
    embedded = daemon.status().embedder["embedded"]
    os.rename(root / "notes/Bread.md", root / "notes/sourdough.md")
    wait_until(lambda: daemon.status().writer["files_changed"] >= 2, what="the rename")  # startup + rename
    status = daemon.wait_idle()
    assert status.embedder["embedded"] == embedded + 1
    code, body, _ = daemon.cli("status")
    assert code == 0 and (body["chunks"], body["vectors"], body["vectors_stale"], body["vectors_pending"]) == (
        1,
        1,
        0,
        0,
    )
    assert daemon.stop() == 0
