"""ChatGPT's data export (`conversations.json`, alone or in the export's zip): one session per conversation.

A conversation is a tree (`mapping`: node id → {message, parent, children}); editing a prompt or
regenerating an answer adds a sibling branch. The visible conversation is the path from
`current_node` back through `parent` to the root (a node without a parent: `client-created-root`
in 2025 exports, a node with `message: null` before), so abandoned branches never duplicate turns.
Without a `current_node` the most recent leaf is taken. A cycle, a parent missing from the mapping
or a `current_node` pointing nowhere is a `broken_tree` problem for that conversation only.

Each message on the path, by `author.role` and `content.content_type`:
- left out: hidden messages (`metadata.is_visually_hidden_from_conversation`, and system messages
  of `weight` 0: the empty default prompt), private scratch (`thoughts`, `reasoning_recap`), the
  user's custom instructions and the model's memory context (`user_editable_context`,
  `model_editable_context`);
- user, assistant and visible system messages: `text` parts joined; `multimodal_text` parts kept
  as text, `image_asset_pointer` as `[image]`, audio transcriptions as their words; assistant
  `code` for the user (`recipient: all`) in a fence; 2025 citation markers (`\\ue200cite…\\ue201`)
  removed;
- an assistant message addressed to a tool (`recipient: browser`, `python`, `web.run`, …) is a
  tool call line (`browser: search("…")`) on the assistant message before it, or on a new one; a
  canvas document it creates (`canmore.create_textdoc`) is shown in full, as the user saw it;
- tool messages (`role: tool`) are compact tool results: a search page as its result titles
  (`tether_browsing_display`), a quoted page as its title, address and first lines (`tether_quote`),
  other outputs cut to `TOOL_RESULT_MAX_CHARS`. Tool turns carry `weight` 0 too: weight hides only
  system messages.
Message times are `create_time`; the conversation's `create_time` dates a session with none.
The title is the conversation's; the model (`default_model_slug`) goes to the frontmatter.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from dory.migrate.formats import chat_export
from dory.migrate.formats.chat_export import BrokenConversation, shorten
from dory.migrate.model import Item, ReadContext, SourceTreeLike, Yielded
from dory.migrate.text import fence
from dory.sessions.importers.common import IMAGE, Draft
from dory.sessions.transcript import normalise_time, time_key

SKIPPED_CONTENT = frozenset({"thoughts", "reasoning_recap", "user_editable_context", "model_editable_context"})
TOOL_RESULT_MAX_CHARS = 1500
QUOTE_MAX_CHARS = 600
SEARCH_RESULTS_MAX = 10
_CITATION = re.compile("\ue200(?:cite|filecite|navlist)\ue202[^\ue201]*\ue201")
_SEARCH_RESULT = re.compile(r"^#\s*【\d+†(?P<title>[^†】]*)(?:†(?P<domain>[^】]*))?】", re.MULTILINE)


class ChatGPTReader:
    """ChatGPT data export: conversations.json (or its zip), one session per conversation."""

    name = "chatgpt"
    into = "logs/sessions/chatgpt/export"  # where the transcripts go, whatever --into says

    def detect(self, tree: SourceTreeLike) -> int:
        return chat_export.detect(tree, "chatgpt")

    def read(self, tree: SourceTreeLike, ctx: ReadContext) -> Iterator[Yielded]:
        return chat_export.read_export(tree, "chatgpt", conversation_item)


def conversation_item(conversation: dict[str, Any], where: str) -> Item:
    session_id = chat_export.conversation_id(conversation, "conversation_id", "id")
    nodes = visible_path(conversation.get("mapping"), conversation.get("current_node"), session_id)
    drafts: list[Draft] = []
    for node in nodes:
        message = node.get("message")
        if isinstance(message, dict):
            _add(drafts, message)
    title = conversation.get("title")
    return chat_export.session_item(
        "chatgpt",
        session_id,
        drafts,
        title=title if isinstance(title, str) else "",
        source=where,
        extra={"model": conversation.get("default_model_slug")},
        fallback_time=normalise_time(conversation.get("create_time")),
    )


def visible_path(mapping: object, current: object, session_id: str) -> list[dict[str, Any]]:
    """The nodes from the root to `current`, in order (see the module docstring)."""
    if not isinstance(mapping, dict) or not mapping:
        raise BrokenConversation("empty_conversation", f"conversation {session_id} has no messages (no mapping)")
    if current is None:
        current = _latest_leaf(mapping)
    if not isinstance(current, str) or not isinstance(mapping.get(current), dict):
        raise BrokenConversation("broken_tree", f"conversation {session_id}: current_node {current!r} is not a node")
    path: list[dict[str, Any]] = []
    seen: set[str] = set()
    node_id: str = current
    while True:
        node = mapping[node_id]
        seen.add(node_id)
        path.append(node)
        parent = node.get("parent")
        if parent is None:
            return path[::-1]
        if not isinstance(parent, str) or not isinstance(mapping.get(parent), dict):
            raise BrokenConversation("broken_tree", f"conversation {session_id}: parent {parent!r} is not a node")
        if parent in seen:
            raise BrokenConversation("broken_tree", f"conversation {session_id}: the parents of {current} loop")
        node_id = parent


def _latest_leaf(mapping: dict[str, Any]) -> str | None:
    """The leaf with the newest message (the last one in the mapping on a tie)."""
    best: tuple[float, int, str] | None = None
    for position, (node_id, node) in enumerate(mapping.items()):
        if not isinstance(node, dict) or node.get("children"):
            continue
        message = node.get("message")
        moment = time_key(normalise_time(message.get("create_time"))) if isinstance(message, dict) else None
        key = (moment.timestamp() if moment else 0.0, position, node_id)
        best = key if best is None or key > best else best
    return best[2] if best else None


def _add(drafts: list[Draft], message: dict[str, Any]) -> None:
    """The draft(s) one message makes, appended to `drafts` (a tool call joins the message before it)."""
    role = _field(message, "author").get("role")
    content = _field(message, "content")
    kind = content.get("content_type")
    metadata = _field(message, "metadata")
    if metadata.get("is_visually_hidden_from_conversation") or kind in SKIPPED_CONTENT:
        return
    if role == "system" and message.get("weight") == 0:
        return
    time = normalise_time(message.get("create_time"))
    recipient = message.get("recipient")
    if role == "assistant" and isinstance(recipient, str) and recipient != "all":
        _tool_call(drafts, time, recipient, _plain_text(content))
    elif role == "tool":
        drafts.append(Draft("tool", time, _tool_text(content), kind="tool_result"))
    elif role in ("user", "assistant", "system"):
        text = _CITATION.sub("", _message_text(content))
        only_images = bool(text) and all(part == IMAGE for part in text.split("\n\n"))
        drafts.append(Draft(role, time, text, kind="image" if only_images else "message"))


def _tool_call(drafts: list[Draft], time: str | None, recipient: str, arguments: str) -> None:
    """A call on the assistant message before it, or on a new one. A canvas the assistant writes
    (`canmore.create_textdoc`) is what the user sees, so its document is shown, not just named."""
    last = drafts[-1] if drafts else None
    if last is None or last.role != "assistant" or last.kind != "message":
        last = Draft("assistant", time, "")
        drafts.append(last)
    document = _maybe_json(arguments) if recipient == "canmore.create_textdoc" else None
    if isinstance(document, dict) and isinstance(document.get("content"), str):
        name = str(document.get("name") or "")
        canvas = f"**Canvas: {name}**\n\n{fence(document['content'])}" if name else fence(document["content"])
        last.text = "\n\n".join(part for part in (last.text, canvas) if part)
        last.tool_calls.append(f"{recipient}: {name}" if name else recipient)
        return
    last.tool_calls.append(f"{recipient}: {arguments}")


def _maybe_json(text: str) -> object:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _field(message: dict[str, Any], key: str) -> dict[str, Any]:
    """An object-valued field of a message; empty when it is missing or of another type."""
    value = message.get(key)
    return value if isinstance(value, dict) else {}


def _message_text(content: dict[str, Any]) -> str:
    if content.get("content_type") == "code":
        code = content.get("text")
        language = content.get("language")
        info = language if isinstance(language, str) and language != "unknown" else ""
        return fence(code, info) if isinstance(code, str) and code.strip() else ""
    return _plain_text(content)


def _plain_text(content: dict[str, Any]) -> str:
    """The words of a content object: its parts (text, images as [image]), else its text or result."""
    parts = content.get("parts")
    if isinstance(parts, list):
        return "\n\n".join(text for text in map(_part_text, parts) if text)
    for key in ("text", "result"):
        value = content.get(key)
        if isinstance(value, str):
            return value
    return ""


def _part_text(part: object) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return ""
    kind = part.get("content_type")
    if kind == "image_asset_pointer":
        return IMAGE
    if kind == "audio_transcription" or isinstance(part.get("text"), str):
        return str(part.get("text") or "")
    return ""  # audio and video pointers: the transcription beside them holds the words


def _tool_text(content: dict[str, Any]) -> str:
    """A tool's output, compact: what it found, not every byte of it."""
    kind = content.get("content_type")
    if kind == "tether_browsing_display":
        result = content.get("result")
        found = _search_results(result) if isinstance(result, str) else ""
        return found or shorten(_plain_text(content), TOOL_RESULT_MAX_CHARS)
    if kind == "tether_quote":
        head = [value for value in (content.get("title"), content.get("url")) if isinstance(value, str) and value]
        excerpt = shorten(str(content.get("text") or ""), QUOTE_MAX_CHARS)
        return "\n\n".join(part for part in ("\n".join(head), excerpt) if part)
    if kind == "system_error":
        return f"[error] {content.get('name') or ''}: {content.get('text') or ''}".strip()
    return shorten(_plain_text(content), TOOL_RESULT_MAX_CHARS)


def _search_results(result: str) -> str:
    """A search page (`# 【0†Title†domain】` then a snippet, per result) as one line per result."""
    lines = []
    for match in _SEARCH_RESULT.finditer(result):
        title, domain = match.group("title").strip(), (match.group("domain") or "").strip()
        lines.append(f"- {title} ({domain})" if domain else f"- {title}")
    if len(lines) > SEARCH_RESULTS_MAX:
        lines = [*lines[:SEARCH_RESULTS_MAX], f"- … ({len(lines) - SEARCH_RESULTS_MAX} more results)"]
    return "\n".join(lines)
