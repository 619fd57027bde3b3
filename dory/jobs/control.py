"""The daemon's control socket: how other processes ask the index's owner to do something.

A Unix socket beside the index (mode 0600). One request per connection: a JSON line
`{"op": ..., "args": {...}}`, answered by one JSON line, `{"result": ...}` or `{"error": {...}}`
with the same error codes as everywhere else. `dory reindex` and `dory ops run` use it while a
daemon runs, so there is still exactly one writer.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import socket
import socketserver
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dory.config import Settings
from dory.errors import DaemonNotRunning, DoryError, UsageError, error_from_dict

log = logging.getLogger("dory.control")
MAX_REQUEST_BYTES = 1_000_000
# sun_path holds 108 bytes on Linux; deep state folders get a socket in the temp folder instead.
MAX_SOCKET_PATH = 100

Handler = Callable[[dict[str, Any]], Any]


def socket_path(settings: Settings) -> Path:
    path = settings.state_dir / "daemon.sock"
    if len(os.fsencode(path)) <= MAX_SOCKET_PATH:
        return path
    digest = hashlib.sha256(os.fsencode(settings.state_dir)).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"dory-{os.getuid()}-{digest}.sock"


class _RequestHandler(socketserver.StreamRequestHandler):
    server: ControlServer

    def handle(self) -> None:
        line = self.rfile.readline(MAX_REQUEST_BYTES + 1)
        try:
            if len(line) > MAX_REQUEST_BYTES:
                raise UsageError("control request is too large")
            request = json.loads(line)
            if not isinstance(request, dict) or not isinstance(request.get("op"), str):
                raise UsageError('a control request is {"op": NAME, "args": {...}}')
            reply: dict[str, Any] = {"result": self.server.dispatch(request["op"], request.get("args") or {})}
        except DoryError as exc:
            reply = {"error": exc.to_dict()}
        except json.JSONDecodeError as exc:
            reply = {"error": UsageError(f"control request is not JSON: {exc}").to_dict()}
        except Exception as exc:
            log.exception("control request failed")
            reply = {"error": DoryError(f"the daemon failed to handle the request: {exc}").to_dict()}
        self.wfile.write(json.dumps(reply, ensure_ascii=False, default=str).encode() + b"\n")


class ControlServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    # The default backlog of 5 makes a sixth simultaneous client's connect() fail with EAGAIN.
    request_queue_size = 128

    def __init__(self, path: Path, handlers: dict[str, Handler]) -> None:
        self.path = path
        self.handlers = handlers
        if path.exists() or path.is_symlink():
            path.unlink()  # left by a daemon that died; we hold the writer lock, so it is not live
        super().__init__(str(path), _RequestHandler)
        os.chmod(path, 0o600)
        self._thread = threading.Thread(target=self.serve_forever, name="dory-control", daemon=True)

    def dispatch(self, op: str, args: dict[str, Any]) -> Any:
        handler = self.handlers.get(op)
        if handler is None:
            raise UsageError(f"unknown control operation {op!r}", op=op)
        return handler(args)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def call(settings: Settings, op: str, args: dict[str, Any] | None = None, timeout_s: float | None = 5.0) -> Any:
    """Ask the running daemon; raises DaemonNotRunning when none answers, or the daemon's error."""
    path = socket_path(settings)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout_s)
    try:
        sock.connect(str(path))
        sock.sendall(json.dumps({"op": op, "args": args or {}}).encode() + b"\n")
        with sock.makefile("rb") as stream:
            line = stream.readline()
    except (FileNotFoundError, ConnectionRefusedError) as exc:
        raise DaemonNotRunning("no Dory daemon is running for this corpus (start it with `dory ops watch`)") from exc
    except TimeoutError as exc:
        raise DaemonNotRunning(f"the Dory daemon did not answer {op!r} within {timeout_s} s") from exc
    except OSError as exc:  # reset or broken pipe: the daemon is stopping or was killed
        raise DaemonNotRunning(f"the Dory daemon dropped the connection ({exc.strerror or exc})") from exc
    finally:
        sock.close()
    if not line:
        raise DaemonNotRunning("the Dory daemon closed the connection (it may be stopping)")
    reply = json.loads(line)
    if "error" in reply:
        raise error_from_dict(reply["error"])
    return reply["result"]
