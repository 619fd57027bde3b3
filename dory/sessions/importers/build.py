"""From drafts to sessions: cleaning, redaction, deduplication, ids, titles, status and the session id."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import re
from collections import Counter
from pathlib import PurePosixPath
from typing import Any

from dory.sessions.clean import clean_text, redact
from dory.sessions.importers.common import Draft, ImportResult, Problem, _Source
from dory.sessions.transcript import Message, Session, Status, new_message, one_line, tidy, time_key

CALL_MAX_CHARS = 200
TITLE_MAX_CHARS = 100
ACTIVE_WINDOW = dt.timedelta(minutes=30)


def _build(
    source: _Source, fmt: str, data: bytes, source_path: str | None, agent: str, device: str, now: dt.datetime | None
) -> ImportResult:
    result = ImportResult(problems=list(source.problems))
    file_id = source.first_id or _id_from_path(source_path, fmt) or _hash_id(data)
    grouped: dict[str, list[Draft]] = {}
    for draft in source.drafts:
        grouped.setdefault(draft.session_id or file_id, []).append(draft)
    for session_id in grouped or {file_id: []}:
        is_file_session = session_id == file_id
        raw_title = source.titles.get(session_id) or (source.titles.get(None) if is_file_session else None) or ""
        meta = (source.extra.get(None, {}) if is_file_session else {}) | source.extra.get(session_id, {})
        session, count = build_session(
            session_id,
            grouped.get(session_id, []),
            agent=agent,
            device=device,
            source_format=fmt,
            title=raw_title,
            extra=meta,
            source_path=source_path,
        )
        result.redactions += count
        if session is None:
            result.problems.append(Problem(0, f"session {session_id}: no messages"))
            continue
        session.status = _status_for(session.updated, source.truncated, now)
        result.sessions.append(session)
    return result


def build_session(
    session_id: str,
    drafts: list[Draft],
    *,
    agent: str,
    device: str,
    source_format: str,
    title: str = "",
    extra: dict[str, Any] | None = None,
    source_path: str | None = None,
    status: Status = "active",
) -> tuple[Session | None, int]:
    """One session from a reader's drafts, and how many secrets were redacted. Messages, title and
    metadata are cleaned and redacted before ids are computed (same drafts, same bytes); None when
    no message is left. Other importers (chat exports in dory.migrate) build their sessions here."""
    messages, total = _messages(session_id, drafts)
    if not messages:
        return None, total
    clean_title, clean_extra, count = _described(title, extra or {})
    started, updated = _span(messages)
    session = Session(
        session_id=session_id,
        agent=agent,
        device=device,
        title=clean_title or _title_from(messages),
        status=status,
        started=started,
        updated=updated,
        messages=messages,
        source_format=source_format,
        source_path=source_path,
        extra=clean_extra,
    )
    return session, total + count


def _span(messages: list[Message]) -> tuple[str | None, str | None]:
    """The earliest and the latest message time (compared as moments, not as strings)."""
    timed = sorted((moment, message.time) for message in messages if (moment := time_key(message.time)))
    return (timed[0][1], timed[-1][1]) if timed else (None, None)


def _messages(session_id: str, drafts: list[Draft]) -> tuple[list[Message], int]:
    """Cleaned, redacted, deduplicated messages with their stable ids; and the redaction count."""
    kept: list[Draft] = []
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


def _keep(kept: list[Draft], draft: Draft) -> None:
    """Appends `draft`, unless it repeats the message before it; then only its new tool calls are kept."""
    last = kept[-1] if kept else None
    if last and (last.role, last.time, last.text, last.kind) == (draft.role, draft.time, draft.text, draft.kind):
        last.tool_calls = last.tool_calls + [call for call in draft.tool_calls if call not in last.tool_calls]
        return
    kept.append(draft)


def _described(raw_title: str, meta: dict[str, Any]) -> tuple[str, dict[str, Any], int]:
    """The session's title and frontmatter metadata, cleaned and redacted."""
    title, total = redact(clean_text(raw_title))
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
