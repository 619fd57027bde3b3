"""The OpenAI-compatible backend against a real HTTP server started by the test."""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from dory.errors import ConfigError, EmbeddingEndpointError
from dory.index.embedders import EmbedderSettings, load_embedder
from dory.index.embedders.base import fingerprint_key
from dory.index.embedders.openai_compat import OpenAICompatEmbedder
from dory.llm.endpoint import endpoint_url

# ---------------------------------------------------------------------------------------------------
# A fake OpenAI-compatible /v1/embeddings server on 127.0.0.1 (ephemeral port).


def fake_vector(text: str, dims: int) -> list[float]:
    """Deterministic, text-dependent, not normalised (so the client's normalisation is visible)."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return (np.random.default_rng(seed).normal(size=dims) * 3.0).round(6).tolist()


@dataclass
class Canned:
    """A scripted answer; used once, in order, before the server falls back to real answers."""

    status: int
    body: str
    content_type: str = "application/json"


@dataclass
class FakeEmbeddingServer:
    dims: int = 4
    reverse_order: bool = False  # answer items in reverse order (with correct "index" fields)
    canned: list[Canned] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    url: str = ""

    def answer(self, payload: dict[str, Any]) -> Canned:
        if self.canned:
            return self.canned.pop(0)
        items = [
            {"object": "embedding", "index": i, "embedding": fake_vector(text, self.dims)}
            for i, text in enumerate(payload["input"])
        ]
        if self.reverse_order:
            items.reverse()
        return Canned(200, json.dumps({"object": "list", "data": items, "model": payload["model"]}))


@pytest.fixture
def fake_server() -> Iterator[FakeEmbeddingServer]:
    server_state = FakeEmbeddingServer()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            payload = json.loads(self.rfile.read(length))
            server_state.requests.append(payload)
            server_state.headers.append(dict(self.headers))
            if self.path != "/v1/embeddings":
                reply = Canned(404, '{"error": "not found"}')
            else:
                reply = server_state.answer(payload)
            body = reply.body.encode()
            self.send_response(reply.status)
            self.send_header("content-type", reply.content_type)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output quiet

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    server_state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        yield server_state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def make(server: FakeEmbeddingServer, **kwargs: object) -> OpenAICompatEmbedder:
    options: dict[str, object] = {"retry_backoff_s": 0.01, "token_counter": len}
    options.update(kwargs)
    return OpenAICompatEmbedder(server.url, "fake-embed", **options)  # type: ignore[arg-type]


def expected(text: str, dims: int = 4) -> np.ndarray:
    vector = np.array(fake_vector(text, dims), dtype=np.float32)
    return vector / np.linalg.norm(vector)


def test_url_forms_all_reach_v1_embeddings() -> None:
    for base in ("http://h:1", "http://h:1/", "http://h:1/v1", "http://h:1/v1/"):
        assert endpoint_url(base, "embeddings") == "http://h:1/v1/embeddings"


def test_happy_path_normalises_and_sends_model_and_key(fake_server: FakeEmbeddingServer) -> None:
    embedder = make(fake_server, api_key="sekret")
    vectors = embedder.embed_documents(["alpha", "beta"])
    assert vectors.dtype == np.float32 and vectors.shape == (2, 4)
    np.testing.assert_allclose(vectors[0], expected("alpha"), atol=1e-6)
    np.testing.assert_allclose(vectors[1], expected("beta"), atol=1e-6)
    np.testing.assert_allclose(embedder.embed_query("alpha"), expected("alpha"), atol=1e-6)
    assert fake_server.requests[0] == {"model": "fake-embed", "input": ["alpha", "beta"]}
    assert fake_server.headers[0]["Authorization"] == "Bearer sekret"


def test_base_url_with_v1_suffix(fake_server: FakeEmbeddingServer) -> None:
    embedder = OpenAICompatEmbedder(fake_server.url + "/v1/", "fake-embed", token_counter=len)
    assert embedder.embed_documents(["x"]).shape == (1, 4)


def test_batches_requests_and_keeps_order(fake_server: FakeEmbeddingServer) -> None:
    fake_server.reverse_order = True  # items come back reversed; "index" says where they belong
    texts = [f"text {i}" for i in range(5)]
    vectors = make(fake_server, batch_size=2).embed_documents(texts)
    assert [len(r["input"]) for r in fake_server.requests] == [2, 2, 1]
    for row, text in zip(vectors, texts, strict=True):
        np.testing.assert_allclose(row, expected(text), atol=1e-6)


def test_retries_a_503_then_succeeds(fake_server: FakeEmbeddingServer) -> None:
    fake_server.canned = [Canned(503, "busy", "text/plain")]
    vectors = make(fake_server).embed_documents(["retry me"])
    assert len(fake_server.requests) == 2
    np.testing.assert_allclose(vectors[0], expected("retry me"), atol=1e-6)


def test_gives_up_after_two_retries(fake_server: FakeEmbeddingServer) -> None:
    fake_server.canned = [Canned(500, "boom", "text/plain")] * 3
    with pytest.raises(EmbeddingEndpointError, match="HTTP 500: boom") as info:
        make(fake_server).embed_documents(["x"])
    assert len(fake_server.requests) == 3
    assert info.value.code == "embedding_endpoint_error"
    assert info.value.details["status"] == 500


def test_client_errors_are_not_retried(fake_server: FakeEmbeddingServer) -> None:
    fake_server.canned = [Canned(400, '{"error": "model not found"}')]
    with pytest.raises(EmbeddingEndpointError, match="HTTP 400"):
        make(fake_server).embed_documents(["x"])
    assert len(fake_server.requests) == 1


def test_wrong_dims_is_an_error(fake_server: FakeEmbeddingServer) -> None:
    with pytest.raises(EmbeddingEndpointError, match="4-dimensional vectors but dims is configured as 8"):
        make(fake_server, dims=8).embed_documents(["x"])


def test_non_json_body_is_an_error(fake_server: FakeEmbeddingServer) -> None:
    fake_server.canned = [Canned(200, "<html>proxy login</html>", "text/html")]
    with pytest.raises(EmbeddingEndpointError, match=r"not JSON \(content-type 'text/html'\): <html>proxy"):
        make(fake_server).embed_documents(["x"])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('{"error": "nope"}', "without a 'data' list"),
        ('{"data": []}', "returned 0 embeddings for 1 inputs"),
        ('{"data": [{"embedding": "abc"}]}', "without an 'embedding' list"),
        ('{"data": [{"embedding": ["0.5", 1]}]}', "not lists of numbers"),
        ('{"data": [{"embedding": []}]}', "differing or zero length"),
        ('{"data": [{"index": 3, "embedding": [1.0]}]}', "'index' values"),
    ],
)
def test_wrong_shapes_are_errors(fake_server: FakeEmbeddingServer, body: str, message: str) -> None:
    fake_server.canned = [Canned(200, body)]
    with pytest.raises(EmbeddingEndpointError, match=message):
        make(fake_server).embed_documents(["x"])


def test_vectors_of_differing_lengths_are_an_error(fake_server: FakeEmbeddingServer) -> None:
    fake_server.canned = [Canned(200, '{"data": [{"embedding": [1, 2]}, {"embedding": [1, 2, 3]}]}')]
    with pytest.raises(EmbeddingEndpointError, match=r"differing or zero length: \[2, 3\]"):
        make(fake_server).embed_documents(["a", "b"])


def test_connection_refused_is_an_endpoint_error() -> None:
    with socket.socket() as probe:  # grab a free port, then close it so nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    embedder = OpenAICompatEmbedder(f"http://127.0.0.1:{port}", "m", retry_backoff_s=0.01, token_counter=len)
    with pytest.raises(EmbeddingEndpointError, match="is unreachable") as info:
        embedder.embed_query("x")
    assert info.value.code == "embedding_endpoint_error"
    assert info.value.http_status == 503


def test_dims_are_discovered_lazily_and_fingerprint_ignores_url(fake_server: FakeEmbeddingServer) -> None:
    embedder = make(fake_server)
    assert fake_server.requests == []  # constructing costs nothing
    fingerprint = embedder.fingerprint()
    assert fingerprint == {
        "model": "openai-compatible:fake-embed",
        "revision": "",
        "dims": 4,
        "query_prefix": "",
        "doc_prefix": "",
    }
    assert len(fake_server.requests) == 1  # one probe request to learn the dimensions
    elsewhere = OpenAICompatEmbedder("http://other-host:9999", "fake-embed", dims=4, token_counter=len)
    assert fingerprint_key(elsewhere.fingerprint()) == fingerprint_key(fingerprint)


def test_factory_builds_it_and_checks_settings(fake_server: FakeEmbeddingServer) -> None:
    embedder = load_embedder(EmbedderSettings(backend="openai", url=fake_server.url, model="fake-embed"))
    assert isinstance(embedder, OpenAICompatEmbedder)
    assert embedder.embed_documents(["x"]).shape == (1, 4)
    assert isinstance(embedder.count_tokens("a few words here"), int)
    with pytest.raises(ConfigError, match="needs a url"):
        load_embedder(EmbedderSettings(backend="openai", model="m"))
    with pytest.raises(ConfigError, match="needs a model"):
        load_embedder(EmbedderSettings(backend="openai", url=fake_server.url))
    with pytest.raises(ConfigError, match="must start with http"):
        load_embedder(EmbedderSettings(backend="openai", url="localhost:11434", model="m"))
