"""Dory's own markdown transcripts, read back and redacted again."""

from __future__ import annotations

import dataclasses

from dory.errors import DoryError
from dory.sessions.clean import redact
from dory.sessions.importers.common import ImportResult, Problem
from dory.sessions.transcript import parse_session


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
