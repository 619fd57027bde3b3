"""The daemon's control socket, client side: how other processes ask the index's owner to act.

A Unix socket beside the index (mode 0600), one JSON-line request per connection (the wire format
and the client itself are in dory.statefolder, which the agent hooks use without loading settings).
`dory reindex`, `dory ops run` and every write use it while a daemon runs, so there is still exactly
one writer. The server is dory.daemon.control.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dory.config import Settings
from dory.statefolder import control_socket, request

MAX_REQUEST_BYTES = 1_000_000


def socket_path(settings: Settings) -> Path:
    return control_socket(settings.state_dir)


def call(settings: Settings, op: str, args: dict[str, Any] | None = None, timeout_s: float = 5.0) -> Any:
    """Ask the running daemon and wait at most `timeout_s` (see dory.statefolder.request)."""
    return request(socket_path(settings), op, args, timeout_s)
