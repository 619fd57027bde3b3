"""A fake OpenAI-compatible /v1/embeddings server on 127.0.0.1 that answers only as many requests as
the test allows: the rest wait, so a daemon's embedder can be held in the middle of a backlog and
observed there, without any timing.

    with GatedEmbeddings(dims=8) as server:
        server.allow(3)            # three requests are answered; the fourth waits
        ...                        # observe the daemon with its backlog
        server.allow(None)         # everything is answered from now on

Vectors are deterministic in the text. Closing the server releases whatever still waits (with HTTP 503).
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np


def vector_for(text: str, dims: int) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).normal(size=dims).round(6).tolist()


class GatedEmbeddings:
    def __init__(self, dims: int = 8) -> None:
        self.dims = dims
        self.answered = 0
        self._allowed: int | None = 0
        self._closing = False
        self._cond = threading.Condition()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> GatedEmbeddings:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def allow(self, total: int | None) -> None:
        """Answer `total` requests in all (counting those already answered); None: all of them."""
        with self._cond:
            self._allowed = total
            self._cond.notify_all()

    def admit(self) -> bool:
        """Wait until this request may be answered; False when the server closes first."""
        with self._cond:
            self._cond.wait_for(lambda: self._closing or self._allowed is None or self.answered < self._allowed)
            if self._closing:
                return False
            self.answered += 1
            return True

    def answer(self, payload: dict[str, Any]) -> dict[str, Any]:
        data = [
            {"object": "embedding", "index": i, "embedding": vector_for(text, self.dims)}
            for i, text in enumerate(payload["input"])
        ]
        return {"object": "list", "data": data, "model": payload.get("model")}


def _handler_for(server: GatedEmbeddings) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            pass

        def do_POST(self) -> None:
            payload = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
            if self.path != "/v1/embeddings":
                self._send(404, {"error": "not found"})
            elif server.admit():
                self._send(200, server.answer(payload))
            else:
                self._send(503, {"error": "shutting down"})

        def _send(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
