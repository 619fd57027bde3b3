"""The spool's retry rule, without a server: an unreachable server is not asked again before the
wait of the last failure is over, and each failure in a row doubles that wait up to its cap. (The
real exchange with `dory serve` is in tests/daemon/test_capture_shipping.py.)"""

from __future__ import annotations

import socket
from pathlib import Path

from dory.models import SessionIngestRequest
from dory.sessions.capture_ledger import CaptureLedger, ShippingState
from dory.sessions.shipping import Spool, drain

NOW = 1_800_000_000.0  # an attempt's moment, in epoch seconds


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

    # Attempts happen at given moments (`now`): the test never reads or races the clock.
    first = drain(spool, ledger, url, "secret", retry_max_s=300, now=NOW)
    state = ledger.shipping()
    assert (first.sent, first.pending, state.failures) == (0, 1, 1)
    assert first.error and "cannot reach" in first.error and state.last_error == first.error
    assert state.next_try == NOW + 1

    # Not asked again while the wait lasts.
    ledger.set_shipping(ShippingState(4, NOW + 3600, state.last_error))
    waiting = drain(spool, ledger, url, "secret", retry_max_s=300, now=NOW + 3599)
    assert (waiting.pending, ledger.shipping().failures) == (1, 4) and waiting.next_try == NOW + 3600

    # The wait is over: tried again, failed again, and the wait doubles (16 s after the 5th failure),
    # never past the cap.
    drain(spool, ledger, url, "secret", retry_max_s=300, now=NOW + 3600)
    assert ledger.shipping().failures == 5 and ledger.shipping().next_try == NOW + 3600 + 16
    ledger.set_shipping(ShippingState(20, 0.0, None))
    drain(spool, ledger, url, "secret", retry_max_s=300, now=NOW)
    assert ledger.shipping().next_try == NOW + 300
    assert len(spool.pending()) == 1  # nothing is ever dropped for being unreachable
    ledger.close()
