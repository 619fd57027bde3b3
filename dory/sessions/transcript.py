"""Dory's session transcript: one markdown file per agent session (SPEC §7), at
`logs/sessions/<agent>/<device>/<YYYY-MM-DD>-<session-id-slug>.md`.

    ---
    title: Fix the login redirect
    type: session
    status: active
    canonical: false
    source_kind: imported
    agent: claude-code
    device: laptop
    session_id: 7f1c0d9e-…
    started: '2026-11-20T10:00:03Z'
    updated: '2026-11-20T10:00:10Z'
    messages: 3
    source_format: claude-code
    ---

    ## user · 2026-11-20T10:00:03Z · m-1a2b3c4d5e6f

    Why does login redirect twice?

    ## assistant · 2026-11-20T10:00:09Z · m-0b1c2d3e4f50

    Let me look.

    Tool calls:
    - Bash: ls -la

    ## tool · 2026-11-20T10:00:10Z · m-9a8b7c6d5e4f · tool_result

    ```
    total 8
    ```

How `parse_session` stays the exact inverse of `render_session`:
- A section starts at a line that begins, in column 0, with `##` followed by a space, a tab or the end
  of the line. A heading of the form `## <role> [· <time>] · m-<12 hex> [· <kind>]` starts a message
  (the time is left out when unknown; the kind is left out when it is "message"). Any other section (a
  heading someone typed by hand) is appended to the previous message's text, or to the preamble.
- Escaping (reversible): a text line that would be read as structure, i.e. a column-0 `##` heading or a
  line that is exactly `Tool calls:`, is written with one more leading backslash, as are such lines
  that already start with backslashes (`## Plan` → `\\## Plan`, `\\## x` → `\\\\## x`). Parsing removes
  exactly one. `\\##` is a CommonMark escape, so outside code blocks the note still shows `## Plan`.
  The escape applies inside tool-result fences too, which keeps the parser free of fence tracking.
- Tool calls follow the text as `Tool calls:` and one `- ` bullet per call; tool results sit in a
  backtick fence longer than any backtick run in the result.
- Message text is canonical: cleaned (`clean_text`) and without leading or trailing blank lines; tool
  calls are single lines. `Message` enforces this on construction, so every Message round-trips.
- Frontmatter keys Dory owns (`_OWNED_KEYS`) are rewritten on render; any other key is kept in
  `Session.extra`. `messages` is derived from the message list.

Parsed messages carry `start_line`/`end_line` (1-based, from the heading to the last non-blank line of
the message, hand-attached sections included); `message_at_line` maps a search hit's line to its turn.

Message ids are `m-` + the first 12 hex digits of sha256(session_id, role, time, text) joined by
newlines, so importing the same source twice yields the same ids. The n-th (n ≥ 2) message of a session
with the same role, time and text gets "\\n#n" added to the hashed text, keeping ids unique.

Longer than ~400 lines: the transcript format's parser and renderer must round-trip
exactly, and are kept side by side so a change to one is seen next to the other.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Literal, cast, get_args

from dory.corpus.document import ReadProblem, parse_document
from dory.corpus.paths import SESSIONS_ROOT
from dory.errors import BrokenFrontmatter, UnreadableFile
from dory.memory.frontmatter import render
from dory.sessions.clean import clean_text
from dory.sessions.header import date_in, header_length

Role = Literal["user", "assistant", "tool", "system"]
Kind = Literal["message", "tool_result", "image", "summary"]
Status = Literal["active", "done", "interrupted", "deleted"]
ROLES: tuple[Role, ...] = get_args(Role)
KINDS: tuple[Kind, ...] = get_args(Kind)
STATUSES: tuple[Status, ...] = get_args(Status)
_STATUS_SYNONYMS = {
    "closed": "done",
    "complete": "done",
    "completed": "done",
    "finished": "done",
    "open": "active",
    "running": "active",
    "aborted": "interrupted",
    "tombstone": "deleted",
}
_OWNED_KEYS = (
    "title",
    "type",
    "status",
    "canonical",
    "source_kind",
    "agent",
    "device",
    "session_id",
    "started",
    "updated",
    "messages",
    "source_format",
    "source_path",
)
TOOL_CALLS = "Tool calls:"
# A session's continuation summary lives next to its transcript: `<transcript stem>.summary.md`.
SUMMARY_SUFFIX = ".summary.md"
_SEP = " · "
_HEADING = re.compile(
    r"^## (?P<role>user|assistant|tool|system)(?:\s+·\s+(?P<time>\S+))?\s+·\s+(?P<id>m-[0-9a-f]{12})"
    r"(?:\s+·\s+(?P<kind>message|tool_result|image|summary))?[ \t]*$"
)
_SECTION = re.compile(r"^##(?:[ \t]|$)")
_ESCAPED = re.compile(r"^\\*(?:##(?:[ \t]|$)|Tool calls:[ \t]*$)")
_UNESCAPE = re.compile(r"^\\+(?:##(?:[ \t]|$)|Tool calls:[ \t]*$)")
_FENCE = re.compile(r"^(`{3,})$")


def normalise_time(value: object) -> str | None:
    """ISO 8601 UTC with a `Z` (milliseconds only when present), or None when `value` is not a time.
    Accepts ISO strings with any offset (naive means UTC) and epoch seconds or milliseconds."""
    if value is None or isinstance(value, bool):
        return None
    try:
        if isinstance(value, int | float):
            seconds = value / 1000 if abs(value) > 1e11 else value
            moment = dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
        elif isinstance(value, str) and value.strip():
            moment = dt.datetime.fromisoformat(value.strip())
        else:
            return None
    except (ValueError, OverflowError, OSError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    moment = moment.astimezone(dt.UTC)
    millis = moment.microsecond // 1000
    stamp = moment.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{millis:03d}Z" if millis else f"{stamp}Z"


def time_key(value: str | None) -> dt.datetime | None:
    """A comparable moment for a normalised time (strings with and without milliseconds sort wrongly)."""
    if value is None:
        return None
    try:
        return dt.datetime.fromisoformat(value)
    except ValueError:
        return None


def tidy(text: str) -> str:
    """Text without leading or trailing blank (whitespace-only) lines; inner lines untouched."""
    lines = text.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


def one_line(text: str) -> str:
    return " ".join(clean_text(text).split())


def message_id(session_id: str, role: str, time: str | None, text: str, occurrence: int = 1) -> str:
    """The stable id of a message; `occurrence` tells apart repeats of the same role, time and text."""
    base = f"{session_id}\n{role}\n{time or ''}\n{text}"
    if occurrence > 1:
        base += f"\n#{occurrence}"
    return "m-" + hashlib.sha256(base.encode("utf-8", "surrogatepass")).hexdigest()[:12]


@dataclass
class Message:
    id: str
    role: Role
    time: str | None
    text: str
    tool_calls: list[str] = field(default_factory=list)
    kind: Kind = "message"
    # 1-based lines of the message's section in the file it was parsed from (heading .. last text line);
    # None for messages that were not parsed. Not part of equality: render does not depend on them.
    start_line: int | None = field(default=None, compare=False)
    end_line: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, not {self.role!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {self.kind!r}")
        if not re.fullmatch(r"m-[0-9a-f]{12}", self.id):
            raise ValueError(f"message id must be m- and 12 hex digits, not {self.id!r}")
        self.time = normalise_time(self.time)
        self.text = tidy(clean_text(self.text))
        self.tool_calls = [call for call in map(one_line, self.tool_calls) if call]


def new_message(
    session_id: str,
    role: Role,
    time: str | None,
    text: str,
    tool_calls: list[str] | None = None,
    kind: Kind = "message",
    occurrence: int = 1,
) -> Message:
    """A message whose id is computed from its canonical (cleaned, tidied) text."""
    draft = Message("m-000000000000", role, time, text, list(tool_calls or []), kind)
    draft.id = message_id(session_id, draft.role, draft.time, draft.text, occurrence)
    return draft


@dataclass
class Session:
    session_id: str
    agent: str
    device: str
    title: str = ""
    status: Status = "active"
    started: str | None = None
    updated: str | None = None
    messages: list[Message] = field(default_factory=list)
    source_format: str = "markdown"
    source_path: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # frontmatter keys Dory does not own, kept as they are
    preamble: str = ""  # text between the frontmatter and the first message (hand-written notes)
    # For a transcript written in another layout (no message headings): its paragraphs, so recall
    # can still point at a turn. Never rendered; a merge or an edit works on `messages` only.
    text_turns: list[Message] = field(default_factory=list, compare=False, repr=False)
    # For that layout too: the paragraphs before its first turn (title, date line). Metadata of the
    # session, never a turn; never rendered (the preamble already holds the whole body).
    header: str = field(default="", compare=False, repr=False)

    def __post_init__(self) -> None:
        self.session_id = one_line(str(self.session_id))
        if not self.session_id:
            raise ValueError("a session needs a session id")
        self.agent = one_line(str(self.agent)) or "unknown"
        self.device = one_line(str(self.device)) or "unknown"
        self.title = one_line(str(self.title or "")) or default_title(self.agent, self.session_id)
        self.status = _status(self.status)
        self.started = normalise_time(self.started)
        self.updated = normalise_time(self.updated)
        self.preamble = tidy(clean_text(self.preamble))

    def date(self) -> str | None:
        """When the session took place: its start, else the date its header gives, else the date in
        the frontmatter's `date` or `created`, else its last update."""
        for value in (self.started, date_in(self.header), self.extra.get("date"), self.extra.get("created")):
            moment = normalise_time(value if not isinstance(value, dt.date) else value.isoformat())
            if moment is not None:
                return moment
        return self.updated

    def turns(self) -> list[Message]:
        """What recall and context packing see: the messages, else the paragraphs of a foreign layout."""
        return self.messages or self.text_turns


def default_title(agent: str, session_id: str) -> str:
    return f"{agent} session {session_id}"


def _status(value: object) -> Status:
    text = str(value or "").strip().lower()
    text = _STATUS_SYNONYMS.get(text, text)
    return text if text in STATUSES else "active"


# --- rendering --------------------------------------------------------------------------------------


def render_session(session: Session) -> bytes:
    """The transcript note: Dory's frontmatter, then the preamble, then one `## ` section per message."""
    blocks = [_escape(session.preamble)] if session.preamble else []
    blocks += [_render_message(message) for message in session.messages]
    return render(_frontmatter(session), "\n\n".join(blocks))


def _frontmatter(session: Session) -> dict[str, Any]:
    owned: dict[str, Any] = {
        "title": session.title,
        "type": "session",
        "status": session.status,
        "canonical": False,
        "source_kind": "imported",
        "agent": session.agent,
        "device": session.device,
        "session_id": session.session_id,
        "started": session.started,
        "updated": session.updated,
        "messages": len(session.messages),
        "source_format": session.source_format,
        "source_path": session.source_path,
    }
    fm = {key: value for key, value in owned.items() if value is not None}
    return fm | {key: value for key, value in session.extra.items() if key not in _OWNED_KEYS}


def _heading(message: Message) -> str:
    parts = [message.role] + ([message.time] if message.time else []) + [message.id]
    if message.kind != "message":
        parts.append(message.kind)
    return "## " + _SEP.join(parts)


def _render_message(message: Message) -> str:
    parts = [_heading(message)]
    body = _escape(message.text)
    if message.kind == "tool_result":
        fence = _fence_for(body)
        body = f"{fence}\n{body}\n{fence}" if body else f"{fence}\n{fence}"
    if body:
        parts.append(body)
    if message.tool_calls:
        parts.append("\n".join([TOOL_CALLS] + [f"- {call}" for call in message.tool_calls]))
    return "\n\n".join(parts)


def _escape(text: str) -> str:
    return "\n".join("\\" + line if _ESCAPED.match(line) else line for line in text.split("\n"))


def _unescape(line: str) -> str:
    return line[1:] if _UNESCAPE.match(line) else line


def _fence_for(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


# --- parsing ----------------------------------------------------------------------------------------


@dataclass
class _Section:
    start: int  # 0-based index of the heading line (or of the first preamble line)
    heading: str | None
    lines: list[str]


def parse_session(rel_path: str, data: bytes) -> Session:
    """The session a transcript note holds. Tolerates hand edits (see the module docstring); refuses a
    file it cannot read (UnreadableFile) or whose frontmatter is broken (BrokenFrontmatter), so that a
    caller never rewrites such a file from a partial reading."""
    try:
        doc = parse_document(rel_path, data)
    except ReadProblem as exc:
        raise UnreadableFile(f"{rel_path}: {exc.detail}", path=rel_path, reason=exc.reason) from exc
    if doc.frontmatter_error:
        raise BrokenFrontmatter(f"{rel_path}: {doc.frontmatter_error}", path=rel_path)
    preamble, messages = _parse_body(doc.lines, doc.body_start)
    session = _session_from(doc.frontmatter, rel_path, preamble, messages)
    if not messages:
        session.header, session.text_turns = _paragraph_turns(session.session_id, doc.lines, doc.body_start)
    return session


def _paragraph_turns(session_id: str, lines: list[str], start: int) -> tuple[str, list[Message]]:
    """The header (title, date line: see `header.py`) and the blank-line separated paragraphs after
    it (headings left out) as turns with their exact line ranges."""
    paragraphs = _paragraphs(lines, start)
    skip = header_length([text for _, _, text in paragraphs])
    header = "\n\n".join(text for _, _, text in paragraphs[:skip])
    turns: list[Message] = []
    seen: dict[str, int] = {}
    for first, last, text in paragraphs[skip:]:
        if text.lstrip().startswith("#") and first == last:
            continue
        seen[text] = seen.get(text, 0) + 1
        turn = new_message(session_id, "user", None, text, occurrence=seen[text])
        turn.start_line, turn.end_line = first, last
        turns.append(turn)
    return header, turns


def _paragraphs(lines: list[str], start: int) -> list[tuple[int, int, str]]:
    """(first line, last line, text) of each blank-line separated paragraph; lines are 1-based."""
    found: list[tuple[int, int, str]] = []
    index = start
    while index < len(lines):
        if not lines[index].strip():
            index += 1
            continue
        first = index
        while index < len(lines) and lines[index].strip():
            index += 1
        found.append((first + 1, index, "\n".join(lines[first:index])))
    return found


def _sections(lines: list[str], start: int) -> list[_Section]:
    sections = [_Section(start, None, [])]
    for index in range(start, len(lines)):
        line = lines[index]
        if _SECTION.match(line):
            sections.append(_Section(index, line, []))
        else:
            sections[-1].lines.append(line)
    return sections


def _parse_body(lines: list[str], start: int) -> tuple[str, list[Message]]:
    preamble: list[str] = []
    messages: list[Message] = []
    for section in _sections(lines, start):
        match = _HEADING.match(section.heading) if section.heading is not None else None
        if match:
            messages.append(_message_from(match, section))
        elif messages:
            _attach(messages[-1], section)
        else:
            preamble += ([section.heading] if section.heading is not None else []) + section.lines
    return "\n".join(_unescape(line) for line in preamble), messages


def _message_from(match: re.Match[str], section: _Section) -> Message:
    text_lines, calls = _split_tool_calls(section.lines)
    text = tidy("\n".join(_unescape(line) for line in text_lines))
    # The heading pattern admits only Role and Kind names (and Message checks them again).
    role = cast(Role, match.group("role"))
    kind = cast(Kind, match.group("kind") or "message")
    if kind == "tool_result":
        text = _unfence(text)
    message = Message(match.group("id"), role, match.group("time"), text, calls, kind)
    message.start_line = section.start + 1
    message.end_line = _last_line(section)
    return message


def _split_tool_calls(lines: list[str]) -> tuple[list[str], list[str]]:
    for index, line in enumerate(lines):
        if line.rstrip(" \t") == TOOL_CALLS:
            calls = [re.sub(r"^[-*+][ \t]+", "", rest.strip()) for rest in lines[index + 1 :] if rest.strip()]
            return lines[:index], calls
    return lines, []


def _unfence(text: str) -> str:
    lines = text.split("\n")
    if len(lines) >= 2 and _FENCE.match(lines[0]) and lines[-1] == lines[0]:
        return "\n".join(lines[1:-1])
    return text  # a hand-edited result without its fence keeps everything


def _attach(message: Message, section: _Section) -> None:
    """A section whose heading is not a message heading belongs to the message before it."""
    text_lines, calls = _split_tool_calls([section.heading or "", *section.lines])
    raw = "\n".join(_unescape(line) for line in text_lines)
    message.text = tidy(clean_text(message.text + "\n\n" + raw))
    message.tool_calls = message.tool_calls + [call for call in map(one_line, calls) if call]
    message.end_line = _last_line(section)


def _last_line(section: _Section) -> int:
    """1-based number of the section's last non-blank line (its heading when it has no text)."""
    for offset in range(len(section.lines) - 1, -1, -1):
        if section.lines[offset].strip():
            return section.start + 2 + offset
    return section.start + 1


def _session_from(fm: dict[str, Any], rel_path: str, preamble: str, messages: list[Message]) -> Session:
    parts = PurePosixPath(rel_path).parts
    in_layout = len(parts) == 5 and "/".join(parts[:2]) == SESSIONS_ROOT
    stem = re.sub(r"^\d{4}-\d{2}-\d{2}-", "", PurePosixPath(rel_path).stem)
    source_path = fm.get("source_path")
    session_id = one_line(_text(fm.get("session_id"))) or one_line(stem)
    if not session_id:  # e.g. a name of control characters only: nothing to tell the session by
        raise UnreadableFile(
            f"{rel_path}: no session id (none in the frontmatter, and the file name gives none)",
            path=rel_path,
            reason="no_session_id",
        )
    return Session(
        session_id=session_id,
        agent=_text(fm.get("agent")) or (parts[2] if in_layout else "unknown"),
        device=_text(fm.get("device")) or (parts[3] if in_layout else "unknown"),
        title=_text(fm.get("title")),
        status=_status(fm.get("status")),
        started=_text(fm.get("started")) or None,
        updated=_text(fm.get("updated")) or None,
        messages=messages,
        source_format=_text(fm.get("source_format")) or "markdown",
        source_path=str(source_path) if source_path is not None else None,
        extra={key: value for key, value in fm.items() if key not in _OWNED_KEYS},
        preamble=preamble,
    )


def _text(value: object) -> str:
    return "" if value is None or isinstance(value, dict | list) else str(value).strip()


def message_at_line(session: Session, line: int) -> Message | None:
    """The parsed turn whose lines hold 1-based `line` (a search hit's or a citation's line), if any."""
    for message in session.turns():
        if (
            message.start_line is not None
            and message.end_line is not None
            and message.start_line <= line <= message.end_line
        ):
            return message
    return None


# --- paths ------------------------------------------------------------------------------------------

_SLUG_MAX = 64


def slug(text: str, limit: int = _SLUG_MAX) -> str:
    """Lowercase ASCII letters, digits and single hyphens; empty when nothing usable is left."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    return re.sub(r"[^a-z0-9]+", "-", folded).strip("-")[:limit].strip("-")


def _id_slug(session_id: str) -> str:
    """The session id as a file name part. When slugging changed it (case, punctuation, length), a short
    hash of the original keeps distinct ids in distinct files (`a_b` and `a-b`)."""
    base = slug(session_id, _SLUG_MAX - 9)
    if base == session_id and len(base) <= _SLUG_MAX:
        return base
    digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{base}-{digest}" if base else f"session-{digest}"


def session_path(session: Session) -> str:
    """`logs/sessions/<agent>/<device>/<YYYY-MM-DD>-<id>.md`; the date is the session's start, or
    `undated` when no message has a time. Every part is a safe slug, whatever the input."""
    agent = slug(session.agent, 40) or "unknown"
    device = slug(session.device, 40) or "unknown"
    started = time_key(session.started)
    day = started.date().isoformat() if started else "undated"
    return f"{SESSIONS_ROOT}/{agent}/{device}/{day}-{_id_slug(session.session_id)}.md"


# --- merging ----------------------------------------------------------------------------------------


def merge(existing: Session, incoming: Session) -> Session:
    """`existing` updated with what `incoming` adds: messages matched by id (tool calls united), new ones
    appended in time order, `updated`/`started`/status/source refreshed. Merging the same import twice
    changes nothing. A deleted session (tombstone) stays deleted; a renamed title and hand-added
    frontmatter keys win over the import."""
    if existing.status == "deleted":
        return dataclasses.replace(existing, messages=[_unplaced(m) for m in existing.messages])
    by_id = {message.id: message for message in incoming.messages}
    known = {message.id for message in existing.messages}
    messages = [_merged_message(message, by_id.get(message.id)) for message in existing.messages]
    fresh = list({m.id: _unplaced(m) for m in incoming.messages if m.id not in known}.values())
    keep_title = existing.title != default_title(existing.agent, existing.session_id)
    return dataclasses.replace(
        existing,
        messages=messages + _in_time_order(fresh),
        status=incoming.status,
        title=existing.title if keep_title else incoming.title,
        started=_pick(min, existing.started, incoming.started),
        updated=_pick(max, existing.updated, incoming.updated),
        source_format=incoming.source_format,
        source_path=incoming.source_path or existing.source_path,
        extra=incoming.extra | existing.extra,
    )


def _unplaced(message: Message) -> Message:
    return dataclasses.replace(message, start_line=None, end_line=None)


def _merged_message(message: Message, incoming: Message | None) -> Message:
    calls = message.tool_calls
    if incoming is not None:
        calls = calls + [call for call in incoming.tool_calls if call not in calls]
    return dataclasses.replace(message, tool_calls=calls, start_line=None, end_line=None)


def _in_time_order(messages: list[Message]) -> list[Message]:
    """Stable sort by time; a message without a time keeps the time of the message before it, so it
    stays next to its neighbour."""
    keyed: list[tuple[dt.datetime, int, Message]] = []
    last = dt.datetime.min.replace(tzinfo=dt.UTC)
    for index, message in enumerate(messages):
        last = time_key(message.time) or last
        keyed.append((last, index, message))
    return [message for _, _, message in sorted(keyed, key=lambda item: (item[0], item[1]))]


def _pick(choose: Any, first: str | None, second: str | None) -> str | None:
    present = [value for value in (first, second) if time_key(value) is not None]
    return choose(present, key=time_key) if present else (first or second)
