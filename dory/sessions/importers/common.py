"""Shared by the readers: problems and results, the draft messages a reader collects, content and tool-call helpers."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from dory.sessions.transcript import Kind, Role, Session, normalise_time, one_line

IMAGE = "[image]"


@dataclass(frozen=True)
class Problem:
    line: int  # 1-based line of the source; 0 when the problem concerns the whole file
    message: str


@dataclass
class ImportResult:
    sessions: list[Session] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    redactions: int = 0
    # The 1-based line where the last message began. That message may still gain lines (a Claude
    # Code response is written one content block a line; a Codex tool call joins the message before
    # it), so a reader of a growing file parses again from here, never from after it.
    resume_line: int | None = None


@dataclass
class Draft:
    """A message as a reader found it, before cleaning, redaction and ids."""

    role: Role
    time: str | None
    text: str
    tool_calls: list[str] = field(default_factory=list)
    kind: Kind = "message"
    session_id: str | None = None  # None: the file's own session
    group: str | None = None  # Claude Code's message.id, shared by the lines of one response
    line: int = 0  # the source line the message began on


@dataclass
class _Source:
    """What a reader found in one file."""

    drafts: list[Draft] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    titles: dict[str | None, str] = field(default_factory=dict)
    extra: dict[str | None, dict[str, Any]] = field(default_factory=dict)
    first_id: str | None = None  # the session id the file itself states, if any
    truncated: bool = False
    at: int = 0  # the line the reader is on (a new draft begins there)

    def add(self, draft: Draft) -> None:
        last = self.drafts[-1] if self.drafts else None
        if (
            draft.group
            and last
            and (last.group, last.role, last.session_id) == (draft.group, draft.role, draft.session_id)
        ):
            if draft.text and draft.text != last.text:  # a line written twice adds nothing
                last.text = "\n\n".join(text for text in (last.text, draft.text) if text)
            last.tool_calls += [call for call in draft.tool_calls if call not in last.tool_calls]
            last.kind = "message"
            return
        draft.line = self.at
        self.drafts.append(draft)

    def note(self, session_id: str | None, key: str, value: object) -> None:
        """Metadata for the frontmatter; the first value seen wins."""
        if isinstance(value, str) and value.strip():
            self.extra.setdefault(session_id, {}).setdefault(key, value)

    def claim_id(self, session_id: str | None) -> None:
        if session_id and self.first_id is None:
            self.first_id = session_id


_MAX_DEPTH = 16  # content nested deeper than this is hostile, not a transcript


def flatten(content: object, depth: int = 0) -> str:
    """Text of a content value: a string, or parts with text; images become `[image]`."""
    if content is None or depth > _MAX_DEPTH:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n\n".join(text for text in (_part_text(part, depth + 1) for part in content) if text)
    if isinstance(content, dict):
        return _part_text(content, depth + 1)
    return json.dumps(content, ensure_ascii=False)


def _part_text(part: object, depth: int = 0) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return "" if part is None or isinstance(part, list) else json.dumps(part, ensure_ascii=False)
    kind = part.get("type")
    if kind in ("image", "input_image", "image_url"):
        return IMAGE
    if kind in ("thinking", "redacted_thinking", "reasoning"):
        return ""
    for key in ("text", "content", "output", "refusal"):
        if key in part:
            return flatten(part[key], depth + 1)
    return ""


_CALL_KEYS = ("command", "cmd", "file_path", "path", "pattern", "url", "query", "description", "prompt", "input")


def call_line(name: object, arguments: object) -> str:
    """`Name: the argument that says what the call does` (the command, the path, the query, ...)."""
    label = one_line(str(name)) if name else "tool"
    detail = _call_detail(_maybe_json(arguments))
    return f"{label}: {detail}" if detail else label


def _maybe_json(value: object) -> object:
    """Tool arguments often arrive as a JSON string; decoded when they are one."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return value


def _call_detail(arguments: object) -> str:
    if isinstance(arguments, dict):
        for key in _CALL_KEYS:
            value = arguments.get(key)
            if isinstance(value, str) and value.strip():
                return value
            if isinstance(value, list) and value and all(isinstance(word, str) for word in value):
                return _shell_words(value)
        return json.dumps(arguments, ensure_ascii=False, sort_keys=True) if arguments else ""
    if isinstance(arguments, list) and arguments and all(isinstance(word, str) for word in arguments):
        return _shell_words(arguments)
    if isinstance(arguments, str):
        return arguments
    return "" if arguments is None else json.dumps(arguments, ensure_ascii=False, sort_keys=True)


def _shell_words(words: list[str]) -> str:
    """`["bash", "-lc", "ls -la"]` is the command `ls -la`."""
    if len(words) == 3 and PurePosixPath(words[0]).name in ("bash", "sh", "zsh") and words[1] in ("-c", "-lc"):
        return words[2]
    return " ".join(words)


def _str(value: object) -> str | None:
    return (value.strip() or None) if isinstance(value, str) else None


def _time_of(record: dict[str, Any], *keys: str) -> str | None:
    """The first of `keys` present in `record`, as a normalised time (None when it is not a time)."""
    for key in keys:
        if key in record:
            return normalise_time(record[key])
    return None
