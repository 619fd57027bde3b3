"""The event a harness hands its hook on stdin (Claude Code: one JSON object with `session_id`,
`transcript_path`, `cwd`, `hook_event_name`, and `source` at SessionStart or `trigger` at
PreCompact). Unknown fields are ignored; a hook run by hand, with no event, gets an empty one."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import BinaryIO

from dory.errors import UsageError

MAX_EVENT_BYTES = 1_000_000  # an event is a few hundred bytes; a runaway pipe is cut off


@dataclass(frozen=True)
class HookEvent:
    session_id: str | None = None
    transcript_path: str | None = None
    cwd: str | None = None
    hook_event_name: str | None = None
    source: str | None = None  # SessionStart: startup, resume, clear, compact
    trigger: str | None = None  # PreCompact: manual, auto


def read_event(stream: BinaryIO) -> HookEvent:
    if stream.isatty():
        return HookEvent()
    raw = stream.read(MAX_EVENT_BYTES + 1)
    if len(raw) > MAX_EVENT_BYTES:
        raise UsageError(f"the hook event on stdin is larger than {MAX_EVENT_BYTES} bytes")
    if not raw.strip():
        return HookEvent()
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise UsageError(f"the hook event on stdin is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise UsageError("the hook event on stdin is not a JSON object")
    return HookEvent(**{f.name: _text(data.get(f.name)) for f in fields(HookEvent)})


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
