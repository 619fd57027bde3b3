"""The Claude.ai reader: the account export (old text-only and 2025 content-block messages), the web
API's single conversation with its message tree, edited branches and hostile exports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.migration import Migrate, tree_hashes

from dory.models import SearchRequest
from dory.service import DoryService
from dory.sessions.transcript import Session, parse_session

ROOT = "00000000-0000-4000-8000-000000000000"


def message(uid: str, sender: str, at: str, text: str = "", **fields: Any) -> dict[str, Any]:
    return {"uuid": uid, "text": text, "sender": sender, "created_at": at, "updated_at": at, **fields}


def chat(uid: str, name: str, messages: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    return {"uuid": uid, "name": name, "created_at": "2024-10-01T10:00:00Z", "chat_messages": messages, **fields}


def write(folder: Path, value: Any, name: str = "conversations.json") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(value), encoding="utf-8")
    return folder / name


def sessions(corpus: Path) -> dict[str, Session]:
    found = {}
    for path in sorted((corpus / "logs/sessions/claude-ai/export").glob("*.md")):
        session = parse_session(path.relative_to(corpus).as_posix(), path.read_bytes())
        found[session.session_id] = session
    return found


def turns(session: Session) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in session.messages]


def test_old_account_export_sorted_by_time_with_artifacts_readable(
    tmp_path: Path, corpus: Path, migrate: Migrate
) -> None:
    artifact = (
        "Here it is.\n\n<antThinking>private planning words</antThinking>\n\n"
        '<antArtifact identifier="calc" type="text/html" title="Heron counter">\n'
        "<p>herons: 3</p>\n</antArtifact>\n\nEnjoy."
    )
    old = chat(
        "conv-old",
        "Heron counter",
        [
            message("m3", "human", "2024-10-01T10:05:00Z", "Now count egrets", files=[{"file_name": "shot.png"}]),
            message("m1", "human", "2024-10-01T10:01:00Z", "Count the herons"),
            message("m2", "assistant", "2024-10-01T10:01:00Z", artifact),
            message("m4", "assistant", "2024-10-01T10:05:00Z", "Two egrets."),
        ],
    )
    res = migrate(write(tmp_path / "export", [old, chat("conv-empty", "Nothing", [])]))
    assert res.format == "claude-ai" and res.into == "logs/sessions/claude-ai/export" and res.items == {"session": 1}
    assert [(p.source, p.code) for p in res.problems] == [("conversations.json#2", "empty_conversation")]
    session = sessions(corpus)["conv-old"]
    assert session.title == "Heron counter" and session.agent == "claude-ai" and session.status == "done"
    assert turns(session) == [
        ("user", "Count the herons"),
        ("assistant", "Here it is.\n\n**Artifact: Heron counter**\n\n```html\n<p>herons: 3</p>\n```\n\nEnjoy."),
        ("user", "Now count egrets\n\n[image]"),
        ("assistant", "Two egrets."),
    ]
    assert session.started == "2024-10-01T10:01:00Z" and session.updated == "2024-10-01T10:05:00Z"


def test_2025_content_blocks_skip_thinking_and_keep_tools(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    blocks = [
        {"type": "thinking", "thinking": "secret musing", "start_timestamp": "2025-03-01T09:00:01Z"},
        {"type": "text", "text": "Let me look that up.", "start_timestamp": "2025-03-01T09:00:02Z"},
        {
            "type": "tool_use",
            "name": "web_search",
            "input": {"query": "where do herons nest"},
            "start_timestamp": "2025-03-01T09:00:03Z",
        },
        {
            "type": "tool_result",
            "name": "web_search",
            "content": [
                {"type": "knowledge", "title": "Heronry", "url": "https://example.org/heronry", "text": "long page"}
            ],
            "is_error": False,
            "start_timestamp": "2025-03-01T09:00:04Z",
        },
        {"type": "text", "text": "They nest in treetop heronries.", "start_timestamp": "2025-03-01T09:00:05Z"},
        {
            "type": "tool_use",
            "name": "artifacts",
            "input": {
                "id": "nests",
                "command": "create",
                "title": "Nest notes",
                "type": "text/markdown",
                "content": "# Nests\nTall trees.",
            },
            "start_timestamp": "2025-03-01T09:00:06Z",
        },
        {"type": "tool_result", "name": "artifacts", "content": [{"type": "text", "text": "OK"}], "is_error": True},
        {"type": "tool_use", "name": "create_file", "input": {"path": "/tmp/nests.md", "file_text": "Nest list"}},
        {"type": "token_budget"},
    ]
    new = chat(
        "conv-2025",
        "Nesting",
        [
            message(
                "h1",
                "human",
                "2025-03-01T09:00:00Z",
                "Where do herons nest?",
                content=[{"type": "text", "text": "Where do herons nest?"}],
            ),
            message(
                "a1",
                "assistant",
                "2025-03-01T09:00:01Z",
                "secret musing They nest in treetop heronries.",
                content=blocks,
            ),
        ],
    )
    res = migrate(write(tmp_path / "export", [new]))
    assert res.problems == []
    session = sessions(corpus)["conv-2025"]
    assert turns(session) == [
        ("user", "Where do herons nest?"),
        ("assistant", "Let me look that up."),
        ("tool", "- Heronry (https://example.org/heronry)"),
        (
            "assistant",
            "They nest in treetop heronries.\n\n**Artifact: Nest notes**\n\n```markdown\n# Nests\nTall trees.\n```",
        ),
        ("tool", "[error]\nOK"),
        ("assistant", "**File: /tmp/nests.md**\n\n```\nNest list\n```"),
    ]
    assert session.messages[1].tool_calls == ["web_search: where do herons nest"]
    assert session.messages[5].tool_calls == ["create_file: /tmp/nests.md"]
    assert [m.time for m in session.messages[1:4]] == [
        "2025-03-01T09:00:02Z",
        "2025-03-01T09:00:04Z",
        "2025-03-01T09:00:05Z",
    ]
    raw = next((corpus / "logs/sessions/claude-ai/export").glob("*.md")).read_text()
    assert "secret musing" not in raw
    hits = service.search(SearchRequest(query="treetop heronries", corpus="sessions", mode="recall")).hits
    assert hits and hits[0].turn is not None and hits[0].turn.session_id == "conv-2025"


def edited(**fields: Any) -> dict[str, Any]:
    """A web-API conversation whose first prompt was edited: two branches under the root."""
    return chat(
        "conv-tree",
        "Edited",
        [
            message(
                "h-old",
                "human",
                "2024-11-01T08:00:00Z",
                content=[{"type": "text", "text": "first wording"}],
                parent_message_uuid=ROOT,
            ),
            message(
                "a-old",
                "assistant",
                "2024-11-01T08:00:01Z",
                content=[{"type": "text", "text": "answer to the first wording"}],
                parent_message_uuid="h-old",
            ),
            message(
                "h-new",
                "human",
                "2024-11-01T08:01:00Z",
                content=[{"type": "text", "text": "second wording"}],
                parent_message_uuid=ROOT,
            ),
            message(
                "a-new",
                "assistant",
                "2024-11-01T08:01:01Z",
                content=[{"type": "text", "text": "answer to the second wording"}],
                parent_message_uuid="h-new",
            ),
        ],
        **fields,
    )


def test_web_api_conversation_follows_the_current_leaf(tmp_path: Path, corpus: Path, migrate: Migrate) -> None:
    res = migrate(
        write(
            tmp_path / "saved", edited(current_leaf_message_uuid="a-old", model="claude-3-5-sonnet"), "heron-chat.json"
        )
    )
    assert res.format == "claude-ai" and res.problems == []
    session = sessions(corpus)["conv-tree"]
    assert turns(session) == [("user", "first wording"), ("assistant", "answer to the first wording")]
    assert session.extra["model"] == "claude-3-5-sonnet"


def test_without_a_current_leaf_the_newest_branch_is_followed(tmp_path: Path, corpus: Path, migrate: Migrate) -> None:
    migrate(write(tmp_path / "export", [edited()]))
    assert turns(sessions(corpus)["conv-tree"]) == [
        ("user", "second wording"),
        ("assistant", "answer to the second wording"),
    ]


def test_broken_trees_are_one_problem_each(tmp_path: Path, corpus: Path, migrate: Migrate) -> None:
    nowhere = edited(current_leaf_message_uuid="missing") | {"uuid": "nowhere"}
    orphan = chat("orphan", "Orphan", [message("x", "human", "2024-11-01T08:00:00Z", "hi", parent_message_uuid="gone")])
    loop = chat(
        "loop",
        "Loop",
        [
            message("p", "human", "2024-11-01T08:00:00Z", "a", parent_message_uuid="q"),
            message("q", "assistant", "2024-11-01T08:00:01Z", "b", parent_message_uuid="p"),
        ],
        current_leaf_message_uuid="p",
    )
    res = migrate(write(tmp_path / "export", [nowhere, orphan, loop, edited()]))
    assert list(sessions(corpus)) == ["conv-tree"]
    assert [(p.source, p.code) for p in res.problems] == [
        ("conversations.json#1", "broken_tree"),
        ("conversations.json#2", "broken_tree"),
        ("conversations.json#3", "broken_tree"),
    ]


def test_malformed_and_truncated_exports(tmp_path: Path, corpus: Path, migrate: Migrate) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "conversations.json").write_text('[{"uuid": "a", "chat_messages": [}]')
    res = migrate(bad)
    assert res.format == "claude-ai" and [(p.code, "not valid JSON" in p.message) for p in res.problems] == [
        ("bad_json", True)
    ]

    data = json.dumps(
        [chat("kept", "Kept", [message("h", "human", "2024-01-01T00:00:00Z", "kept words")]), edited()]
    ).encode()
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / "conversations.json").write_bytes(data[: len(data) - 40])
    res = migrate(cut)
    assert list(sessions(corpus)) == ["kept"] and [p.code for p in res.problems] == ["bad_json"]


def test_a_folder_with_both_chat_formats_names_the_other_one(tmp_path: Path, corpus: Path, migrate: Migrate) -> None:
    folder = tmp_path / "chats"
    write(folder, [chat("c1", "Herons", [message("h", "human", "2024-01-01T00:00:00Z", "hi")])], "claude.json")
    (folder / "chatgpt.json").write_text(json.dumps([{"title": "x", "mapping": {"r": {"children": []}}}]))
    res = migrate(folder, from_format="claude-ai")
    assert res.items == {"session": 1}
    assert [(p.source, p.code, p.message) for p in res.problems] == [
        ("chatgpt.json", "other_format", "holds chatgpt conversations: migrate it with --from chatgpt")
    ]


# --- the real samples ------------------------------------------------------------------------------


def test_real_account_export_with_artifacts(
    samples: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    source = samples / "claude/claude-to-sqlite/artifacts.json"
    res = migrate(source)
    assert res.format == "claude-ai" and res.items == {"session": 1} and res.problems == []
    session = sessions(corpus)["91098bc8-f2c4-427b-b71b-1e25efa2e871"]
    assert session.title == "LLM Pricing Calculator"
    assert [m.role for m in session.messages] == ["user", "assistant"] * 10
    assert session.messages[0].text.startswith("Built me an artifact with no react")
    assert session.messages[6].text.startswith("Add a onkeyup event too")  # first in the file, in the middle in time
    assert session.messages[6].text.endswith("[image]")
    assert session.started == "2024-10-17T03:28:55.541Z" and session.updated == "2024-10-17T03:47:12.635Z"
    raw = next((corpus / "logs/sessions/claude-ai/export").glob("*.md")).read_text()
    assert raw.count("**Artifact: ") == 10 and "<antArtifact" not in raw
    hits = service.search(SearchRequest(query="disclaimer", corpus="sessions", mode="recall")).hits
    assert hits and hits[0].turn is not None and hits[0].turn.session_id == session.session_id

    before = tree_hashes(corpus)
    assert migrate(source).created == 0 and tree_hashes(corpus) == before


def test_real_web_api_conversation(samples: Path, corpus: Path, migrate: Migrate, service: DoryService) -> None:
    res = migrate(samples / "claude/claude-chat-viewer/claude-bakery-chat.json")
    assert res.format == "claude-ai" and res.items == {"session": 1} and res.problems == []
    session = sessions(corpus)["8006a434-8b0b-43df-8e6d-c0a7aeb2e6b3"]
    assert session.title == "Interactive Bakery Comparison Visualization"
    assert session.extra["model"] == "claude-3-5-sonnet-20240620"
    assert [m.role for m in session.messages] == ["user", "assistant"] * 2
    assert (
        session.messages[0].text.startswith("Make an interactive visualization")
        and "[image]" in session.messages[0].text
    )
    assert session.messages[2].text == "What are your ideas for extending this?"
    assert session.started == "2024-10-29T15:59:38.340Z"
    raw = next((corpus / "logs/sessions/claude-ai/export").glob("*.md")).read_text()
    assert "antThinking" not in raw and "**Artifact: Enhanced Interactive Bakery Comparison**" in raw
    hits = service.search(SearchRequest(query="ideas extending", corpus="sessions", mode="recall")).hits
    assert hits and hits[0].turn is not None and hits[0].turn.message_id == session.messages[2].id
