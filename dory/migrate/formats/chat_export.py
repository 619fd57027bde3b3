"""What the chat-export readers (chatgpt, claude-ai) share: finding the export's conversation files,
reading them one conversation at a time, and turning a conversation's session into an item.

A conversation becomes one session transcript in the session plane (SPEC §7), built by the session
importers' `build_session` (cleaning, secret redaction, stable message ids), rendered by
`render_session` at `session_path` (`logs/sessions/<agent>/export/<date>-<id>.md`), whatever `--into`
says. Its item key is `<agent>:<conversation id>`, so a second run of the same export creates
nothing. Its digest is that of the transcript's content (title, message ids, kinds and tool calls;
ids hash role, time and text), not of the conversation's JSON: exports add and change fields that
are not the conversation (`update_time`, `moderation_results`, new keys every year), and a
re-export must not import unchanged conversations a second time.

Which files are the export: every `conversations*.json` of the tree (the account exports name it
so, in a zip or unpacked), else, for a tree of at most `MAX_SNIFFED` JSON files (a single file, a
folder of saved conversations), each JSON file whose first bytes look like the format. The other
files of an export (`chat.html`, `user.json`, `users.json`, `projects.json`, uploaded images, …)
are left out, and one `not_imported` problem names them so the report says so; a conversation file
of the other chat format is an `other_format` problem saying which `--from` reads it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Generator, Iterator
from typing import Literal

from dory.migrate.formats.json_items import BrokenJson, json_items
from dory.migrate.model import Item, ItemProblem, Output, SourceFile, SourceTreeLike, Yielded, digest_of
from dory.sessions.importers.build import build_session
from dory.sessions.importers.common import Draft
from dory.sessions.transcript import Session, Status, render_session, session_path

ChatFormat = Literal["chatgpt", "claude-ai"]
DEVICE = "export"
MAX_SNIFFED = 20  # JSON files looked into when none is named conversations*.json
SNIFF_BYTES = 64 * 1024
LISTED_LEFT_OUT = 5  # file names the not_imported problem shows
DONE: Status = "done"  # an export is a finished snapshot: its conversations are not running


class BrokenConversation(ValueError):
    """A conversation that cannot be read (a broken message tree, no messages): one problem."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


Convert = Callable[[dict[str, object], str], Item]


def sniff(data: bytes) -> ChatFormat | None:
    """Which chat export the first bytes of a JSON file look like, if any."""
    head = data[:SNIFF_BYTES].decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    if not head.startswith(("[", "{")):
        return None
    if '"mapping"' in head and '"children"' in head:
        return "chatgpt"
    if '"chat_messages"' in head or '"current_leaf_message_uuid"' in head:
        return "claude-ai"
    return None


def candidates(tree: SourceTreeLike) -> list[SourceFile]:
    """The JSON files that may hold conversations (see the module docstring)."""
    jsons = [file for file in tree.files() if file.suffix == "json"]
    named = [file for file in jsons if file.name.lower().startswith("conversations")]
    if named:
        return named
    return jsons if len(jsons) <= MAX_SNIFFED else []


def detect(tree: SourceTreeLike, fmt: ChatFormat) -> int:
    """20 when a conversation file of the tree is in `fmt`, else 0."""
    for file in candidates(tree):
        try:
            if sniff(file.read()) == fmt:
                return 20
        except (OSError, ValueError):
            continue
    return 0


def read_export(tree: SourceTreeLike, fmt: ChatFormat, convert: Convert) -> Iterator[Yielded]:
    """Every conversation of every conversation file of the tree in `fmt`, as items or problems;
    then problems naming the files left out (another chat format's, and all other files)."""
    used: set[str] = set()
    for file in candidates(tree):
        found = yield from _read_file(file, fmt, convert)
        if found is not None:
            used.add(file.rel)
        if found not in (None, fmt):
            yield ItemProblem(file.rel, "other_format", f"holds {found} conversations: migrate it with --from {found}")
    left_out = [file.rel for file in tree.files() if file.rel not in used]
    if left_out:
        shown = ", ".join(left_out[:LISTED_LEFT_OUT]) + (
            f", … ({len(left_out)} files)" if len(left_out) > LISTED_LEFT_OUT else ""
        )
        yield ItemProblem(tree.label, "not_imported", f"not part of a {fmt} conversation export, left out: {shown}")


def _read_file(file: SourceFile, fmt: ChatFormat, convert: Convert) -> Generator[Yielded, None, ChatFormat | None]:
    """The conversations of one file when it is in `fmt`; returns the chat format it is in, if any."""
    try:
        data = file.read()
    except (OSError, ValueError) as exc:
        yield ItemProblem(file.rel, "unreadable", str(exc))
        return fmt
    found = sniff(data)
    if found is None and file.name.lower().startswith("conversations"):
        found = fmt  # a conversations.json that is not even JSON: report it as this format's bad file
    if found != fmt:
        return found
    items = json_items(data)
    del data  # from here `items` holds the only reference to the file's bytes
    count = 0
    try:
        for value in items:
            count += 1
            yield _conversation(value, f"{file.rel}#{count}", convert)
    except BrokenJson as exc:
        what = "the file is cut off" if exc.truncated else "not valid JSON"
        yield ItemProblem(file.rel, "bad_json", f"{what}: {exc}; {exc.count} conversations before it were read")
    return fmt


def _conversation(value: object, where: str, convert: Convert) -> Yielded:
    """One conversation as an item; a problem when it cannot be read, never an exception."""
    if not isinstance(value, dict):
        return ItemProblem(where, "bad_conversation", f"expected a conversation object, found {type(value).__name__}")
    try:
        return convert(value, where)
    except BrokenConversation as exc:
        return ItemProblem(where, exc.code, str(exc))
    except (TypeError, ValueError, AttributeError, KeyError, RecursionError) as exc:
        # A field of an unexpected type deep inside one conversation: that one is left out, not the export.
        return ItemProblem(where, "bad_conversation", f"{type(exc).__name__}: {exc}")


def conversation_id(conversation: dict[str, object], *keys: str) -> str:
    """The conversation's own id, else one derived from its title and creation time (stable across
    exports of the same conversation, unlike its position in the file)."""
    for key in keys:
        value = conversation.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    title = conversation.get("title") or conversation.get("name")
    seed = json.dumps([title, conversation.get("create_time") or conversation.get("created_at")], default=str)
    return "c-" + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:16]


def session_item(
    fmt: ChatFormat,
    session_id: str,
    drafts: list[Draft],
    *,
    title: str,
    source: str,
    extra: dict[str, object],
    fallback_time: str | None = None,
) -> Item:
    """The item of one conversation: its session transcript. BrokenConversation when no turn is left."""
    session, redacted = build_session(
        session_id,
        drafts,
        agent=fmt,
        device=DEVICE,
        source_format=fmt,
        title=title,
        extra={key: value for key, value in extra.items() if isinstance(value, str) and value.strip()},
        source_path=source.split("#", 1)[0],
        status=DONE,
    )
    if session is None:
        raise BrokenConversation("empty_conversation", "the conversation has no messages to import")
    if session.started is None and fallback_time is not None:  # no message carries a time
        session.started = session.updated = fallback_time
    note = f"{redacted} secrets redacted" if redacted else ""
    output = Output(session_path(session), render_session(session), "session")
    where = f"{source.split('#', 1)[0]}#{session_id}"
    return Item(f"{fmt}:{session_id}", "session", where, session_digest(session), [output], note=note)


def session_digest(session: Session) -> str:
    """What a session says, as a digest: its title and each message's id, kind and tool calls."""
    return digest_of(session.title, *(f"{m.id} {m.kind} {chr(31).join(m.tool_calls)}" for m in session.messages))


def shorten(text: str, limit: int) -> str:
    """A long tool output cut to `limit` characters, saying how much was left out."""
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[:limit].rstrip() + f"\n… ({len(text) - limit} more characters)"
