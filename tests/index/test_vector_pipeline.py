"""The vector side end to end: embedding cache, renames, FAISS repair, fingerprints, missing models.

Most tests use a real OpenAI-compatible HTTP server started on 127.0.0.1 by the test (hashed
bag-of-words vectors: deterministic, and similar texts get similar vectors), so they need no model;
the MiniLM ones are marked `model`.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from dory.config import load_settings
from dory.errors import ModelUnavailable
from dory.index import vector_pass
from dory.models import ReindexRequest, SearchRequest
from dory.service import DoryService
from dory.service.owner import local_ownership

DIMS = 64


def bag_of_words(text: str) -> list[float]:
    vector = np.zeros(DIMS)
    for word in re.findall(r"\w+", text.lower()):
        vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % DIMS] += 1.0
    return (vector + 1e-3).tolist()


class EmbeddingServer:
    def __init__(self) -> None:
        self.texts_embedded = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.texts_embedded += len(body["input"])
                data = [{"index": i, "embedding": bag_of_words(t)} for i, t in enumerate(body["input"])]
                payload = json.dumps({"data": data, "model": body["model"]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                return None

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    srv = EmbeddingServer()
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()


NOTES = {
    "garden/tomatoes.md": "# Tomatoes\n\nWater tomato plants deeply twice a week in summer.\n",
    "garden/roses.md": "# Roses\n\nPrune roses in late winter before new growth starts.\n",
    "kitchen/bread.md": "# Bread\n\nKnead the dough for ten minutes and let it rise overnight.\n",
}


def open_service(root: Path, server: EmbeddingServer, model: str = "bow-1") -> DoryService:
    toml = f'[embedder]\nbackend = "openai"\nurl = "{server.url}"\nmodel = "{model}"\n'
    (root / "dory.toml").write_text(toml)
    return DoryService(load_settings(root, env={}))


def vector_paths(svc: DoryService, query: str) -> list[str]:
    return [h.path for h in svc.search(SearchRequest(query=query, mode="vector", k=3)).hits]


def test_openai_backend_selected_in_dory_toml_builds_and_searches_vectors(write_corpus, server) -> None:
    svc = open_service(write_corpus(NOTES), server)
    res = svc.reindex(ReindexRequest())
    assert (res.vectors_embedded, res.vectors_pending) == (3, 0)
    assert vector_paths(svc, "prune roses winter")[0] == "garden/roses.md"
    status = svc.status()
    assert status.fingerprint_matches and status.vectors == 3
    assert status.fingerprint is not None and status.fingerprint["model"] == "openai-compatible:bow-1"


def test_rename_and_unchanged_text_are_never_re_embedded(write_corpus, server) -> None:
    root = write_corpus(NOTES)
    svc = open_service(root, server)
    svc.reindex(ReindexRequest())
    before = server.texts_embedded
    (root / "garden/tomatoes.md").rename(root / "garden/tomato-care.md")
    res = svc.reindex(ReindexRequest())
    assert (res.renamed, res.vectors_embedded) == (1, 0)
    full = svc.reindex(ReindexRequest(full=True))  # re-chunks everything, embeds nothing new
    assert (full.vectors_embedded, full.vectors_reused) == (0, 3)
    assert server.texts_embedded == before  # not one text went to the embedding server
    assert vector_paths(svc, "water tomato plants")[0] == "garden/tomato-care.md"


# Its title comes from its heading and equals the file name, so the embedder is not given it (it
# looks made up from the name); renamed, the same title is no longer the name and is given.
TITLE_IS_THE_NAME = {"garden/Tomatoes.md": "Water tomato plants deeply twice a week.\n\n# Tomatoes\n\nStake early.\n"}


def chunk_vectors(svc: DoryService) -> dict[tuple[str, int], np.ndarray]:
    """Each chunk's vector in the saved FAISS file, by (note path, chunk ordinal)."""
    rows = svc.resources.store().conn.execute(
        "SELECT c.id, f.path, c.ordinal FROM chunks c JOIN files f ON f.id = c.file_id"
    )
    vectors = svc.resources.vectors()
    return {(row[1], row[2]): vectors.index.reconstruct(row[0]) for row in rows.fetchall()}


def fresh_vectors(root: Path, server: EmbeddingServer, tmp_path: Path) -> dict[tuple[str, int], np.ndarray]:
    """The vectors a from-scratch index of the same notes gives."""
    copy = tmp_path / "fresh"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".dory"))
    svc = open_service(copy, server)
    svc.reindex(ReindexRequest())
    try:
        return chunk_vectors(svc)
    finally:
        svc.close()


def assert_same_vectors(got: dict[tuple[str, int], np.ndarray], want: dict[tuple[str, int], np.ndarray]) -> None:
    assert got.keys() == want.keys()
    for key, vector in want.items():
        np.testing.assert_array_equal(got[key], vector, err_msg=str(key))


def test_rename_that_changes_what_the_embedder_is_given_replaces_the_stale_vectors(
    write_corpus, server, tmp_path
) -> None:
    root = write_corpus(TITLE_IS_THE_NAME)
    svc = open_service(root, server)
    svc.reindex(ReindexRequest())
    (root / "garden/Tomatoes.md").rename(root / "garden/summer-care.md")
    assert svc.reindex(ReindexRequest(vectors=False)).renamed == 1
    before = svc.status()
    assert before.vectors_stale == before.vectors_pending == before.vectors == before.chunks > 0
    embedded = svc.reindex(ReindexRequest())
    assert (embedded.vectors_embedded, embedded.vectors_pending) == (before.chunks, 0)
    after = svc.status()
    assert (after.vectors_stale, after.vectors_pending, after.vectors) == (0, 0, after.chunks)
    assert_same_vectors(chunk_vectors(svc), fresh_vectors(root, server, tmp_path))


def test_changed_title_frontmatter_re_embeds_chunks_whose_text_did_not_change(write_corpus, server, tmp_path) -> None:
    note = "---\ntitle: Tomato care\n---\n\nWater tomato plants deeply twice a week.\n"
    root = write_corpus({"garden/tomatoes.md": note})
    svc = open_service(root, server)
    svc.reindex(ReindexRequest())
    (root / "garden/tomatoes.md").write_text(note.replace("Tomato care", "Summer watering"))
    assert svc.reindex(ReindexRequest(vectors=False)).changed == 1
    before = svc.status()
    assert (before.vectors_pending, before.vectors_stale) == (before.chunks, 0)  # new chunk rows, no vector yet
    assert svc.reindex(ReindexRequest()).vectors_embedded == before.chunks
    assert (svc.status().vectors_stale, svc.status().vectors_pending) == (0, 0)
    assert_same_vectors(chunk_vectors(svc), fresh_vectors(root, server, tmp_path))


def test_crash_after_a_vector_is_replaced_and_before_faiss_is_saved_is_repaired_from_the_cache(
    write_corpus, server, tmp_path
) -> None:
    root = write_corpus(TITLE_IS_THE_NAME)
    svc = open_service(root, server)
    svc.reindex(ReindexRequest())
    (root / "garden/Tomatoes.md").rename(root / "garden/summer-care.md")
    svc.reindex(ReindexRequest(vectors=False))
    with local_ownership(svc.owner, 0):
        vectors = svc.owner.owned_vectors([])
        assert vectors is not None
        fingerprint = svc.resources.fingerprint()
        batch = vector_pass.embed_batch(svc.resources.store(), svc.resources.require_embedder(), fingerprint, 10)
        assert batch is not None
        svc.owner.store_vectors(vectors, fingerprint, batch)  # SQLite records it; the FAISS file is not saved
    svc.close()
    embedded = server.texts_embedded
    again = open_service(root, server)
    assert again.reindex(ReindexRequest()).vectors_embedded == 0
    assert server.texts_embedded == embedded + 1  # the embedder's dimensions, asked once; no note re-embedded
    assert_same_vectors(chunk_vectors(again), fresh_vectors(root, server, tmp_path))


def test_deleted_or_corrupt_faiss_file_is_rebuilt_from_the_cache(write_corpus, server) -> None:
    root = write_corpus(NOTES)
    svc = open_service(root, server)
    svc.reindex(ReindexRequest())
    expected = vector_paths(svc, "knead dough")
    svc.close()
    embedded = server.texts_embedded
    faiss_file = svc.settings.faiss_path
    for damage in (faiss_file.unlink, lambda: faiss_file.write_bytes(b"not a faiss index")):
        if faiss_file.exists():
            damage()
        else:
            faiss_file.write_bytes(b"garbage")
        fresh = open_service(root, server)
        assert vector_paths(fresh, "knead dough") == expected
        fresh.close()
    # Each fresh service asks the endpoint once for its dimensions and once for the query vector;
    # none of the three notes was embedded again.
    assert server.texts_embedded == embedded + 4


def test_deleting_dory_folder_and_full_reindex_gives_the_same_results(write_corpus, server) -> None:
    root = write_corpus(NOTES)
    svc = open_service(root, server)
    svc.reindex(ReindexRequest())
    queries = ["roses", "dough rise", "summer watering"]
    before = {q: [(h.path, h.start_line, h.end_line) for h in svc.search(SearchRequest(query=q)).hits] for q in queries}
    svc.close()
    shutil.rmtree(root / ".dory")
    again = open_service(root, server)
    again.reindex(ReindexRequest(full=True))
    after = {
        q: [(h.path, h.start_line, h.end_line) for h in again.search(SearchRequest(query=q)).hits] for q in queries
    }
    assert after == before


def test_changed_fingerprint_degrades_to_keywords_until_reindex(write_corpus, server) -> None:
    root = write_corpus(NOTES)
    open_service(root, server, model="bow-1").reindex(ReindexRequest())
    svc = open_service(root, server, model="bow-2")
    res = svc.search(SearchRequest(query="roses"))
    assert res.hits[0].path == "garden/roses.md"
    assert res.warnings == [
        "vector search unavailable, results are keyword-only: the embedding model changed "
        "since vectors were built; `dory reindex` rebuilds them"
    ]
    assert not svc.status().fingerprint_matches
    rebuilt = svc.reindex(ReindexRequest())
    assert rebuilt.vectors_embedded == 3
    assert svc.search(SearchRequest(query="roses")).warnings == []


def test_unreachable_endpoint_keeps_lexical_indexing_and_search_working(write_corpus) -> None:
    root = write_corpus(NOTES)
    (root / "dory.toml").write_text(
        '[embedder]\nbackend = "openai"\nurl = "http://127.0.0.1:9"\nmodel = "m"\ntimeout_s = 2\n'
    )
    svc = DoryService(load_settings(root, env={}))
    res = svc.reindex(ReindexRequest())
    assert res.new == 3 and res.warnings and res.warnings[0].startswith("vectors not built:")
    hybrid = svc.search(SearchRequest(query="roses"))
    assert hybrid.hits[0].path == "garden/roses.md"
    assert hybrid.warnings[0].startswith("vector search unavailable")


def test_missing_model_is_one_clear_error_and_lexical_search_still_works(write_corpus, tmp_path) -> None:
    root = write_corpus(NOTES)
    empty_model = tmp_path / "no-model"
    empty_model.mkdir()
    svc = DoryService(load_settings(root, {"embedder.model_path": str(empty_model)}, env={}))
    res = svc.reindex(ReindexRequest())
    assert res.new == 3 and "dory models install" in res.warnings[0]
    assert svc.search(SearchRequest(query="roses", mode="bm25")).hits[0].path == "garden/roses.md"
    assert svc.search(SearchRequest(query="roses")).hits[0].path == "garden/roses.md"
    with pytest.raises(ModelUnavailable, match="dory models install"):
        svc.search(SearchRequest(query="roses", mode="vector"))


@pytest.mark.model
def test_minilm_finds_a_paraphrase_with_no_shared_words(write_corpus) -> None:
    root = write_corpus(NOTES)
    svc = DoryService(load_settings(root, env={}))
    res = svc.reindex(ReindexRequest())
    assert res.vectors_embedded == 3
    assert vector_paths(svc, "how often should I irrigate my vegetable garden")[0] == "garden/tomatoes.md"
    assert svc.search(SearchRequest(query="baking a loaf at home")).hits[0].path == "kitchen/bread.md"
