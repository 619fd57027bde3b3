"""`dory sessions hook ingest|precompact`: a Claude Code transcript into Dory as the session goes.

`ingest` (Stop, SessionEnd) imports the transcript named by the event, which only adds the turns
that are new since the last time (sessions ingest is idempotent). `precompact` (PreCompact) does
the same and then flushes the session's durable facts into proposals, as `dory sessions compact`
does first, because the harness is about to summarise the conversation away. The agent never
waits on these: Stop runs in the background and every path fails open (dory.surfaces.hooks.failopen).
"""

from __future__ import annotations

import sys
from typing import BinaryIO, Literal, NoReturn

from dory.errors import FileTooLarge, NotFound, UnreadableFile, UsageError
from dory.surfaces.hooks import failopen
from dory.surfaces.hooks.event import HookEvent, read_event
from dory.surfaces.hooks.target import Target

DEADLINE_S = 50.0  # below the 60 s Claude Code is told to allow (dory connect writes both)
Kind = Literal["ingest", "precompact"]


def run(kind: Kind, target: Target, deadline_s: float, stdin: BinaryIO) -> NoReturn:
    failopen.run(kind, lambda: capture(kind, target, read_event(stdin)), deadline_s)


def capture(kind: Kind, target: Target, event: HookEvent) -> None:
    from dory.models import FlushRequest, SessionIngestRequest
    from dory.surfaces.services import open_service

    if not event.transcript_path:
        raise UsageError("the hook event names no transcript_path")
    content = read_transcript(event.transcript_path)
    req = SessionIngestRequest(content=content, format="claude-code", source_path=event.transcript_path)
    with open_service(target.corpus, target.state_dir, target.server, target.token, surface="hook") as service:
        ingested = service.sessions.ingest(req)
        notes = [f"session {s.session_id}: {s.action}, {s.added} new turn(s)" for s in ingested.sessions]
        if kind == "precompact":
            for session in ingested.sessions:
                flushed = service.sessions.flush(FlushRequest(id=session.path))
                notes.append(f"{len(flushed.proposals)} fact(s) proposed, {flushed.proposals_existing} already")
    sys.stderr.write(f"dory {kind} hook: " + ("; ".join(notes) or "no turns in the transcript yet") + "\n")


def read_transcript(path: str) -> str:
    from dory.models.common import MAX_INGEST_BYTES  # pydantic: loaded when a hook runs, not for `dory --help`

    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_INGEST_BYTES + 1)
    except FileNotFoundError as exc:
        raise NotFound(f"transcript {path} does not exist", path=path) from exc
    except OSError as exc:
        raise UnreadableFile(f"cannot read transcript {path}: {exc.strerror or exc}", path=path) from exc
    if len(data) > MAX_INGEST_BYTES:
        raise FileTooLarge(f"transcript {path} is over the {MAX_INGEST_BYTES}-byte ingest cap", path=path)
    return data.decode("utf-8", errors="replace")
