"""The generic JSONL reader: one message object per line, roles and their synonyms."""

from __future__ import annotations

import json
from typing import Any

from dory.sessions.importers.common import IMAGE, Draft, Problem, _Source, _str, _time_of, call_line, flatten
from dory.sessions.transcript import Kind, Role

_GENERIC_ROLES: dict[str, tuple[Role, Kind]] = {
    "user": ("user", "message"),
    "human": ("user", "message"),
    "assistant": ("assistant", "message"),
    "ai": ("assistant", "message"),
    "model": ("assistant", "message"),
    "bot": ("assistant", "message"),
    "tool_result": ("tool", "tool_result"),
    "tool": ("tool", "tool_result"),
    "function": ("tool", "tool_result"),
    "system": ("system", "message"),
    "summary": ("system", "summary"),
}


def _read_jsonl(records: list[tuple[int, dict[str, Any]]]) -> _Source:
    source = _Source()
    for number, record in records:
        source.at = number
        draft = _generic_draft(number, record, source)
        if draft is not None:
            source.add(draft)
    return source


def _generic_draft(number: int, record: dict[str, Any], source: _Source) -> Draft | None:
    raw = record.get("type", record.get("role"))
    if not isinstance(raw, str) or raw.strip().lower() not in _GENERIC_ROLES:
        source.problems.append(Problem(number, f"unknown message type {raw!r}" if raw else "no type or role"))
        return None
    role, kind = _GENERIC_ROLES[raw.strip().lower()]
    content = record.get("content", record.get("text"))
    calls = record.get("tool_calls") or []
    if content is not None and not isinstance(content, str | list):
        kind_name = type(content).__name__
        source.problems.append(Problem(number, f"content must be text or a list of parts, not {kind_name}"))
        return None
    if not isinstance(calls, list):
        source.problems.append(Problem(number, "tool_calls must be a list"))
        return None
    session_id = _str(record.get("session_id")) or _str(record.get("sessionId"))
    source.claim_id(session_id)
    if _str(record.get("title")):
        source.titles.setdefault(session_id, record["title"])
    text = flatten(content)
    if kind == "message" and text and all(part == IMAGE for part in text.split("\n\n")):
        kind = "image"
    time = _time_of(record, "timestamp", "time", "created_at")
    return Draft(role, time, text, [_generic_call(call) for call in calls], kind, session_id)


def _generic_call(call: object) -> str:
    if isinstance(call, str):
        return call
    if isinstance(call, dict):
        function = call.get("function")
        if isinstance(function, dict):
            return call_line(function.get("name"), function.get("arguments"))
        arguments = next((call[key] for key in ("arguments", "input", "args", "parameters") if key in call), None)
        return call_line(call.get("name") or call.get("tool"), arguments)
    return json.dumps(call, ensure_ascii=False)
