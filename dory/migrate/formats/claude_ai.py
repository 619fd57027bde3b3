"""Claude.ai conversations (`conversations.json`, alone or in the export's zip): one session per conversation.

Three shapes, told apart per conversation by the fields present:
- the account export (a list of conversations with `uuid`, `name`, `chat_messages`): messages with
  `sender` human/assistant and, in older exports, only `text`. Messages are not always in order in
  the file; they are sorted by `created_at`, stably, so a human/assistant pair sharing one
  `created_at` keeps its order;
- the web API's conversation (one object, as browser exporters save it): `current_leaf_message_uuid`
  and each message's `parent_message_uuid` make a tree; the visible conversation is the path from
  the current leaf back to the root, so edited and regenerated branches do not duplicate turns.
  Messages that all carry `parent_message_uuid` without a current leaf follow the newest leaf. A
  cycle, a parent that is not in the conversation (other than the root's all-zero id) or a current
  leaf pointing nowhere is a `broken_tree` problem for that conversation only;
- the 2025 export: `content` blocks (`text`, `thinking`, `tool_use`, `tool_result`) with
  `start_timestamp`. Content blocks are read whenever a message has them, because an assistant's
  top-level `text` can include its thinking; the top-level `text` is used only without blocks
  (a web API human message has an empty `text`: its words are in its blocks).

Blocks: `text` kept; `thinking` (and `<antThinking>` tags in text) left out as private scratch;
`tool_use` a tool call line (`web_search: query`) on the assistant message, except the artifacts
tool, whose content is shown as the artifact (and `create_file`, whose file is shown too);
`tool_result` a compact tool message (search results as titles and addresses, other output cut to
`TOOL_RESULT_MAX_CHARS`, `[error]` first when it failed). `<antArtifact …>` markup in text becomes
a readable title and a fenced block. Files and attachments are named on the human message
(`[image]`, `[file: name]`); their extracted text is not imported. The conversation's `name` is
the title; `model` (web API shape) goes to the frontmatter.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from dory.migrate.formats import chat_export
from dory.migrate.formats.chat_export import BrokenConversation, shorten
from dory.migrate.model import Item, ReadContext, SourceTreeLike, Yielded
from dory.migrate.text import fence
from dory.sessions.importers.common import IMAGE, Draft, call_line, flatten
from dory.sessions.transcript import Role, normalise_time, time_key

ROOT_PARENT = "00000000-0000-4000-8000-000000000000"
SENDERS: dict[str, Role] = {"human": "user", "user": "user", "assistant": "assistant"}
TOOL_RESULT_MAX_CHARS = 1500
RESULTS_MAX = 10
IMAGE_NAMES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".heic", ".bmp", ".svg")
_THINKING = re.compile(r"<antThinking>.*?(?:</antThinking>|\Z)[ \t]*\n*", re.DOTALL)
_ARTIFACT = re.compile(r"<antArtifact\b(?P<attrs>[^>]*)>\n?(?P<body>.*?)(?:</antArtifact>|\Z)", re.DOTALL)
_ATTR = re.compile(r'(\w+)="([^"]*)"')
_LANGUAGES = {
    "application/vnd.ant.react": "jsx",
    "text/html": "html",
    "image/svg+xml": "svg",
    "text/markdown": "markdown",
    "application/vnd.ant.mermaid": "mermaid",
}


class ClaudeAIReader:
    """Claude.ai conversations: the account export or a saved conversation, one session each."""

    name = "claude-ai"
    into = "logs/sessions/claude-ai/export"  # where the transcripts go, whatever --into says

    def detect(self, tree: SourceTreeLike) -> int:
        return chat_export.detect(tree, "claude-ai")

    def read(self, tree: SourceTreeLike, ctx: ReadContext) -> Iterator[Yielded]:
        return chat_export.read_export(tree, "claude-ai", conversation_item)


def conversation_item(conversation: dict[str, Any], where: str) -> Item:
    session_id = chat_export.conversation_id(conversation, "uuid", "id")
    messages = conversation.get("chat_messages")
    if not isinstance(messages, list) or not messages:
        raise BrokenConversation("empty_conversation", f"conversation {session_id} has no messages")
    drafts: list[Draft] = []
    for message in ordered(conversation, [m for m in messages if isinstance(m, dict)], session_id):
        drafts += message_drafts(message)
    title = conversation.get("name")
    return chat_export.session_item(
        "claude-ai",
        session_id,
        drafts,
        title=title if isinstance(title, str) else "",
        source=where,
        extra={"model": conversation.get("model")},
        fallback_time=normalise_time(conversation.get("created_at")),
    )


def ordered(conversation: dict[str, Any], messages: list[dict[str, Any]], session_id: str) -> list[dict[str, Any]]:
    """The visible messages in order: the current branch of the tree when there is one, else by time."""
    leaf = conversation.get("current_leaf_message_uuid")
    is_tree = all("parent_message_uuid" in message for message in messages)
    if leaf is None and not is_tree:
        return _by_time(messages)
    by_id = {m["uuid"]: m for m in messages if isinstance(m.get("uuid"), str)}
    if leaf is None:
        leaf = _newest_leaf(messages)
    if not isinstance(leaf, str) or leaf not in by_id:
        raise BrokenConversation("broken_tree", f"conversation {session_id}: current leaf {leaf!r} is not a message")
    path: list[dict[str, Any]] = []
    seen: set[str] = set()
    current: str = leaf
    while True:
        message = by_id[current]
        seen.add(current)
        path.append(message)
        parent = message.get("parent_message_uuid")
        if parent is None or parent == ROOT_PARENT:
            return path[::-1]
        if not isinstance(parent, str) or parent not in by_id:
            raise BrokenConversation("broken_tree", f"conversation {session_id}: parent {parent!r} is not a message")
        if parent in seen:
            raise BrokenConversation("broken_tree", f"conversation {session_id}: the parents of {leaf} loop")
        current = parent


def _by_time(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stable sort by `created_at`; a message without a time stays after the one before it."""
    keyed = []
    last = 0.0
    for position, message in enumerate(messages):
        moment = time_key(normalise_time(message.get("created_at")))
        last = moment.timestamp() if moment else last
        keyed.append((last, position, message))
    return [message for _, _, message in sorted(keyed, key=lambda entry: (entry[0], entry[1]))]


def _newest_leaf(messages: list[dict[str, Any]]) -> str | None:
    """The newest message no other message answers (the last one in the file on a tie)."""
    parents = {message.get("parent_message_uuid") for message in messages}
    best: tuple[float, int, str] | None = None
    for position, message in enumerate(messages):
        uuid = message.get("uuid")
        if not isinstance(uuid, str) or uuid in parents:
            continue
        moment = time_key(normalise_time(message.get("created_at")))
        key = (moment.timestamp() if moment else 0.0, position, uuid)
        best = key if best is None or key > best else best
    return best[2] if best else None


def message_drafts(message: dict[str, Any]) -> list[Draft]:
    """One chat message as drafts: its text, and for an assistant its tool calls and results."""
    role = SENDERS.get(str(message.get("sender", "")).lower())
    if role is None:
        return []
    time = normalise_time(message.get("created_at"))
    blocks = message.get("content")
    if isinstance(blocks, list) and blocks:
        drafts = _from_blocks(role, time, [block for block in blocks if isinstance(block, dict)])
    else:
        text = message.get("text")
        drafts = [Draft(role, time, readable(text) if isinstance(text, str) else "")]
    files = _files(message)
    if files and role == "user":
        first = drafts[0] if drafts else Draft(role, time, "")
        first.text = "\n\n".join(part for part in (first.text, files) if part)
        drafts = drafts or [first]
    return drafts


def _from_blocks(role: Role, time: str | None, blocks: list[dict[str, Any]]) -> list[Draft]:
    drafts: list[Draft] = []
    for block in blocks:
        kind = block.get("type")
        at = normalise_time(block.get("start_timestamp")) or time
        if kind in ("thinking", "redacted_thinking"):
            continue
        if kind == "tool_result":
            drafts.append(Draft("tool", at, _tool_result(block), kind="tool_result"))
            continue
        if not drafts or drafts[-1].role != role:
            drafts.append(Draft(role, at, ""))
        current = drafts[-1]
        if kind == "tool_use" and block.get("name") == "artifacts" and isinstance(block.get("input"), dict):
            current.text = _joined(current.text, _artifact_call(block["input"]))
        elif kind == "tool_use":
            current.tool_calls.append(call_line(block.get("name"), block.get("input")))
            current.text = _joined(current.text, _created_file(block))
        elif kind == "text":
            current.text = _joined(current.text, readable(str(block.get("text") or "")))
        else:  # images, documents and kinds not seen yet: what text they carry
            current.text = _joined(current.text, flatten(block))
    return drafts


def _joined(first: str, second: str) -> str:
    return "\n\n".join(part for part in (first.strip("\n"), second.strip("\n")) if part.strip())


def readable(text: str) -> str:
    """Assistant text without `<antThinking>` scratch, `<antArtifact>` markup as a titled block."""
    return _ARTIFACT.sub(_artifact_markup, _THINKING.sub("", text))


def _artifact_markup(match: re.Match[str]) -> str:
    attrs = dict(_ATTR.findall(match.group("attrs")))
    return _artifact(attrs.get("title") or attrs.get("identifier") or "", attrs, match.group("body"))


def _artifact_call(arguments: dict[str, Any]) -> str:
    """The 2025 artifacts tool: `create`/`rewrite` carry the whole artifact, `update` a replacement."""
    title = str(arguments.get("title") or arguments.get("id") or "")
    command = arguments.get("command")
    if command == "update":
        new = str(arguments.get("new_str") or "")
        return f"**Artifact update: {title}**\n\n{fence(new)}" if new else f"**Artifact update: {title}**"
    attrs = {key: str(value) for key, value in arguments.items() if isinstance(value, str)}
    return _artifact(title, attrs, str(arguments.get("content") or ""))


def _created_file(block: dict[str, Any]) -> str:
    """The file Claude's `create_file` tool wrote, shown as the user saw it (empty for other tools)."""
    arguments = block.get("input")
    if block.get("name") != "create_file" or not isinstance(arguments, dict):
        return ""
    body = arguments.get("file_text")
    if not isinstance(body, str) or not body.strip():
        return ""
    return f"**File: {arguments.get('path') or 'unnamed'}**\n\n{fence(body.strip(chr(10)))}"


def _artifact(title: str, attrs: dict[str, str], body: str) -> str:
    kind = attrs.get("type", "")
    language = attrs.get("language") or _LANGUAGES.get(kind, "")
    heading = f"**Artifact: {title}**" if title else "**Artifact**"
    return f"{heading}\n\n{fence(body.strip(chr(10)), language)}" if body.strip() else heading


def _tool_result(block: dict[str, Any]) -> str:
    content = block.get("content")
    items = content if isinstance(content, list) else [content]
    found = [
        f"- {item.get('title')} ({item.get('url')})" if item.get("url") else f"- {item.get('title')}"
        for item in items
        if isinstance(item, dict) and item.get("type") == "knowledge" and item.get("title")
    ]
    if len(found) > RESULTS_MAX:
        found = [*found[:RESULTS_MAX], f"- … ({len(found) - RESULTS_MAX} more results)"]
    text = "\n".join(found) if found else shorten(flatten(content), TOOL_RESULT_MAX_CHARS)
    return f"[error]\n{text}" if block.get("is_error") is True else text


def _files(message: dict[str, Any]) -> str:
    """The message's uploads by name: images as `[image]`, other files as `[file: name]`."""
    named: list[str] = []
    for key in ("attachments", "files_v2" if message.get("files_v2") else "files"):
        for entry in message.get(key) or []:
            if not isinstance(entry, dict):
                continue
            name = str(entry.get("file_name") or "").strip()
            is_image = entry.get("file_kind") == "image" or name.lower().endswith(IMAGE_NAMES)
            named.append(IMAGE if is_image else f"[file: {name or 'unnamed'}]")
    return "\n".join(named)
