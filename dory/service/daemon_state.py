"""The daemon's public record, `<state>/daemon.json`, and how other processes read it.

The running daemon rewrites the file (atomically) every half second. A reader trusts it only
while the writer lock is held by the pid it names: a daemon killed with -9 leaves the file behind
but not the lock (flock dies with its process), which is how a stale record is told apart. A daemon
that exits because it cannot go on leaves its last record with `exit_reason`, reported as is.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

from dory.config import Settings
from dory.index.lock import WriterLock
from dory.models import DaemonStatus


def write_state(path: Path, state: dict[str, Any]) -> None:
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(state, ensure_ascii=False, default=str), encoding="utf-8")
    os.replace(tmp, path)


def _read_state(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _age_s(stamp: str | None, now: dt.datetime) -> float | None:
    if not stamp:
        return None
    try:
        return round((now - dt.datetime.fromisoformat(stamp)).total_seconds(), 1)
    except (TypeError, ValueError):  # a hand-edited or foreign file
        return None


def daemon_status(settings: Settings) -> DaemonStatus:
    state = _read_state(settings.daemon_state_path)
    holder = WriterLock.holder(settings.lock_path)
    if state is None:
        note = f"the index is being written by another process (pid {holder})" if holder else None
        return DaemonStatus(running=False, note=note)
    pid = state.get("pid")
    if state.get("exit_reason"):
        return _exited(state)
    if holder is None or str(pid) != holder:
        return DaemonStatus(
            running=False,
            pid=pid,
            note=(
                f"a daemon (pid {pid}) stopped without cleaning up; its last heartbeat was "
                f"{state.get('heartbeat_at')}; the next `dory ops watch` repairs whatever it left"
            ),
        )
    now = dt.datetime.now(dt.UTC)
    fields = _known_fields(state)
    fields.update(
        running=True,
        uptime_s=_age_s(state.get("started_at"), now),
        heartbeat_age_s=_age_s(state.get("heartbeat_at"), now),
    )
    return DaemonStatus(**fields)


def _exited(state: dict[str, Any]) -> DaemonStatus:
    """The last record of a daemon that exited on a failure: its parts as they were, and why."""
    fields = _known_fields(state)
    fields.update(
        running=False,
        note=(
            f"the daemon (pid {state.get('pid')}) exited at {state.get('exited_at')}: {state['exit_reason']}; "
            "a service manager restarts it (systemd: Restart=on-failure), else start it with `dory ops watch`"
        ),
    )
    return DaemonStatus(**fields)


def _known_fields(state: dict[str, Any]) -> dict[str, Any]:
    return {key: state[key] for key in DaemonStatus.model_fields if key in state}
