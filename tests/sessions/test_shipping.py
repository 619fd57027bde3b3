"""The spool's retry rule, without a server: an unreachable server is not asked again before the
wait of the last failure is over, and each failure in a row doubles that wait up to its cap. (The
real exchange with `dory serve` is in tests/daemon/test_capture_shipping.py.)"""

from __future__ import annotations

import socket
import time
from pathlib import Path

from dory.models import SessionIngestRequest
from dory.sessions.capture_ledger import CaptureLedger, ShippingState
from dory.sessions.shipping import Spool, drain


def closed_url() -> str:
    """An address nothing listens on (the port was free a moment ago and is closed again)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_an_unreachable_server_is_retried_later_with_a_doubling_wait(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    spool.put(SessionIngestRequest(content="---\nsession_id: s\n---\n", format="markdown"))
    ledger = CaptureLedger(tmp_path / "capture.sqlite")
    url = closed_url()

    before = time.time()
    first = drain(spool, ledger, url, "secret", retry_max_s=300)
    after = time.time()
    state = ledger.shipping()
    assert (first.sent, first.pending, state.failures) == (0, 1, 1)
    assert first.error and "cannot reach" in first.error and state.last_error == first.error
    assert before + 1 <= state.next_try <= after + 1

    # Not asked again while the wait lasts (the wait is set far ahead: no clock is raced here).
    ledger.set_shipping(ShippingState(4, time.time() + 3600, state.last_error))
    waiting = drain(spool, ledger, url, "secret", retry_max_s=300)
    assert (waiting.pending, ledger.shipping().failures) == (1, 4) and waiting.next_try

    # The wait is over: tried again, failed again, and the wait doubles (16 s after the 5th failure),
    # never past the cap.
    ledger.set_shipping(ShippingState(4, 0.0, state.last_error))
    before = time.time()
    drain(spool, ledger, url, "secret", retry_max_s=300)
    after = time.time()
    assert ledger.shipping().failures == 5 and before + 16 <= ledger.shipping().next_try <= after + 16
    ledger.set_shipping(ShippingState(20, 0.0, None))
    before = time.time()
    drain(spool, ledger, url, "secret", retry_max_s=300)
    after = time.time()
    assert before + 300 <= ledger.shipping().next_try <= after + 300
    assert len(spool.pending()) == 1  # nothing is ever dropped for being unreachable
    ledger.close()
