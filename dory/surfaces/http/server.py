"""`dory serve`: one process that is the daemon (watcher, single writer, embedder, scheduler, control
socket) and serves HTTP beside it, so there is exactly one writer of the index and an HTTP write goes
straight to the writer thread.

Order: refuse a non-loopback address without tokens; bind the socket (a port in use fails before
anything else starts); start the daemon; serve until SIGTERM / Ctrl-C (uvicorn's own handlers); stop
the daemon, which finishes what it has queued.
"""

from __future__ import annotations

import ipaddress
import logging
import signal
import socket
import threading
from types import FrameType

import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send

from dory.config import Settings
from dory.daemon.process import Daemon, ignore_stop_signals
from dory.errors import DoryError, UsageError
from dory.service.tokens import TokenStore
from dory.surfaces.http.app import create_app
from dory.surfaces.mcp.server import OPEN_LOCAL, http_server

log = logging.getLogger("dory.http")
# Streams (/v1/stream) end when the server stops; other requests get this long to finish.
GRACEFUL_S = 10


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # Named TCP explicitly: asyncio turns Nagle's algorithm off only on sockets whose protocol says
    # TCP, and with it on, a keep-alive client waits ~40 ms (delayed ACK) for most answers.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}", host=host, port=port) from exc
    sock.listen(256)
    sock.set_inheritable(True)
    return sock


class McpBeside:
    """The one ASGI app `dory serve` runs: MCP's streamable HTTP transport at /mcp (and its
    protected-resource metadata under /.well-known/), the HTTP API for everything else. While no
    token exists at all, a request without one is given the open-local bearer value, which the
    MCP token verifier accepts only in that state (the API treats it the same way: auth.Gate)."""

    def __init__(self, api: ASGIApp, mcp: ASGIApp, tokens: TokenStore) -> None:
        self.api = api
        self.mcp = mcp
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path == "/mcp" or path.startswith(("/mcp/", "/.well-known/oauth-protected-resource")):
            headers = list(scope.get("headers", []))
            if not any(name == b"authorization" for name, _ in headers) and not self.tokens.configured():
                scope = dict(scope, headers=[*headers, (b"authorization", f"Bearer {OPEN_LOCAL}".encode())])
            await self.mcp(scope, receive, send)
            return
        await self.api(scope, receive, send)


def serve(settings: Settings, host: str, port: int, lock_wait_s: float = 60.0) -> int:
    if not is_loopback(host) and not TokenStore(settings.tokens_path).configured():
        raise UsageError(
            f"refusing to serve on {host}, which is not a loopback address, without tokens: "
            "create one with `dory auth new NAME --scope read`, or serve on 127.0.0.1",
            host=host,
        )
    sock = bind(host, port)
    try:
        return _serve(settings, sock, lock_wait_s)
    finally:
        sock.close()


def _serve(settings: Settings, sock: socket.socket, lock_wait_s: float) -> int:
    """The daemon supervises from the main thread (signals, dead parts, a vanished corpus: see
    Daemon.run); uvicorn serves from its own thread, where it installs no signal handlers."""
    bound_host, bound_port = sock.getsockname()[:2]
    url = f"http://{bound_host if ':' not in bound_host else f'[{bound_host}]'}:{bound_port}"
    daemon = Daemon(settings, lock_wait_s=lock_wait_s, surface="http")
    daemon.http_url = url
    tokens = TokenStore(settings.tokens_path)
    mcp = http_server(daemon.service, tokens, url)
    mcp_app = mcp.streamable_http_app()  # first: it creates the session manager
    api = create_app(daemon.service, daemon.readiness, daemon.snapshot, mcp.session_manager.run)
    config = uvicorn.Config(
        McpBeside(api, mcp_app, tokens),
        log_level=settings.daemon.log_level.lower(),
        access_log=False,
        timeout_graceful_shutdown=GRACEFUL_S,
        log_config=None,  # our logging setup (stderr) stays in charge
    )
    server = uvicorn.Server(config)
    http = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="dory-http", daemon=True)
    received: list[int] = []

    def request_stop(signum: int, frame: FrameType | None) -> None:
        received.append(signum)  # only an append: see Daemon.run_until_signalled

    def stop_requested() -> str | None:
        if received:
            return f"received {signal.Signals(received[0]).name}"
        if not http.is_alive():
            return "the HTTP server stopped"
        return None

    def serve_http() -> None:
        http.start()
        log.info("serving %s (API: %s/docs)", url, url)

    def stop_http() -> None:
        # Before the daemon closes the service: a request still running while its SQLite
        # connections are closed under it can crash the process (the likely cause of a SIGSEGV
        # seen once at SIGTERM on CI). In-flight requests get GRACEFUL_S to finish, writes included.
        server.should_exit = True
        if http.is_alive():
            http.join(GRACEFUL_S + 5)

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    try:
        daemon.run(stop_requested, after_start=serve_http, before_stop=stop_http)
    finally:
        stop_http()  # also when the daemon failed to start
        ignore_stop_signals()
    if not received:
        raise DoryError("the HTTP server stopped on its own; see the log above", url=url)
    return 0
