"""A fake OpenAI-compatible chat server on 127.0.0.1, scripted answer by answer, for tests.

    from support.fake_llm import FakeLlm, ok, slow, status

    with FakeLlm() as llm:
        llm.script(status(500), ok({"title": "Tuesday"}), hang())
        client = LlmClient(llm.url, "fake-model", timeout_s=DEADLINE_S)
        client.complete_json("system", "user", schema, name="digest")   # 500, retried, then the object
        assert llm.requests[-1].body["messages"][1]["content"] == "user"

Timeouts: a client that must get its answers gets a generous timeout (support.waiting.DEADLINE_S: on a
busy machine even a local answer can take a while); only a test about timeouts uses a short one, against `hang()`,
which never answers, so the timeout is the only way the call can end, however slow the machine.

Every POST to /v1/chat/completions takes the next scripted `Reply`; when the script is used up the
`default` answers (a Reply, or a function of the request returning one, or, when None, HTTP 500 saying
the script ran out). Every request is recorded in `requests`, including rejected and dropped ones.
GET /v1/models lists the one model. `FakeLlm(rejects_response_format=True)` answers HTTP 400 to any
request carrying `response_format` without using up the script, like servers that do not support it.

Replies: ok(obj_or_text), empty(), malformed(), slow(seconds, then=...), hang(), status(code, body), drop().
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHAT_PATH = "/v1/chat/completions"
NEVER_S = 24 * 3600.0  # a hang() reply's delay; shutting the server down ends it


@dataclass(frozen=True)
class Reply:
    """One scripted answer. `content` becomes the assistant message of an HTTP 200 chat completion
    unless `status`/`body` say otherwise; `delay_s` waits first; `drop` closes the socket unanswered."""

    content: str | None = None
    finish_reason: str = "stop"
    status: int = 200
    body: str | None = None
    delay_s: float = 0.0
    drop: bool = False


@dataclass(frozen=True)
class Request:
    """One request as the fake server saw it (header names in lower case)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages", []) if isinstance(self.body, dict) else []


def ok(answer: Any, finish_reason: str = "stop") -> Reply:
    """The model answers `answer`: a str is sent as-is, anything else as its JSON."""
    content = answer if isinstance(answer, str) else json.dumps(answer)
    return Reply(content=content, finish_reason=finish_reason)


def empty() -> Reply:
    return Reply(content="")


def malformed() -> Reply:
    return Reply(content="this is not json {")


def slow(seconds: float, then: Reply | None = None) -> Reply:
    """Wait `seconds` before answering `then` (an empty object by default)."""
    base = then if then is not None else ok({})
    return Reply(
        content=base.content,
        finish_reason=base.finish_reason,
        status=base.status,
        body=base.body,
        drop=base.drop,
        delay_s=seconds,
    )


def hang() -> Reply:
    """Never answer (the server closes the connection only when it shuts down): the client times out."""
    return slow(NEVER_S)


def status(code: int, body: Any = "") -> Reply:
    """HTTP `code` with `body` (a str as-is, anything else as JSON) instead of a chat completion."""
    return Reply(status=code, body=body if isinstance(body, str) else json.dumps(body))


def drop() -> Reply:
    """Close the connection without answering (the client sees a lost connection)."""
    return Reply(drop=True)


def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (connections are refused at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def chat_completion(model: str, reply: Reply) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.content},
                "finish_reason": reply.finish_reason,
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


class _Server(ThreadingHTTPServer):
    # The default listen backlog (5) drops connections under concurrent tests; the kernel then
    # retries them a second later, which looks like a slow server.
    request_queue_size = 128


@dataclass
class FakeLlm:
    """The server. Use as a context manager; `url` is the base URL (no /v1), `v1_url` has /v1."""

    model: str = "fake-model"
    default: Reply | Callable[[Request], Reply] | None = None
    rejects_response_format: bool = False
    requests: list[Request] = field(default_factory=list)
    _script: list[Reply] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _closing: threading.Event = field(default_factory=threading.Event)
    _server: _Server | None = None
    _thread: threading.Thread | None = None

    def __enter__(self) -> FakeLlm:
        self._server = _Server(("127.0.0.1", 0), _handler_for(self))
        # A short poll interval: shutdown() waits for it, at the end of every test.
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), name="fake-llm", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._closing.set()  # wakes slow() replies so shutdown does not wait for them
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    @property
    def url(self) -> str:
        assert self._server is not None, "use FakeLlm as a context manager"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def v1_url(self) -> str:
        return self.url + "/v1"

    @property
    def chat_requests(self) -> list[Request]:
        return [r for r in self.requests if r.path == CHAT_PATH]

    def script(self, *replies: Reply) -> FakeLlm:
        """Queue replies, used one per chat request in order."""
        with self._lock:
            self._script.extend(replies)
        return self

    def record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def next_reply(self, request: Request) -> Reply:
        """Record the request and choose its reply (the server calls this; tests rarely need to)."""
        self.record(request)
        with self._lock:
            if self.rejects_response_format and isinstance(request.body, dict) and "response_format" in request.body:
                error = {"error": {"message": "unknown field: response_format is not supported", "code": 400}}
                return status(400, error)
            if self._script:
                return self._script.pop(0)
        if self.default is None:
            return status(500, {"error": {"message": "fake llm: the script ran out"}})
        return self.default(request) if callable(self.default) else self.default


def _handler_for(fake: FakeLlm) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            pass

        def do_GET(self) -> None:
            if self.path == "/v1/models":
                self._send(200, json.dumps({"object": "list", "data": [{"id": fake.model, "object": "model"}]}))
            else:
                self._send(404, '{"error": {"message": "not found"}}')

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length", "0")))
            try:
                body: Any = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
            request = Request("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            if self.path != CHAT_PATH:
                fake.record(request)
                self._send(404, '{"error": {"message": "not found"}}')
                return
            reply = fake.next_reply(request)
            if reply.delay_s and fake._closing.wait(reply.delay_s):
                return  # the server is shutting down
            if reply.drop:
                self.close_connection = True
                return
            text = reply.body if reply.body is not None else json.dumps(chat_completion(fake.model, reply))
            self._send(reply.status, text)

        def _send(self, code: int, text: str) -> None:
            data = text.encode("utf-8")
            try:
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test): nothing to answer

    return Handler
