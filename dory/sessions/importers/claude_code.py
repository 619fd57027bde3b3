"""The Claude Code reader (`~/.claude/projects/<project>/<uuid>.jsonl`).

Claude Code writes its own chatter into the transcript as if it were conversation; none of it
becomes a turn:
- slash commands and their local output: user records that are `<command-name>`,
  `<command-message>`, `<command-args>`, `<local-command-stdout|stderr|caveat>` blocks;
- `<system-reminder>` blocks the harness appends to prompts and tool results, and prompt-hook
  blocks (`<user-prompt-submit-hook>`): cut out of the text, the rest of the turn is kept;
- hook output recorded as a user turn (`Stop hook feedback: …`, `SessionStart:startup hook
  success: …`);
- `system` records (hook runs, local command echoes, API retries, turn timings), except the
  compaction boundary, which marks where the context was compacted.
"""

from __future__ import annotations

import re
from typing import Any

from dory.sessions.importers.common import (
    IMAGE,
    Draft,
    Problem,
    _part_text,
    _Source,
    _str,
    _time_of,
    call_line,
    flatten,
)
from dory.sessions.transcript import Role

_HARNESS_BLOCK = re.compile(
    r"<(system-reminder|user-prompt-submit-hook|session-start-hook)>.*?</\1>[ \t]*\n?", re.DOTALL
)
_COMMAND_RECORD = re.compile(
    r"^\s*<(?:command-name|command-message|command-args|local-command-(?:stdout|stderr|caveat))>"
)
_HOOK_OUTPUT = re.compile(
    r"^\s*(?:SessionStart|SessionEnd|UserPromptSubmit|PreToolUse|PostToolUse|PostToolUseFailure|Stop"
    r"|SubagentStop|PreCompact|Notification)(?::\S*)? hook (?:feedback|success|error|blocking error)\b"
)
# The one `system` record that is part of the conversation's story.
_KEPT_SYSTEM = "compact_boundary"


def _without_harness_blocks(text: str) -> str:
    return _HARNESS_BLOCK.sub("", text)


def _user_text(text: str) -> str:
    """A user text part without harness blocks; empty when the whole part is harness chatter."""
    text = _without_harness_blocks(text)
    return "" if _COMMAND_RECORD.match(text) or _HOOK_OUTPUT.match(text) else text


def _read_claude(records: list[tuple[int, dict[str, Any]]]) -> _Source:
    source = _Source()
    for number, record in records:
        source.at = number
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
            source.add(Draft("system", time, record["summary"], kind="summary", session_id=session_id))
        elif kind in ("user", "assistant"):
            _claude_turn(source, number, record, session_id, time)
        elif kind == "system" and record.get("subtype") == _KEPT_SYSTEM and isinstance(record.get("content"), str):
            source.add(Draft("system", time, record["content"], session_id=session_id))
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
        source.add(Draft("system", time, flatten(content), kind="summary", session_id=session_id))
        return
    role: Role = record["type"]
    group = _str(message.get("id")) if role == "assistant" else None
    parts = [content] if isinstance(content, str) else content
    pending = Draft(role, time, "", session_id=session_id, group=group)
    texts: list[str] = []
    for part in parts:
        if isinstance(part, dict) and part.get("type") == "tool_result":
            _flush(source, pending, texts)
            source.add(Draft("tool", time, _claude_result(part), kind="tool_result", session_id=session_id))
            pending, texts = Draft(role, time, "", session_id=session_id, group=group), []
        elif isinstance(part, dict) and part.get("type") == "tool_use":
            pending.tool_calls.append(call_line(part.get("name"), part.get("input")))
        elif text := _part_text(part):
            text = _user_text(text) if role == "user" else text
            if text.strip():
                texts.append(text)
    _flush(source, pending, texts)


def _flush(source: _Source, pending: Draft, texts: list[str]) -> None:
    if not texts and not pending.tool_calls:
        return
    pending.text = "\n\n".join(texts)
    if not pending.tool_calls and all(text == IMAGE for text in texts):
        pending.kind = "image"
    source.add(pending)


def _claude_result(part: dict[str, Any]) -> str:
    text = _without_harness_blocks(flatten(part.get("content")))
    return f"[error]\n{text}" if part.get("is_error") is True else text
