"""Live events for `/v1/stream`: index updates, writes, proposals, sessions and job runs.

Events get increasing ids and stay in a ring buffer, so a client that reconnects with
`Last-Event-ID` receives what it missed; when what it missed has already left the buffer it is told
so first (an event of type `gap`), and should re-read what it cares about. Publishing is safe from
any thread; subscribers wait on the server's event loop.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

BUFFER = 1000
KEEPALIVE_S = 15.0


@dataclass(frozen=True)
class Event:
    id: int
    kind: str
    data: dict[str, Any]

    def encode(self) -> str:
        return f"id: {self.id}\nevent: {self.kind}\ndata: {json.dumps(self.data, ensure_ascii=False)}\n\n"


class EventHub:
    def __init__(self, size: int = BUFFER) -> None:
        self._events: deque[Event] = deque(maxlen=size)
        self._next = 1
        self._lock = threading.Lock()
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()

    def publish(self, kind: str, data: dict[str, Any]) -> Event:
        with self._lock:
            event = Event(self._next, kind, data | {"at": time.time()})
            self._next += 1
            self._events.append(event)
            waiters = list(self._waiters)
        for loop, flag in waiters:
            loop.call_soon_threadsafe(flag.set)
        return event

    def since(self, last_id: int) -> tuple[list[Event], bool]:
        """Events after `last_id`, and whether some of them already left the buffer."""
        with self._lock:
            events = [e for e in self._events if e.id > last_id]
            oldest = self._events[0].id if self._events else self._next
        return events, last_id + 1 < oldest and last_id < self._next - 1

    @property
    def last_id(self) -> int:
        with self._lock:
            return self._next - 1

    async def stream(self, last_id: int | None, stopped: asyncio.Event) -> AsyncIterator[str]:
        """The text/event-stream body: missed events (or a gap notice), then live ones."""
        flag = asyncio.Event()
        waiter = (asyncio.get_running_loop(), flag)
        with self._lock:
            self._waiters.add(waiter)
        try:
            seen = self.last_id if last_id is None else last_id
            yield f"retry: 2000\n: connected at event {self.last_id}\n\n"
            while not stopped.is_set():
                events, missed = self.since(seen)
                if missed:
                    gap = {"from": seen + 1, "to": events[0].id - 1 if events else self.last_id}
                    yield f"event: gap\ndata: {json.dumps(gap)}\n\n"
                for event in events:
                    yield event.encode()
                    seen = event.id
                flag.clear()
                if not self.since(seen)[0]:
                    try:
                        await asyncio.wait_for(flag.wait(), KEEPALIVE_S)
                    except TimeoutError:
                        yield ": keep-alive\n\n"
        finally:
            with self._lock:
                self._waiters.discard(waiter)
