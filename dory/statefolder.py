"""A corpus's state folder and its daemon's control socket, with the standard library only.

The agent hooks (dory.surfaces.hooks) run at every agent session start and ask a running daemon
for the wake block before anything imports pydantic, which alone costs about a third of a hook's
latency budget. So the rules that place the state folder and the socket, and the socket's wire
protocol, live here once: dory.config takes the state folder from here, dory.service.control the
socket and its client (the server side is dory.daemon.control).

The protocol: one request per connection, a JSON line `{"op": ..., "args": {...}}`, answered by
one JSON line, `{"result": ...}` or `{"error": {...}}` with the same error codes as everywhere else.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dory.errors import DaemonNotRunning, DaemonTimeout, error_from_dict

STATE_DIR_NAME = ".dory"
# sun_path holds 108 bytes on Linux; deep state folders get a socket in the temp folder instead.
MAX_SOCKET_PATH = 100
# A live daemon accepts at once (its backlog is 128); a socket that does not is not a live daemon.
CONNECT_TIMEOUT_S = 5.0


def state_folder(
    corpus: Path, explicit: str | os.PathLike[str] | None, env: Mapping[str, str], registered: Path | None = None
) -> Path:
    """The state folder: the flag, else DORY_STATE_DIR, else the one the user config gives the corpus
    (`registered`: a folder Dory must not write into keeps it in the platform state folder), else
    `<corpus>/.dory`; absolute."""
    chosen = explicit or env.get("DORY_STATE_DIR") or registered or corpus / STATE_DIR_NAME
    return Path(chosen).expanduser().resolve()


def control_socket(state_dir: Path) -> Path:
    path = state_dir / "daemon.sock"
    if len(os.fsencode(path)) <= MAX_SOCKET_PATH:
        return path
    digest = hashlib.sha256(os.fsencode(state_dir)).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"dory-{os.getuid()}-{digest}.sock"


def request(path: Path, op: str, args: dict[str, Any] | None = None, timeout_s: float = 5.0) -> Any:
    """Ask the daemon listening on `path` and wait at most `timeout_s` for its answer. Raises
    DaemonNotRunning when none takes the request (or it dropped the connection before answering, as
    a daemon that is stopping or was killed does), DaemonTimeout when it took the request but did
    not answer in time, or the daemon's own error. There is always a deadline: a hung daemon never
    hangs its caller."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(min(timeout_s, CONNECT_TIMEOUT_S))
    try:
        try:
            sock.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError, TimeoutError) as exc:
            raise DaemonNotRunning(
                "no Dory daemon is running for this corpus (start it with `dory ops watch`)"
            ) from exc
        sock.settimeout(timeout_s)
        sock.sendall(json.dumps({"op": op, "args": args or {}}).encode() + b"\n")
        with sock.makefile("rb") as stream:
            line = stream.readline()
    except TimeoutError as exc:
        raise DaemonTimeout(f"the Dory daemon did not answer {op!r} within {timeout_s} s") from exc
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
