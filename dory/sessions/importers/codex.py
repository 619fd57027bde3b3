"""The Codex reader (`~/.codex/sessions/YYYY/MM/DD/rollout-…-<uuid>.jsonl`), legacy rollouts included."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from dory.sessions.importers.common import (
    IMAGE,
    Draft,
    Problem,
    _maybe_json,
    _Source,
    _str,
    _time_of,
    call_line,
    flatten,
)
from dory.sessions.transcript import Kind, Role

_INJECTED = re.compile(
    r"^\s*(?:<(?:environment_context|user_instructions|permissions instructions)>"
    r"|# AGENTS\.md instructions)",
    re.IGNORECASE,
)
_CALL_TYPES = ("function_call", "custom_tool_call", "local_shell_call", "web_search_call")
_OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output")
_LEGACY_ITEMS = ("message", "reasoning", *_CALL_TYPES, *_OUTPUT_TYPES)


def _read_codex(records: list[tuple[int, dict[str, Any]]]) -> _Source:
    source = _Source()
    for number, record in records:
        source.at = number
        time = _time_of(record, "timestamp")
        if "payload" not in record:
            _codex_legacy(source, record, time)
            continue
        payload, kind = record["payload"], record.get("type")
        handler = _CODEX_HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is None:
            continue
        if not isinstance(payload, dict):
            source.problems.append(Problem(number, f"{kind} record without a payload object"))
            continue
        handler(source, payload, time)
    return source


def _codex_legacy(source: _Source, record: dict[str, Any], time: str | None) -> None:
    """Rollouts before the {timestamp, type, payload} wrapper: a header line, then bare items."""
    if record.get("type") in _LEGACY_ITEMS:
        _codex_item(source, record, time)
    elif "id" in record and "type" not in record:
        _codex_meta(source, record, time)


def _codex_meta(source: _Source, payload: dict[str, Any], time: str | None) -> None:
    source.claim_id(_str(payload.get("id")))
    for key in ("cwd", "originator", "cli_version"):
        source.note(None, key, payload.get(key))
    git = payload.get("git")
    if isinstance(git, dict):
        source.note(None, "git_branch", git.get("branch"))


def _codex_context(source: _Source, payload: dict[str, Any], time: str | None) -> None:
    source.note(None, "model", payload.get("model"))


def _codex_compacted(source: _Source, payload: dict[str, Any], time: str | None) -> None:
    if _str(payload.get("message")):
        source.add(Draft("system", time, payload["message"], kind="summary"))


def _codex_item(source: _Source, item: dict[str, Any], time: str | None) -> None:
    kind = item.get("type")
    if kind == "message":
        _codex_message(source, item, time)
    elif kind in _CALL_TYPES:
        _codex_call(source, _codex_call_line(item), time)
    elif kind in _OUTPUT_TYPES:
        source.add(Draft("tool", time, _codex_output(item.get("output")), kind="tool_result"))
    # "reasoning": skipped on purpose (see the package docstring).


def _codex_message(source: _Source, item: dict[str, Any], time: str | None) -> None:
    role = item.get("role")
    if role not in ("user", "assistant"):
        return  # developer/system messages are the harness's own instructions
    text = flatten(item.get("content"))
    if role == "user" and _INJECTED.match(text):
        return
    _codex_say(source, role, time, text)


def _codex_event(source: _Source, payload: dict[str, Any], time: str | None) -> None:
    kind = payload.get("type")
    if kind == "user_message":
        listed = payload.get("images")
        images = listed if isinstance(listed, list) else []
        text = "\n\n".join([flatten(payload.get("message")), *([IMAGE] * len(images))]).strip("\n")
        _codex_say(source, "user", time, text)
    elif kind == "agent_message":
        _codex_say(source, "assistant", time, flatten(payload.get("message")))


def _codex_say(source: _Source, role: Role, time: str | None, text: str) -> None:
    """Adds a message unless it mirrors the one just before it (event_msg vs response_item)."""
    last = source.drafts[-1] if source.drafts else None
    if last and last.role == role and last.kind == "message" and last.text.strip() == text.strip():
        return
    kind: Kind = "image" if text and all(part == IMAGE for part in text.split("\n\n")) else "message"
    source.add(Draft(role, time, text, kind=kind))


def _codex_call_line(item: dict[str, Any]) -> str:
    kind = item.get("type")
    given = item.get("action")
    action = given if isinstance(given, dict) else {}
    if kind == "local_shell_call":
        return call_line("shell", action.get("command"))
    if kind == "web_search_call":
        return call_line("web_search", action.get("query"))
    return call_line(item.get("name"), item.get("arguments", item.get("input")))


def _codex_call(source: _Source, call: str, time: str | None) -> None:
    """A tool call belongs to the assistant message right before it, else to a new, empty one."""
    last = source.drafts[-1] if source.drafts else None
    if last and last.role == "assistant" and last.kind == "message":
        last.tool_calls.append(call)
    else:
        source.add(Draft("assistant", time, "", [call]))


def _codex_output(output: object) -> str:
    if isinstance(output, str):
        wrapped = _maybe_json(output)
        if not isinstance(wrapped, dict):
            return output
        text = wrapped.get("output")
        if not isinstance(text, str):
            return output
        metadata = wrapped.get("metadata")
        code = metadata.get("exit_code") if isinstance(metadata, dict) else None
        prefix = f"[exit code {code}]\n" if isinstance(code, int) and code != 0 else ""
        return prefix + text
    return flatten(output)


_CODEX_HANDLERS: dict[str, Callable[[_Source, dict[str, Any], str | None], None]] = {
    "session_meta": _codex_meta,
    "response_item": _codex_item,
    "event_msg": _codex_event,
    "turn_context": _codex_context,
    "compacted": _codex_compacted,
}
