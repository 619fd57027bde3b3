"""What keeps one client from starving the others: a body cap (413), a deadline per request (504), a
bound on how many expensive requests run at once, and a per-token rate limit (429 + Retry-After)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from dory.config import HttpSettings
from dory.errors import DeadlineExceeded, RateLimited, RequestTooLarge
from dory.surfaces.http.errors import error_response

T = TypeVar("T")


class BodyLimit:
    """Refuse a body over `max_bytes`: at once when Content-Length says so, else while it streams."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            request_id = str(scope.get("state", {}).get("request_id", ""))
            await error_response(self.too_large(), request_id)(scope, receive, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_bytes:
                raise self.too_large()
            return message

        await self.app(scope, counted, send)

    def too_large(self) -> RequestTooLarge:
        return RequestTooLarge(f"the request body is larger than {self.max_bytes} bytes", max_bytes=self.max_bytes)


class RateLimiter:
    """A token bucket per caller: `per_minute` requests, refilled continuously (0 = no limit)."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._buckets: dict[str, tuple[float, float]] = {}  # caller -> (tokens, last refill)
        self._lock = threading.Lock()

    def check(self, caller: str) -> None:
        if self.per_minute <= 0:
            return
        rate = self.per_minute / 60.0
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(caller, (float(self.per_minute), now))
            tokens = min(float(self.per_minute), tokens + (now - last) * rate)
            if tokens < 1.0:
                self._buckets[caller] = (tokens, now)
                wait = (1.0 - tokens) / rate
                raise RateLimited(
                    f"more than {self.per_minute} requests a minute from {caller!r}; retry in {wait:.1f} s",
                    retry_after_s=round(wait, 2),
                    caller=caller,
                )
            self._buckets[caller] = (tokens - 1.0, now)


class Limits:
    def __init__(self, cfg: HttpSettings) -> None:
        self.deadline_s = cfg.deadline_s
        self.rate = RateLimiter(cfg.rate_per_minute)
        self.max_body_bytes = cfg.max_body_bytes
        self._expensive_slots = cfg.expensive_concurrency
        self._expensive: asyncio.Semaphore | None = None  # made on the server's event loop

    def expensive(self) -> asyncio.Semaphore:
        if self._expensive is None:
            self._expensive = asyncio.Semaphore(self._expensive_slots)
        return self._expensive

    async def run(self, fn: Callable[..., T], *args: Any, expensive: bool = False) -> T:
        """Run a blocking service call in the thread pool, within the deadline (and, when expensive,
        within the bound on concurrent expensive calls). The call itself is not interrupted: a write
        past its deadline may still complete, which is why writes take an idempotency key."""
        try:
            if not expensive:
                return await asyncio.wait_for(run_in_threadpool(fn, *args), self.deadline_s)
            async with asyncio.timeout(self.deadline_s):
                async with self.expensive():
                    return await run_in_threadpool(fn, *args)
        except TimeoutError as exc:
            raise DeadlineExceeded(
                f"the request did not finish within {self.deadline_s} s; a write may still complete: "
                "retry with the same Idempotency-Key to get its answer",
                deadline_s=self.deadline_s,
            ) from exc
