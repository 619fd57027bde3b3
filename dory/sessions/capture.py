"""Capture: Claude Code and Codex transcripts read as they grow, handed on as session pieces.

Harness transcripts are append-only JSON lines, so each file is read incrementally (marks kept in
the capture ledger): only complete lines count (a line still being written waits for its newline);
a file that grew is parsed from where its last message began (`ImportResult.resume_line`: a Claude
Code response spans several lines, a Codex tool call joins the message before it), with the file's
first line in front (Codex names its session and working folder there); a file that shrank, or whose
last read line is no longer what it was (rewritten), is read again from the start. Reading again
what was read before adds nothing: message ids are stable and the session plane merges by them.

What a run finds goes to a `Sink` as `SessionIngestRequest`s in Dory's markdown format, at most
`PIECE_BYTES` of messages each (a first capture of a long session fits the HTTP body cap): the local
corpus, or the spool of a remote server (dory/sessions/shipping.py). A file's mark moves on only
after its pieces were taken, so a failure means reading the same lines again next time.

Known limit: a message repeated with the same role, time and text on both sides of the point a read
starts from gets the same id twice and is kept once (real transcripts time-stamp every line).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from dory.config import Settings
from dory.errors import DoryError
from dory.models import SessionIngestRequest
from dory.sessions.capture_ledger import CaptureLedger, FileMark
from dory.sessions.harness import HARNESSES, Harness, harness_root, this_device, transcripts
from dory.sessions.importers import ACTIVE_WINDOW, parse_source
from dory.sessions.transcript import Message, Session, render_session

PIECE_BYTES = 1024 * 1024
HEAD_MAX_BYTES = 1024 * 1024  # the first line is read for context only up to this size


class Sink(Protocol):
    def deliver(self, requests: list[SessionIngestRequest]) -> None:
        """Take the pieces of one transcript, or raise (the file is then read again next time)."""
        ...


@dataclass
class CaptureReport:
    files: int = 0  # transcripts looked at
    read: int = 0  # transcripts with new lines (or read again)
    restarted: int = 0  # read again from the start: shrunk or rewritten
    sessions: int = 0
    messages: int = 0  # messages handed on (already known ones included)
    pieces: int = 0
    redactions: int = 0
    forgotten: int = 0  # marks of transcripts that are gone, dropped
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Window:
    data: bytes  # what the parser reads: [first line +] the complete lines from `start`
    offsets: list[int]  # the file offset of each line of `data`
    start: int
    end: int  # the file offset after the last complete line
    restarted: bool


def roots(settings: Settings) -> dict[Harness, Path]:
    return {harness: harness_root(harness, settings) for harness in HARNESSES}


def capture(settings: Settings, ledger: CaptureLedger, sink: Sink, now: dt.datetime | None = None) -> CaptureReport:
    """One pass over every transcript of every harness root."""
    now = now or dt.datetime.now(dt.UTC)
    report = CaptureReport()
    device = settings.capture.device or this_device()
    for harness, root in roots(settings).items():
        # No size cap: a transcript is read a part at a time (only its first read is whole).
        for path in transcripts(root, harness, None, report.warnings, max_bytes=None):
            report.files += 1
            try:
                _capture_file(path, harness, device, ledger, sink, now, report)
            except (OSError, DoryError) as exc:  # one bad file never stops the others
                report.warnings.append(f"{path}: {getattr(exc, 'message', None) or exc}")
    report.forgotten = ledger.forget_missing()
    return report


def _capture_file(
    path: Path,
    harness: Harness,
    device: str,
    ledger: CaptureLedger,
    sink: Sink,
    now: dt.datetime,
    report: CaptureReport,
) -> None:
    st = path.stat()
    mark = ledger.mark(str(path))
    window = _window(path, mark, st.st_size, st.st_mtime_ns, now)
    if window is None:
        return
    result = parse_source(window.data, harness, str(path), None, device, now=now)
    requests = [request for session in result.sessions for request in _requests(session)]
    sink.deliver(requests)
    report.read += 1
    report.restarted += window.restarted
    report.sessions += len(result.sessions)
    report.messages += sum(len(session.messages) for session in result.sessions)
    report.pieces += len(requests)
    report.redactions += result.redactions
    for problem in result.problems:
        if not problem.message.endswith("no messages"):  # a read of a few lines may hold none
            where = f":{problem.line}" if window.start == 0 and problem.line else ""
            report.warnings.append(f"{path}{where}: {problem.message}")
    ledger.save(_next_mark(path, harness, window, result.resume_line, result.sessions, st))


def _window(path: Path, mark: FileMark | None, size: int, mtime_ns: int, now: dt.datetime) -> _Window | None:
    """What to parse now, or None when there is nothing new."""
    if mark is None:
        return _read(path, 0, restarted=False)
    if (size, mtime_ns) == (mark.size, mark.mtime_ns):
        if mark.status == "active" and _quiet(mtime_ns, now):  # read its last message again: now done
            return _read(path, mark.resume, restarted=False, until=mark.consumed)
        return None
    if size < mark.consumed or not _tail_intact(path, mark):  # shrunk or rewritten
        return _read(path, 0, restarted=True)
    window = _read(path, mark.resume, restarted=False)
    return window if window is not None and window.end > mark.consumed else None


def _quiet(mtime_ns: int, now: dt.datetime) -> bool:
    return now - dt.datetime.fromtimestamp(mtime_ns / 1e9, dt.UTC) > ACTIVE_WINDOW


def _tail_intact(path: Path, mark: FileMark) -> bool:
    with path.open("rb") as handle:
        handle.seek(mark.tail_start)
        line = handle.read(mark.consumed - mark.tail_start)
    return _hash(line) == mark.tail_hash


def _read(path: Path, start: int, restarted: bool, until: int | None = None) -> _Window | None:
    """The complete lines from `start` (to `until`), with the file's first line in front."""
    with path.open("rb") as handle:
        head = b"" if start == 0 else handle.readline(HEAD_MAX_BYTES)
        if not head.endswith(b"\n"):
            head = b""
        handle.seek(start)
        body = handle.read() if until is None else handle.read(until - start)
    cut = body.rfind(b"\n") + 1
    if cut == 0:
        return None
    body = body[:cut]
    offsets = [0] if head else []
    offsets += [start + i for i in _line_starts(body)]
    return _Window(head + body, offsets, start, start + cut, restarted)


def _line_starts(data: bytes) -> list[int]:
    starts, at = [], 0
    while at < len(data):
        starts.append(at)
        at = data.index(b"\n", at) + 1
    return starts


def _next_mark(
    path: Path,
    harness: str,
    window: _Window,
    resume_line: int | None,
    sessions: list[Session],
    st: os.stat_result,
) -> FileMark:
    tail_start = window.offsets[-1]
    tail = window.data[len(window.data) - (window.end - tail_start) :]
    # Parse again from where the last message began; never before this read's start (that message
    # began earlier and was read again already), and past everything when no message was found.
    resume = window.end if resume_line is None else max(window.start, window.offsets[resume_line - 1])
    active = any(session.status == "active" for session in sessions)
    return FileMark(
        path=str(path),
        harness=harness,
        consumed=window.end,
        tail_start=tail_start,
        tail_hash=_hash(tail),
        resume=resume,
        size=st.st_size,
        mtime_ns=st.st_mtime_ns,
        status="active" if active else "done",
    )


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _requests(session: Session) -> list[SessionIngestRequest]:
    return [
        SessionIngestRequest(
            content=render_session(piece).decode("utf-8"),
            format="markdown",
            source_path=session.source_path,
            agent=session.agent,
            device=session.device,
        )
        for piece in _pieces(session)
    ]


def _pieces(session: Session) -> list[Session]:
    """The session in parts of at most about PIECE_BYTES of messages (one message may be more)."""
    parts: list[Session] = []
    chunk: list[Message] = []
    size = 0
    for message in session.messages:
        weight = len(message.text.encode("utf-8")) + sum(len(call) for call in message.tool_calls) + 100
        if chunk and size + weight > PIECE_BYTES:
            parts.append(dataclasses.replace(session, messages=chunk))
            chunk, size = [], 0
        chunk.append(message)
        size += weight
    parts.append(dataclasses.replace(session, messages=chunk))
    return parts


LocalIngest = Callable[[SessionIngestRequest], object]


@dataclass
class LocalSink:
    """Saves pieces into this corpus (through the service: the transcript, then its index)."""

    ingest: LocalIngest

    def deliver(self, requests: list[SessionIngestRequest]) -> None:
        for request in requests:
            self.ingest(request)
