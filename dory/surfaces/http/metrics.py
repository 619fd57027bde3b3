"""`/metrics` in the Prometheus text format: requests by route and status, their latency, and the
index's state read at scrape time (generation, files, chunks, pending work, skipped files, watcher
events and overflows, job runs by status, write conflicts).

Each app has its own registry (two servers in one test process never share counters), and the
index figures come from cheap queries and the daemon's own snapshot, never from a corpus scan.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from dory.config import Settings
from dory.jobs.ledger import JobLedger
from dory.service import DoryService

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
CONFLICT_CODES = frozenset({"hash_conflict", "stale_proposal", "already_exists", "conflict"})


class IndexCollector(Collector):
    """The index and daemon figures, gathered when Prometheus scrapes."""

    def __init__(self, service: DoryService, snapshot: Callable[[], dict[str, Any]]) -> None:
        self.service = service
        self.snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        settings: Settings = self.service.settings
        figures: dict[str, float] = {"generation": self.service.generation()}
        if settings.db_path.exists():
            figures |= self.service.store.counts()
        daemon = self.snapshot()
        watcher = daemon.get("watcher", {})
        figures |= {
            "pending_paths": daemon.get("pending_paths", 0),
            "vectors_pending": daemon.get("vectors_pending", 0),
            "watcher_events": watcher.get("events_seen", 0),
            "watcher_overflows": watcher.get("overflows", 0),
        }
        for name, value in figures.items():
            yield GaugeMetricFamily(f"dory_index_{name}", f"index: {name.replace('_', ' ')}", value=float(value))
        runs = GaugeMetricFamily("dory_job_runs", "job runs in the ledger, by job and status", labels=["job", "status"])
        ledger = JobLedger.open_existing(settings.ledger_path)
        if ledger is not None:
            try:
                for (job, status), count in ledger.counts().items():
                    runs.add_metric([job, status], float(count))
            finally:
                ledger.close()
        yield runs


class Metrics:
    def __init__(self, service: DoryService, snapshot: Callable[[], dict[str, Any]]) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "dory_http_requests",
            "HTTP requests by route and status",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "dory_http_request_seconds", "HTTP request latency by route", ["route"], registry=self.registry
        )
        self.conflicts = Counter(
            "dory_write_conflicts", "writes refused as conflicts", ["code"], registry=self.registry
        )
        self.registry.register(IndexCollector(service, snapshot))

    def render(self) -> bytes:
        return generate_latest(self.registry)

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        self.requests.labels(route, method, str(status)).inc()
        self.latency.labels(route).observe(seconds)

    def error(self, code: str) -> None:
        if code in CONFLICT_CODES:
            self.conflicts.labels(code).inc()


class RequestMetrics:
    """ASGI middleware: count and time every request by its route template (not its raw path, so
    /v1/notes/{path} is one series however many notes there are)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            route = scope.get("route")
            name = getattr(route, "path", None) or "unmatched"
            self.metrics.observe(name, scope["method"], status, time.perf_counter() - started)
