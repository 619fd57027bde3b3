"""Shipping captured sessions to a remote Dory (`[capture] server`): a spool on disk, drained over HTTP.

Each captured piece of a session is one `SessionIngestRequest` (Dory's markdown transcript, redacted
on this machine, so no secret leaves it) written atomically as a JSON file in `<state>/capture-spool/`
before the capture ledger moves on: a piece is never lost between reading a transcript and the
server having it. Draining posts the files oldest first to `POST /v1/sessions/ingest` and deletes
each one the server accepted. The server merges by session id and message id, so a piece sent twice
(a crash between the answer and the delete) adds nothing.

When the server cannot be reached (or answers 5xx, 429, 401/403), draining stops and waits before
the next attempt: 1 s, then twice as long after each failure in a row, at most `retry_max_s`. A piece
the server refuses for what it is (400, 413, 422) would be refused forever: it moves to `dead/`,
with the server's answer beside it, and the rest go on.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from dory.corpus.atomic import write_atomic
from dory.models import SessionIngestRequest
from dory.sessions.capture_ledger import CaptureLedger, ShippingState

INGEST_PATH = "/v1/sessions/ingest"
DEAD = "dead"
TIMEOUT_S = 60.0
# Answers that say the piece itself is wrong; sending it again would fail the same way.
REFUSED = frozenset({400, 413, 422})
_sequence = itertools.count()


class Spool:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def put(self, req: SessionIngestRequest) -> None:
        # Names sort in the order pieces were queued: a session's pieces reach the server in order.
        name = f"{time.time_ns():020d}-{next(_sequence):06d}.json"
        write_atomic(self.folder / name, req.model_dump_json(exclude_none=True).encode("utf-8"))

    def pending(self) -> list[Path]:
        if not self.folder.is_dir():
            return []
        return sorted(path for path in self.folder.glob("*.json") if not path.name.startswith("."))

    def dead(self) -> int:
        folder = self.folder / DEAD
        return len(list(folder.glob("*.json"))) if folder.is_dir() else 0

    def bury(self, item: Path, reason: str) -> None:
        folder = self.folder / DEAD
        folder.mkdir(parents=True, exist_ok=True)
        item.replace(folder / item.name)
        (folder / f"{item.stem}.error.txt").write_text(reason + "\n", encoding="utf-8")


@dataclass
class SpoolSink:
    """Capture's sink when shipping: every piece is on disk before the transcript's mark moves on."""

    spool: Spool

    def deliver(self, requests: list[SessionIngestRequest]) -> None:
        for request in requests:
            self.spool.put(request)


@dataclass
class ShipReport:
    sent: int = 0
    refused: int = 0
    pending: int = 0
    error: str | None = None  # why the last attempt stopped, while the server is unreachable
    next_try: float | None = None  # epoch seconds, when waiting


def drain(
    spool: Spool, ledger: CaptureLedger, server: str, token: str | None, retry_max_s: float, now: float | None = None
) -> ShipReport:
    """Send what the spool holds, unless the last failure's wait is not over yet. `now` (epoch
    seconds, default the clock) is when this attempt happens: waits are counted from it."""
    now = time.time() if now is None else now
    report = ShipReport()
    state = ledger.shipping()
    if state.failures and now < state.next_try:
        report.pending, report.error, report.next_try = len(spool.pending()), state.last_error, state.next_try
        return report
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(base_url=server.rstrip("/"), headers=headers, timeout=TIMEOUT_S) as client:
        for item in spool.pending():
            problem = _send(client, spool, item, report)
            if problem is not None:
                _failed(ledger, state, problem, retry_max_s, now, report)
                break
        else:
            if state.failures:
                ledger.set_shipping(ShippingState())
    report.pending = len(spool.pending())
    return report


def _send(client: httpx.Client, spool: Spool, item: Path, report: ShipReport) -> str | None:
    """Post one piece; None when it is dealt with (accepted or refused for good), else why not."""
    try:
        body = item.read_bytes()
    except FileNotFoundError:  # sent and removed by a run that overlapped this one
        return None
    try:
        answer = client.post(
            INGEST_PATH, content=body, headers={"Content-Type": "application/json", "Idempotency-Key": item.stem}
        )
    except httpx.HTTPError as exc:
        return f"cannot reach {client.base_url}: {exc}"
    if answer.is_success:
        item.unlink(missing_ok=True)
        report.sent += 1
        return None
    if answer.status_code in REFUSED:
        spool.bury(item, f"HTTP {answer.status_code}: {answer.text[:2000]}")
        report.refused += 1
        return None
    return f"{client.base_url} answered HTTP {answer.status_code}: {answer.text[:300]}"


def _failed(
    ledger: CaptureLedger, state: ShippingState, problem: str, retry_max_s: float, now: float, report: ShipReport
) -> None:
    failures = state.failures + 1
    wait = min(2.0 ** (failures - 1), retry_max_s)
    next_try = now + wait
    ledger.set_shipping(ShippingState(failures, next_try, problem))
    report.error, report.next_try = problem, next_try
