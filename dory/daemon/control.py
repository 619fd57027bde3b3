"""The daemon's control socket, server side: one thread per connection, one request each.

The wire format and the client are in dory.service.control. A request names an operation the
daemon registered (`reindex`, `run_job`, `write`, `wake`); the handler's result or its DoryError goes
back as one JSON line. A failure the handler did not expect is logged, answered as an internal error
(so the client never waits on a broken connection) and kept as the control part's last error.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socketserver
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pydantic

from dory.daemon.health import PartHealth, guarded
from dory.errors import DoryError, UsageError, from_validation_error
from dory.models.common import loads_json
from dory.service.control import MAX_REQUEST_BYTES

log = logging.getLogger("dory.control")
Handler = Callable[[dict[str, Any]], Any]


class _RequestHandler(socketserver.StreamRequestHandler):
    server: ControlServer

    def handle(self) -> None:
        line = self.rfile.readline(MAX_REQUEST_BYTES + 1)
        try:
            if len(line) > MAX_REQUEST_BYTES:
                raise UsageError("control request is too large")
            request = _request(line)
            if not isinstance(request, dict) or not isinstance(request.get("op"), str):
                raise UsageError('a control request is {"op": NAME, "args": {...}}')
            reply: dict[str, Any] = {"result": self.server.dispatch(request["op"], request.get("args") or {})}
        except DoryError as exc:
            reply = {"error": exc.to_dict()}
        except pydantic.ValidationError as exc:  # a request that does not fit its model
            reply = {"error": from_validation_error(exc).to_dict()}
        except Exception as exc:
            log.exception("control request failed")
            self.server.health.error(f"a control request failed: {type(exc).__name__}: {exc}")
            reply = {"error": DoryError(f"the daemon failed to handle the request: {exc}").to_dict()}
        self.wfile.write(json.dumps(reply, ensure_ascii=False, default=str).encode() + b"\n")


def _request(line: bytes) -> Any:
    """The request on a line. Nesting is left to the request models (a write's frontmatter has its
    own bound); only JSON the parser cannot hold is refused here, as a usage error."""
    try:
        return loads_json(line, limit=None)
    except ValueError as exc:
        raise UsageError(f"control request is not JSON: {exc}") from exc


class ControlServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    # The default backlog of 5 makes a sixth simultaneous client's connect() fail with EAGAIN.
    request_queue_size = 128

    def __init__(self, path: Path, handlers: dict[str, Handler]) -> None:
        self.path = path
        self.handlers = handlers
        self.health = PartHealth()
        if path.exists() or path.is_symlink():
            path.unlink()  # left by a daemon that died; we hold the writer lock, so it is not live
        super().__init__(str(path), _RequestHandler)
        os.chmod(path, 0o600)
        serve = guarded(self.health, "control", self.serve_forever)
        self._thread = threading.Thread(target=serve, name="dory-control", daemon=True)

    def dispatch(self, op: str, args: dict[str, Any]) -> Any:
        handler = self.handlers.get(op)
        if handler is None:
            raise UsageError(f"unknown control operation {op!r}", op=op)
        return handler(args)

    def start(self) -> None:
        self._thread.start()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
