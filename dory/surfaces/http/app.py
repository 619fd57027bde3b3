"""The HTTP app: FastAPI over one DoryService, with auth, limits, errors, metrics and live events.

`create_app` takes what it serves (the service, and the daemon's readiness and snapshot when a daemon
runs in the process) and has no side effect until the server starts it. Middleware, outermost first:
request ids (every answer and error carries one), metrics, the body cap.
"""

from __future__ import annotations

import asyncio
import re
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from dory.errors import IndexBehind
from dory.models import Readiness
from dory.service import DoryService
from dory.service.tokens import TokenStore
from dory.surfaces.http import errors, routes_ops, routes_read, routes_write
from dory.surfaces.http.auth import Gate
from dory.surfaces.http.events import EventHub
from dory.surfaces.http.limits import BodyLimit, Limits
from dory.surfaces.http.metrics import Metrics, RequestMetrics
from dory.surfaces.http.wiki import routes as wiki_routes
from dory.version import package_version

_GOOD_ID = re.compile(r"^[A-Za-z0-9_.:-]{8,64}$")
ReadinessCheck = Callable[[], Readiness]
Snapshot = Callable[[], dict[str, Any]]


class RequestIds:
    """Every request gets an id (the client's `X-Request-Id` when it is sane), echoed in the answer
    and in every error body, so a client's report can be matched with the server's log."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers", [])).get(b"x-request-id", b"").decode("latin-1")
        request_id = given if _GOOD_ID.match(given) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"x-request-id"]
                message["headers"] = [*headers, (b"x-request-id", request_id.encode())]
            await send(message)

        await self.app(scope, receive, sending)


def create_app(
    service: DoryService,
    readiness: ReadinessCheck,
    snapshot: Snapshot,
    also_running: Callable[[], AbstractAsyncContextManager[Any]] | None = None,
) -> FastAPI:
    """The app; `also_running` is entered for the app's life (the MCP transport's session manager)."""
    settings = service.settings
    events = EventHub()
    stopping = asyncio.Event()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        done = threading.Event()
        watcher = threading.Thread(target=_publish_generations, args=(service, events, done), daemon=True)
        watcher.start()
        try:
            async with also_running() if also_running is not None else nullcontext():
                yield
        finally:
            stopping.set()
            done.set()

    app = FastAPI(
        title="Dory",
        summary="Local-first memory for a person and their AI agents",
        version=package_version(),
        lifespan=lifespan,
    )
    app.state.service = service
    app.state.settings = settings
    app.state.gate = Gate(TokenStore(settings.tokens_path))
    app.state.limits = Limits(settings.http)
    app.state.events = events
    app.state.stopping = stopping
    app.state.readiness = readiness
    app.state.metrics = Metrics(service, snapshot)
    errors.install(app, app.state.metrics.error)
    for module in (routes_read, routes_write, routes_ops, wiki_routes):
        app.include_router(module.router)
    app.add_middleware(BodyLimit, max_bytes=settings.http.max_body_bytes)
    app.add_middleware(RequestMetrics, metrics=app.state.metrics)
    app.add_middleware(RequestIds)
    app.openapi = _openapi_without_422(app)  # type: ignore[method-assign]
    return app


def _openapi_without_422(app: FastAPI) -> Callable[[], dict[str, Any]]:
    """FastAPI documents a 422 with its own validation body on every route that takes input; this app
    answers a request the models refuse with 400 and the one error body (errors.py), and 422 only for
    unsafe content (documented by the routes that check it), so FastAPI's entries are dropped."""

    def openapi() -> dict[str, Any]:
        first = app.openapi_schema is None
        schema = FastAPI.openapi(app)  # built once, then cached by FastAPI
        if first:
            for operation in (op for path in schema["paths"].values() for op in path.values()):
                answers = operation.get("responses", {})
                if "HTTPValidationError" in str(answers.get("422", {})):
                    del answers["422"]
            for name in ("HTTPValidationError", "ValidationError"):
                schema.get("components", {}).get("schemas", {}).pop(name, None)
        return schema

    return openapi


def _publish_generations(service: DoryService, events: EventHub, done: threading.Event) -> None:
    """An `index` event each time the index generation moves (writes, editor saves, reconciles)."""
    seen = service.generation()
    while not done.is_set():
        try:
            seen = service.wait_for_generation(seen + 1, 1.0)
        except IndexBehind:
            continue
        events.publish("index", {"generation": seen})
