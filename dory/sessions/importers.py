"""Session importers: harness logs → `Session`s in Dory's transcript format (SPEC §7 "Ingest").

`parse_source(data, fmt, source_path, agent, device)` reads one file and returns the sessions in it, the
problems found (1-based line numbers; line 0 means the whole file) and how many secrets were redacted.
It never raises on bad input: a malformed line becomes a problem and the rest is imported. Every text
(messages, tool calls, titles, metadata) is cleaned (`clean_text`) and redacted (`redact`) before
message ids are computed, so re-importing the same file gives the same ids and the same bytes.

Formats and the decisions taken for each:

- `jsonl` (generic): one object per line, `{"type" | "role": "user" | "assistant" | "tool_result" |
  "system" | "summary" (and synonyms human/ai/model/tool/function), "content": str | [parts],
  "timestamp", "tool_calls"?: [str | {name, arguments|input} | {"function": {...}}], "session_id"?,
  "title"?}`. Lines with a `session_id` go to that session; the others to the file's session, whose
  id is the first `session_id` seen, else the file name's stem, else a hash of the first lines.
- `claude-code` (`~/.claude/projects/<project>/<uuid>.jsonl`): `user`/`assistant` records become
  messages; `message.content` parts: `text` kept, `tool_use` → a tool call line (`Bash: ls -la`),
  `tool_result` → a separate `tool` message (kind tool_result, `[error]` first line when `is_error`),
  `image` → `[image]` (never the base64), `thinking` skipped (private scratch work, often large).
  Consecutive assistant lines sharing `message.id` (Claude Code writes one line per content block)
  form one message. `summary` records become system summary messages and the session title.
  `system` records with text content become system messages. Skipped: `isMeta` records (harness-
  injected caveats and command expansions) and `isSidechain` records (subagent chatter; the subagent's
  answer already reaches the main thread as a tool result). A user record marked `isCompactSummary`
  becomes a system summary. Other record types (file-history-snapshot, …) are ignored. `cwd`,
  `gitBranch` and `version` go to the frontmatter. Agent "claude-code".
- `codex` (`~/.codex/sessions/YYYY/MM/DD/rollout-…-<uuid>.jsonl`): `session_meta` gives the id, cwd,
  originator, cli_version and git branch; `turn_context` the model. `response_item` messages (user
  `input_text`, assistant `output_text`, `input_image` → `[image]`) become messages, except harness
  context (`<environment_context>`, `<user_instructions>`, AGENTS.md blocks, developer/system roles).
  `function_call`/`custom_tool_call`/`local_shell_call`/`web_search_call` become tool call lines, on
  the assistant message right before them or on a new empty assistant message; their outputs become
  tool results (the JSON `{"output", "metadata"}` wrapper is unwrapped; a non-zero exit code is noted).
  `reasoning` items are skipped (encrypted; their summaries are scratch work). `event_msg`
  `user_message`/`agent_message` mirror the response items: one is dropped when the message before it
  has the same role and text (whichever came first is kept, so a file cut between the two re-imports
  to the same ids); an event with no mirror is kept. `compacted` records become summaries. Legacy
  rollouts (items without the `payload` wrapper) are read the same way. Agent "codex".
- `markdown`: Dory's own transcript (`parse_session`); its ids are kept, its text is cleaned and
  redacted again, its agent/device win over the caller's (which fill in only what is missing).

Common rules: a message with no text and no tool calls is dropped; a message equal to the one before it
(role, time, text, kind) is kept once, tool calls united; a session without messages is a problem, not
a session. The title is the source's own (`title` field, Claude Code summary), else the first line of
the first user message, else "<agent> session <id>". Status is "active" unless `now` is given: then a
session updated more than 30 minutes before `now` is "done", or "interrupted" when the file ended in a
truncated line. `redactions` counts replacements, so a secret in both a title field and a message counts
twice.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Literal, get_args

from dory.errors import DoryError, UsageError
from dory.sessions.clean import clean_text, redact
from dory.sessions.transcript import (
    Kind,
    Message,
    Role,
    Session,
    Status,
    new_message,
    normalise_time,
    one_line,
    parse_session,
    tidy,
    time_key,
)

Format = Literal["auto", "markdown", "jsonl", "claude-code", "codex"]
FORMATS: tuple[str, ...] = get_args(Format)[1:]
DEFAULT_AGENTS = {"claude-code": "claude-code", "codex": "codex", "jsonl": "unknown", "markdown": "unknown"}
IMAGE = "[image]"
CALL_MAX_CHARS = 200
TITLE_MAX_CHARS = 100
ACTIVE_WINDOW = dt.timedelta(minutes=30)
_SNIFF_LINES = 50


@dataclass(frozen=True)
class Problem:
    line: int  # 1-based line of the source; 0 when the problem concerns the whole file
    message: str


@dataclass
class ImportResult:
    sessions: list[Session] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    redactions: int = 0


@dataclass
class _Draft:
    """A message as a reader found it, before cleaning, redaction and ids."""

    role: Role
    time: str | None
    text: str
    tool_calls: list[str] = field(default_factory=list)
    kind: Kind = "message"
    session_id: str | None = None  # None: the file's own session
    group: str | None = None  # Claude Code's message.id, shared by the lines of one response


@dataclass
class _Source:
    """What a reader found in one file."""

    drafts: list[_Draft] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    titles: dict[str | None, str] = field(default_factory=dict)
    extra: dict[str | None, dict[str, Any]] = field(default_factory=dict)
    first_id: str | None = None  # the session id the file itself states, if any
    truncated: bool = False

    def add(self, draft: _Draft) -> None:
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
        self.drafts.append(draft)

    def note(self, session_id: str | None, key: str, value: object) -> None:
        """Metadata for the frontmatter; the first value seen wins."""
        if isinstance(value, str) and value.strip():
            self.extra.setdefault(session_id, {}).setdefault(key, value)

    def claim_id(self, session_id: str | None) -> None:
        if session_id and self.first_id is None:
            self.first_id = session_id


# --- entry points -----------------------------------------------------------------------------------


def parse_source(
    data: bytes,
    fmt: Format = "auto",
    source_path: str | None = None,
    agent: str | None = None,
    device: str = "unknown",
    *,
    now: dt.datetime | None = None,
) -> ImportResult:
    """The sessions in one harness file, with problems and the redaction count (see the module docstring)."""
    chosen = detect_format(data, source_path) if fmt == "auto" else fmt
    if chosen not in FORMATS:
        raise UsageError(f"unknown session format {fmt!r}; expected one of: auto, {', '.join(FORMATS)}")
    if chosen == "markdown":
        return _import_markdown(data, source_path, agent, device)
    records, problems, truncated = _json_records(data)
    source = _READERS[chosen](records)
    source.problems = sorted(problems + source.problems, key=lambda problem: problem.line)
    source.truncated = truncated
    return _build(source, chosen, data, source_path, agent or DEFAULT_AGENTS[chosen], device, now)


def detect_format(data: bytes, source_path: str | None = None) -> str:
    """ "markdown", "codex", "claude-code" or "jsonl", from the content first and the path second."""
    head = data[: 256 * 1024].decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    if not head.startswith("{"):
        return "markdown"
    for line in head.split("\n")[:_SNIFF_LINES]:
        try:
            record = json.loads(line, strict=False)
        except (ValueError, RecursionError):
            continue
        found = _sniff(record) if isinstance(record, dict) else None
        if found:
            return found
    path = (source_path or "").replace("\\", "/")
    if "/.codex/" in path or PurePosixPath(path).name.startswith("rollout-"):
        return "codex"
    return "claude-code" if "/.claude/" in path else "jsonl"


def _sniff(record: dict[str, Any]) -> str | None:
    kind = record.get("type")
    if not isinstance(kind, str | None):
        return None
    if "payload" in record and kind in _CODEX_HANDLERS:
        return "codex"
    if "instructions" in record and "id" in record and "type" not in record:
        return "codex"  # the header line of a legacy rollout
    content = record.get("content")
    if isinstance(content, list) and any(
        isinstance(part, dict) and part.get("type") in ("input_text", "output_text") for part in content
    ):
        return "codex"
    if "sessionId" in record or (kind == "summary" and "leafUuid" in record):
        return "claude-code"
    if kind in ("user", "assistant") and isinstance(record.get("message"), dict):
        return "claude-code"
    return None


def _json_records(data: bytes) -> tuple[list[tuple[int, dict[str, Any]]], list[Problem], bool]:
    """(line number, object) per JSON line; problems for the others; whether the last line was cut."""
    lines = data.decode("utf-8", "replace").removeprefix("\ufeff").split("\n")
    records: list[tuple[int, dict[str, Any]]] = []
    problems: list[Problem] = []
    truncated = False
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            # strict=False: raw control characters inside strings are tolerated here and cleaned later.
            record = json.loads(line, strict=False)
        except (ValueError, RecursionError) as exc:
            if number == len(lines):  # only a last line without its newline can be cut mid-write
                truncated = True
                problems.append(Problem(number, "truncated last line: no newline and incomplete JSON"))
            else:
                problems.append(Problem(number, f"not valid JSON: {_reason(exc)}"))
            continue
        if isinstance(record, dict):
            records.append((number, record))
        else:
            problems.append(Problem(number, f"expected a JSON object, found {type(record).__name__}"))
    return records, problems, truncated


def _reason(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at column {exc.colno}"
    return "nested too deeply" if isinstance(exc, RecursionError) else str(exc)


# --- shared helpers for readers ---------------------------------------------------------------------


_MAX_DEPTH = 16  # content nested deeper than this is hostile, not a transcript


def _flatten(content: object, depth: int = 0) -> str:
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
            return _flatten(part[key], depth + 1)
    return ""


_CALL_KEYS = ("command", "cmd", "file_path", "path", "pattern", "url", "query", "description", "prompt", "input")


def _call_line(name: object, arguments: object) -> str:
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


# --- generic JSONL ----------------------------------------------------------------------------------

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
        draft = _generic_draft(number, record, source)
        if draft is not None:
            source.add(draft)
    return source


def _generic_draft(number: int, record: dict[str, Any], source: _Source) -> _Draft | None:
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
    text = _flatten(content)
    if kind == "message" and text and all(part == IMAGE for part in text.split("\n\n")):
        kind = "image"
    time = _time_of(record, "timestamp", "time", "created_at")
    return _Draft(role, time, text, [_generic_call(call) for call in calls], kind, session_id)


def _generic_call(call: object) -> str:
    if isinstance(call, str):
        return call
    if isinstance(call, dict):
        function = call.get("function")
        if isinstance(function, dict):
            return _call_line(function.get("name"), function.get("arguments"))
        arguments = next((call[key] for key in ("arguments", "input", "args", "parameters") if key in call), None)
        return _call_line(call.get("name") or call.get("tool"), arguments)
    return json.dumps(call, ensure_ascii=False)


def _time_of(record: dict[str, Any], *keys: str) -> str | None:
    """The first of `keys` present in `record`, as a normalised time (None when it is not a time)."""
    for key in keys:
        if key in record:
            return normalise_time(record[key])
    return None


# --- Claude Code ------------------------------------------------------------------------------------


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


# --- Codex ------------------------------------------------------------------------------------------

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
        source.add(_Draft("system", time, payload["message"], kind="summary"))


def _codex_item(source: _Source, item: dict[str, Any], time: str | None) -> None:
    kind = item.get("type")
    if kind == "message":
        _codex_message(source, item, time)
    elif kind in _CALL_TYPES:
        _codex_call(source, _codex_call_line(item), time)
    elif kind in _OUTPUT_TYPES:
        source.add(_Draft("tool", time, _codex_output(item.get("output")), kind="tool_result"))
    # "reasoning": skipped on purpose (see the module docstring).


def _codex_message(source: _Source, item: dict[str, Any], time: str | None) -> None:
    role = item.get("role")
    if role not in ("user", "assistant"):
        return  # developer/system messages are the harness's own instructions
    text = _flatten(item.get("content"))
    if role == "user" and _INJECTED.match(text):
        return
    _codex_say(source, role, time, text)


def _codex_event(source: _Source, payload: dict[str, Any], time: str | None) -> None:
    kind = payload.get("type")
    if kind == "user_message":
        images = payload.get("images") if isinstance(payload.get("images"), list) else []
        text = "\n\n".join([_flatten(payload.get("message")), *([IMAGE] * len(images))]).strip("\n")
        _codex_say(source, "user", time, text)
    elif kind == "agent_message":
        _codex_say(source, "assistant", time, _flatten(payload.get("message")))


def _codex_say(source: _Source, role: Role, time: str | None, text: str) -> None:
    """Adds a message unless it mirrors the one just before it (event_msg vs response_item)."""
    last = source.drafts[-1] if source.drafts else None
    if last and last.role == role and last.kind == "message" and last.text.strip() == text.strip():
        return
    kind: Kind = "image" if text and all(part == IMAGE for part in text.split("\n\n")) else "message"
    source.add(_Draft(role, time, text, kind=kind))


def _codex_call_line(item: dict[str, Any]) -> str:
    kind = item.get("type")
    action = item.get("action") if isinstance(item.get("action"), dict) else {}
    if kind == "local_shell_call":
        return _call_line("shell", action.get("command"))
    if kind == "web_search_call":
        return _call_line("web_search", action.get("query"))
    return _call_line(item.get("name"), item.get("arguments", item.get("input")))


def _codex_call(source: _Source, call: str, time: str | None) -> None:
    """A tool call belongs to the assistant message right before it, else to a new, empty one."""
    last = source.drafts[-1] if source.drafts else None
    if last and last.role == "assistant" and last.kind == "message":
        last.tool_calls.append(call)
    else:
        source.add(_Draft("assistant", time, "", [call]))


def _codex_output(output: object) -> str:
    if isinstance(output, str):
        wrapped = _maybe_json(output)
        if not (isinstance(wrapped, dict) and isinstance(wrapped.get("output"), str)):
            return output
        metadata = wrapped.get("metadata") if isinstance(wrapped.get("metadata"), dict) else {}
        code = metadata.get("exit_code")
        prefix = f"[exit code {code}]\n" if isinstance(code, int) and code != 0 else ""
        return prefix + wrapped["output"]
    return _flatten(output)


_CODEX_HANDLERS: dict[str, Callable[[_Source, dict[str, Any], str | None], None]] = {
    "session_meta": _codex_meta,
    "response_item": _codex_item,
    "event_msg": _codex_event,
    "turn_context": _codex_context,
    "compacted": _codex_compacted,
}
_READERS: dict[str, Callable[[list[tuple[int, dict[str, Any]]]], _Source]] = {
    "jsonl": _read_jsonl,
    "claude-code": _read_claude,
    "codex": _read_codex,
}


# --- from drafts to sessions ------------------------------------------------------------------------


def _build(
    source: _Source, fmt: str, data: bytes, source_path: str | None, agent: str, device: str, now: dt.datetime | None
) -> ImportResult:
    result = ImportResult(problems=list(source.problems))
    file_id = source.first_id or _id_from_path(source_path, fmt) or _hash_id(data)
    grouped: dict[str, list[_Draft]] = {}
    for draft in source.drafts:
        grouped.setdefault(draft.session_id or file_id, []).append(draft)
    for session_id in grouped or {file_id: []}:
        messages, count = _messages(session_id, grouped.get(session_id, []))
        result.redactions += count
        if not messages:
            result.problems.append(Problem(0, f"session {session_id}: no messages"))
            continue
        title, extra, count = _described(source, session_id, session_id == file_id)
        result.redactions += count
        started, updated = _span(messages)
        result.sessions.append(
            Session(
                session_id=session_id,
                agent=agent,
                device=device,
                title=title or _title_from(messages),
                status=_status_for(updated, source.truncated, now),
                started=started,
                updated=updated,
                messages=messages,
                source_format=fmt,
                source_path=source_path,
                extra=extra,
            )
        )
    return result


def _span(messages: list[Message]) -> tuple[str | None, str | None]:
    """The earliest and the latest message time (compared as moments, not as strings)."""
    timed = sorted((moment, message.time) for message in messages if (moment := time_key(message.time)))
    return (timed[0][1], timed[-1][1]) if timed else (None, None)


def _messages(session_id: str, drafts: list[_Draft]) -> tuple[list[Message], int]:
    """Cleaned, redacted, deduplicated messages with their stable ids; and the redaction count."""
    kept: list[_Draft] = []
    total = 0
    for draft in drafts:
        text, count = redact(clean_text(draft.text))
        calls: list[str] = []
        for call in draft.tool_calls:
            safe, found = redact(clean_text(call))
            calls.append(_shorten(one_line(safe), CALL_MAX_CHARS))  # shortened only after redaction
            count += found
        total += count
        text = tidy(text)
        if text or calls:
            _keep(kept, dataclasses.replace(draft, text=text, tool_calls=calls))
    seen: Counter[tuple[str, str | None, str]] = Counter()
    messages = []
    for draft in kept:
        seen[(draft.role, draft.time, draft.text)] += 1
        occurrence = seen[(draft.role, draft.time, draft.text)]
        messages.append(
            new_message(session_id, draft.role, draft.time, draft.text, draft.tool_calls, draft.kind, occurrence)
        )
    return messages, total


def _keep(kept: list[_Draft], draft: _Draft) -> None:
    """Appends `draft`, unless it repeats the message before it; then only its new tool calls are kept."""
    last = kept[-1] if kept else None
    if last and (last.role, last.time, last.text, last.kind) == (draft.role, draft.time, draft.text, draft.kind):
        last.tool_calls = last.tool_calls + [call for call in draft.tool_calls if call not in last.tool_calls]
        return
    kept.append(draft)


def _described(source: _Source, session_id: str, is_file_session: bool) -> tuple[str, dict[str, Any], int]:
    """The session's title (from a `title` field) and frontmatter metadata, cleaned and redacted."""
    raw_title = source.titles.get(session_id) or (source.titles.get(None) if is_file_session else None) or ""
    title, total = redact(clean_text(raw_title))
    meta = (source.extra.get(None, {}) if is_file_session else {}) | source.extra.get(session_id, {})
    extra: dict[str, Any] = {}
    for key, value in meta.items():
        extra[key], count = redact(one_line(value))
        total += count
    return _shorten(one_line(title), TITLE_MAX_CHARS), extra, total


def _title_from(messages: list[Message]) -> str:
    """The first line of the first user message (already redacted). Compaction summaries are not used:
    they open with boilerplate ("This session is being continued ...")."""
    for message in messages:
        if message.role == "user" and message.kind == "message" and message.text:
            return _shorten(one_line(message.text.split("\n", 1)[0]), TITLE_MAX_CHARS)
    return ""


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _status_for(updated: str | None, truncated: bool, now: dt.datetime | None) -> Status:
    moment = time_key(updated)
    if now is None or moment is None:
        return "active"
    now = now if now.tzinfo else now.replace(tzinfo=dt.UTC)
    if now - moment <= ACTIVE_WINDOW:
        return "active"
    return "interrupted" if truncated else "done"


_UUID_TAIL = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$", re.IGNORECASE)


def _id_from_path(source_path: str | None, fmt: str) -> str | None:
    """The file name's stem (for Codex rollouts, the uuid at its end)."""
    if not source_path:
        return None
    stem = PurePosixPath(source_path.replace("\\", "/")).stem
    match = _UUID_TAIL.search(stem) if fmt == "codex" else None
    return match.group(1) if match else (one_line(stem) or None)


def _hash_id(data: bytes) -> str:
    """For a file that names no session: a hash of its first line, which stays the same as the file grows."""
    first = next((line for line in data.split(b"\n") if line.strip()), b"")
    return "s-" + hashlib.sha256(first.strip()).hexdigest()[:16]


# --- markdown ---------------------------------------------------------------------------------------


def _import_markdown(data: bytes, source_path: str | None, agent: str | None, device: str) -> ImportResult:
    try:
        session = parse_session(source_path or "session.md", data)
    except DoryError as exc:
        return ImportResult(problems=[Problem(0, exc.message)])
    total = 0
    messages = []
    for message in session.messages:
        text, count = redact(message.text)
        calls = [redact(call) for call in message.tool_calls]
        total += count + sum(found for _, found in calls)
        messages.append(dataclasses.replace(message, text=text, tool_calls=[call for call, _ in calls]))
    title, count = redact(session.title)
    preamble, found = redact(session.preamble)
    total += count + found
    if not messages:
        return ImportResult(problems=[Problem(0, f"session {session.session_id}: no messages")], redactions=total)
    session = dataclasses.replace(
        session,
        messages=messages,
        title=title,
        preamble=preamble,
        agent=agent if session.agent == "unknown" and agent else session.agent,
        device=device if session.device == "unknown" else session.device,
    )
    return ImportResult(sessions=[session], redactions=total)
