"""The Claude Code reader (`~/.claude/projects/<project>/<uuid>.jsonl`)."""

from __future__ import annotations

from typing import Any

from dory.sessions.importers.common import (
    IMAGE,
    Problem,
    _call_line,
    _Draft,
    _flatten,
    _part_text,
    _Source,
    _str,
    _time_of,
)
from dory.sessions.transcript import Role


def _read_claude(records: list[tuple[int, dict[str, Any]]]) -> _Source:
    source = _Source()
    for number, record in records:
        if record.get("isSidechain") is True or record.get("isMeta") is True:
            continue
        session_id = _str(record.get("sessionId"))
        source.claim_id(session_id)
        for key, name in (("cwd", "cwd"), ("gitBranch", "git_branch"), ("version", "harness_version")):
            source.note(session_id, name, record.get(key))
        kind = record.get("type")
        time = _time_of(record, "timestamp")
        if kind == "summary" and _str(record.get("summary")):
            source.titles.setdefault(session_id, record["summary"])  # Claude Code's own session title
            source.add(_Draft("system", time, record["summary"], kind="summary", session_id=session_id))
        elif kind in ("user", "assistant"):
            _claude_turn(source, number, record, session_id, time)
        elif kind == "system" and isinstance(record.get("content"), str):
            source.add(_Draft("system", time, record["content"], session_id=session_id))
    return source


def _claude_turn(
    source: _Source, number: int, record: dict[str, Any], session_id: str | None, time: str | None
) -> None:
    message = record.get("message")
    if not isinstance(message, dict):
        source.problems.append(Problem(number, f"{record['type']} record without a message object"))
        return
    content = message.get("content")
    if not isinstance(content, str | list):
        source.problems.append(Problem(number, "message.content is neither text nor a list of parts"))
        return
    if record.get("isCompactSummary") is True:
        source.add(_Draft("system", time, _flatten(content), kind="summary", session_id=session_id))
        return
    role: Role = record["type"]
    group = _str(message.get("id")) if role == "assistant" else None
    parts = [content] if isinstance(content, str) else content
    pending = _Draft(role, time, "", session_id=session_id, group=group)
    texts: list[str] = []
    for part in parts:
        if isinstance(part, dict) and part.get("type") == "tool_result":
            _flush(source, pending, texts)
            source.add(_Draft("tool", time, _claude_result(part), kind="tool_result", session_id=session_id))
            pending, texts = _Draft(role, time, "", session_id=session_id, group=group), []
        elif isinstance(part, dict) and part.get("type") == "tool_use":
            pending.tool_calls.append(_call_line(part.get("name"), part.get("input")))
        elif text := _part_text(part):
            texts.append(text)
    _flush(source, pending, texts)


def _flush(source: _Source, pending: _Draft, texts: list[str]) -> None:
    if not texts and not pending.tool_calls:
        return
    pending.text = "\n\n".join(texts)
    if not pending.tool_calls and all(text == IMAGE for text in texts):
        pending.kind = "image"
    source.add(pending)


def _claude_result(part: dict[str, Any]) -> str:
    text = _flatten(part.get("content"))
    return f"[error]\n{text}" if part.get("is_error") is True else text
