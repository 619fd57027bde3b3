"""The ChatGPT reader: conversations.json → session transcripts in the session plane, following the
visible branch of each conversation's tree; hostile exports give one problem per broken thing."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from support.migration import Migrate, tree_hashes

from dory.migrate.formats.chatgpt import ChatGPTReader
from dory.migrate.model import Item, ReadContext
from dory.migrate.source import open_source
from dory.models import MigrateUndoRequest, SearchRequest
from dory.service import DoryService
from dory.sessions.transcript import Session, parse_session

T0 = 1_735_700_000.0  # 2025-01-01T02:53:20Z


def msg(role: str, content: dict[str, Any], t: float | None, **fields: Any) -> dict[str, Any]:
    return {"author": {"role": role, "name": fields.pop("name", None)}, "content": content, "create_time": t, **fields}


def text(*parts: Any) -> dict[str, Any]:
    return {"content_type": "text", "parts": list(parts)}


def conversation(cid: str, title: str, chain: list[tuple[str, dict[str, Any] | None, str | None]], **extra: Any):
    """A conversation from (node id, message, parent id) triples; children are derived from parents."""
    mapping: dict[str, Any] = {
        nid: {"id": nid, "message": m, "parent": parent, "children": []} for nid, m, parent in chain
    }
    for nid, _, parent in chain:
        if parent in mapping:
            mapping[parent]["children"].append(nid)
    return {"title": title, "create_time": T0, "mapping": mapping, "conversation_id": cid, "id": cid, **extra}


def modern() -> dict[str, Any]:
    """A 2025-style conversation: client-created-root, hidden context, thoughts, images, an edited
    prompt, a browsing tool turn and a regenerated answer."""
    return conversation(
        "conv-2025",
        "Heron questions",
        [
            ("client-created-root", None, None),
            (
                "sys",
                msg("system", text(""), None, weight=0.0, metadata={"is_visually_hidden_from_conversation": True}),
                "client-created-root",
            ),
            (
                "ctx",
                msg(
                    "user",
                    {
                        "content_type": "user_editable_context",
                        "user_profile": "I am a heron expert",
                        "user_instructions": "be brief",
                    },
                    None,
                    metadata={"is_visually_hidden_from_conversation": True},
                ),
                "sys",
            ),
            (
                "u1",
                msg(
                    "user",
                    {
                        "content_type": "multimodal_text",
                        "parts": [
                            {
                                "content_type": "image_asset_pointer",
                                "asset_pointer": "file-service://file-abc",
                                "width": 10,
                            },
                            "What bird is this?",
                        ],
                    },
                    T0 + 1,
                ),
                "ctx",
            ),
            (
                "th",
                msg(
                    "assistant",
                    {
                        "content_type": "thoughts",
                        "thoughts": [{"summary": "Looking", "content": "private scratch words"}],
                    },
                    T0 + 2,
                ),
                "u1",
            ),
            (
                "rr",
                msg("assistant", {"content_type": "reasoning_recap", "content": "Thought for 4 seconds"}, T0 + 3),
                "th",
            ),
            ("a1", msg("assistant", text("That is a grey heron\ue200cite\ue202turn0search0\ue201."), T0 + 4), "rr"),
            ("u2-old", msg("user", text("abandoned prompt words"), T0 + 5), "a1"),
            ("a2-old", msg("assistant", text("abandoned answer words"), T0 + 6), "u2-old"),
            ("u2", msg("user", text("Where does it nest?"), T0 + 7), "a1"),
            (
                "call",
                msg(
                    "assistant",
                    {"content_type": "code", "language": "unknown", "text": 'search("grey heron nest")'},
                    T0 + 8,
                    recipient="browser",
                ),
                "u2",
            ),
            (
                "res",
                msg(
                    "tool",
                    {
                        "content_type": "tether_browsing_display",
                        "result": "# 【0†Grey heron - Wikipedia†en.wikipedia.org】\nA wading bird.\n"
                        "# 【1†Heronries explained†birds.example】\nColonies.",
                    },
                    T0 + 9,
                    name="browser",
                    weight=0.0,
                ),
                "call",
            ),
            ("a3-old", msg("assistant", text("first draft answer words"), T0 + 10), "res"),
            ("a3", msg("assistant", text("Herons nest in colonies called heronries."), T0 + 11), "res"),
        ],
        current_node="a3",
        default_model_slug="gpt-4o",
    )


def write_export(folder: Path, conversations: list[Any], name: str = "conversations.json") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(conversations), encoding="utf-8")
    return path


def sessions(corpus: Path, agent: str = "chatgpt") -> dict[str, Session]:
    found = {}
    for path in sorted((corpus / "logs/sessions" / agent / "export").glob("*.md")):
        session = parse_session(path.relative_to(corpus).as_posix(), path.read_bytes())
        found[session.session_id] = session
    return found


def turns(session: Session) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in session.messages]


def test_the_visible_branch_is_imported_without_hidden_turns_or_scratch(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    res = migrate(write_export(tmp_path / "export", [modern()]))
    assert res.format == "chatgpt" and res.items == {"session": 1} and res.problems == []
    session = sessions(corpus)["conv-2025"]
    assert session.title == "Heron questions" and session.agent == "chatgpt" and session.device == "export"
    assert session.status == "done" and session.extra["model"] == "gpt-4o"
    assert turns(session) == [
        ("user", "[image]\n\nWhat bird is this?"),
        ("assistant", "That is a grey heron."),
        ("user", "Where does it nest?"),
        ("assistant", ""),
        ("tool", "- Grey heron - Wikipedia (en.wikipedia.org)\n- Heronries explained (birds.example)"),
        ("assistant", "Herons nest in colonies called heronries."),
    ]
    assert session.messages[3].tool_calls == ['browser: search("grey heron nest")']
    assert session.messages[4].kind == "tool_result"
    assert [m.time for m in session.messages][:2] == ["2025-01-01T02:53:21Z", "2025-01-01T02:53:24Z"]
    assert session.started == "2025-01-01T02:53:21Z" and session.updated == "2025-01-01T02:53:31Z"
    raw = next((corpus / "logs/sessions/chatgpt/export").glob("*.md")).read_text()
    for hidden in ("heron expert", "be brief", "private scratch", "Thought for", "abandoned", "first draft"):
        assert hidden not in raw

    hits = service.search(SearchRequest(query="heronries", corpus="sessions", mode="recall")).hits
    assert hits and hits[0].turn is not None and hits[0].turn.session_id == "conv-2025"
    assert hits[0].turn.role == "assistant" and hits[0].path.startswith("logs/sessions/chatgpt/export/2025-01-01-")


def test_a_second_run_creates_nothing_and_the_same_export_gives_the_same_bytes(
    tmp_path: Path, corpus: Path, migrate: Migrate
) -> None:
    source = write_export(tmp_path / "export", [modern()])
    first = migrate(source)
    before = tree_hashes(corpus)
    second = migrate(source)
    assert first.created == 1 and second.created == 0 and second.run is None and second.skipped_unchanged == 1
    assert tree_hashes(corpus) == before
    ctx = ReadContext(into="x", now="2030-01-01T00:00:00Z")
    with open_source(source) as tree:
        once = [(i.key, i.digest, i.outputs) for i in ChatGPTReader().read(tree, ctx) if isinstance(i, Item)]
    with open_source(source) as tree:
        again = [(i.key, i.digest, i.outputs) for i in ChatGPTReader().read(tree, ctx) if isinstance(i, Item)]
    assert once == again and once[0][0] == "chatgpt:conv-2025"


def test_a_re_export_with_new_fields_but_the_same_turns_imports_nothing(
    tmp_path: Path, corpus: Path, migrate: Migrate
) -> None:
    migrate(write_export(tmp_path / "export", [modern()]))
    before = tree_hashes(corpus)
    later = modern() | {"update_time": T0 + 999, "is_do_not_remember": False, "moderation_results": [{"x": 1}]}
    later["mapping"]["a3"]["message"]["metadata"] = {"finish_details": {"type": "stop"}}
    again = migrate(write_export(tmp_path / "export-later", [later]))
    assert again.created == 0 and again.skipped_unchanged == 1 and again.changed_since == 0
    assert tree_hashes(corpus) == before


def test_undo_removes_the_transcripts_from_the_session_plane(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    res = migrate(write_export(tmp_path / "export", [modern()]))
    assert service.search(SearchRequest(query="heronries", corpus="sessions", mode="recall")).hits
    assert res.run is not None
    undone = service.migrations.undo(MigrateUndoRequest(run=res.run))
    assert [p for p in undone.removed if p.startswith("logs/")] == [
        "logs/sessions/chatgpt/export/2025-01-01-conv-2025.md"
    ]
    assert not list((corpus / "logs/sessions/chatgpt/export").glob("*.md"))
    assert service.search(SearchRequest(query="heronries", corpus="sessions", mode="recall")).hits == []


def test_code_interpreter_and_canvas_turns(tmp_path: Path, corpus: Path, migrate: Migrate) -> None:
    doc = json.dumps({"name": "heron_facts", "type": "document", "content": "Herons are wading birds."})
    chain = [
        ("r", None, None),
        ("u", msg("user", text("count to three, then write a doc"), T0), "r"),
        (
            "py",
            msg(
                "assistant",
                {"content_type": "code", "language": "python", "text": "print(1, 2, 3)"},
                T0 + 1,
                recipient="python",
            ),
            "u",
        ),
        ("out", msg("tool", {"content_type": "execution_output", "text": "1 2 3"}, T0 + 2, name="python"), "py"),
        ("say", msg("assistant", text("Here is the document."), T0 + 3), "out"),
        (
            "cv",
            msg(
                "assistant",
                {"content_type": "code", "language": "json", "text": doc},
                T0 + 4,
                recipient="canmore.create_textdoc",
            ),
            "say",
        ),
    ]
    migrate(write_export(tmp_path / "export", [conversation("tools", "Tools", chain, current_node="cv")]))
    session = sessions(corpus)["tools"]
    assert turns(session) == [
        ("user", "count to three, then write a doc"),
        ("assistant", ""),
        ("tool", "1 2 3"),
        ("assistant", "Here is the document.\n\n**Canvas: heron_facts**\n\n```\nHerons are wading birds.\n```"),
    ]
    assert [m.tool_calls for m in session.messages] == [
        [],
        ["python: print(1, 2, 3)"],
        [],
        ["canmore.create_textdoc: heron_facts"],
    ]


def test_secrets_in_turns_are_redacted(tmp_path: Path, corpus: Path, migrate: Migrate) -> None:
    secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
    conv = conversation(
        "conv-key",
        "Keys",
        [("root", None, None), ("u", msg("user", text(f"my OPENAI_API_KEY={secret} fails"), T0), "root")],
        current_node="u",
    )
    migrate(write_export(tmp_path / "export", [conv]))
    raw = next((corpus / "logs/sessions/chatgpt/export").glob("*.md")).read_text()
    assert secret not in raw and "OPENAI_API_KEY=[REDACTED]" in raw


def test_broken_trees_are_one_problem_each_and_the_rest_is_imported(
    tmp_path: Path, corpus: Path, migrate: Migrate
) -> None:
    good = conversation(
        "good", "Good", [("r", None, None), ("u", msg("user", text("a fine question"), T0), "r")], current_node="u"
    )
    cycle = conversation(
        "cycle",
        "Cycle",
        [("a", msg("user", text("x"), T0), "b"), ("b", msg("assistant", text("y"), T0), "a")],
        current_node="a",
    )
    orphan = conversation("orphan", "Orphan", [("u", msg("user", text("x"), T0), "gone")], current_node="u")
    nowhere = conversation(
        "nowhere", "Nowhere", [("r", None, None), ("u", msg("user", text("x"), T0), "r")], current_node="missing"
    )
    empty = conversation("empty", "Empty", [("r", None, None)], current_node="r")
    res = migrate(write_export(tmp_path / "export", [good, cycle, orphan, nowhere, empty, 42]))
    assert res.items == {"session": 1} and list(sessions(corpus)) == ["good"]
    assert sorted((p.source, p.code) for p in res.problems) == [
        ("conversations.json#2", "broken_tree"),
        ("conversations.json#3", "broken_tree"),
        ("conversations.json#4", "broken_tree"),
        ("conversations.json#5", "empty_conversation"),
        ("conversations.json#6", "bad_conversation"),
    ]


def test_fields_of_unexpected_types_do_not_stop_the_import(tmp_path: Path, corpus: Path, migrate: Migrate) -> None:
    odd = conversation(
        "odd",
        None,  # type: ignore[arg-type]
        [
            ("r", None, None),
            ("u", {"author": 5, "content": "text", "create_time": "yesterday"}, "r"),
            (
                "v",
                {
                    "author": {"role": "user"},
                    "content": {"content_type": "text", "parts": [None, 3, "kept words"]},
                    "create_time": T0,
                },
                "u",
            ),
        ],
        current_node="v",
    )
    res = migrate(write_export(tmp_path / "export", [odd]))
    assert res.problems == [] and turns(sessions(corpus)["odd"]) == [("user", "kept words")]
    assert sessions(corpus)["odd"].title == "kept words"


def test_malformed_json_is_one_bad_json_problem(tmp_path: Path, corpus: Path, migrate: Migrate) -> None:
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "conversations.json").write_text("{not json at all")
    res = migrate(folder, from_format="chatgpt")
    assert [(p.source, p.code) for p in res.problems] == [("conversations.json", "bad_json")]
    assert res.created == 0 and not (corpus / "logs").exists()


def test_a_truncated_export_keeps_the_conversations_before_the_cut(
    tmp_path: Path, corpus: Path, migrate: Migrate
) -> None:
    convs = [
        conversation(
            f"c{n}",
            f"Talk {n}",
            [("r", None, None), ("u", msg("user", text(f"question {n}"), T0 + n), "r")],
            current_node="u",
        )
        for n in range(3)
    ]
    data = json.dumps(convs).encode()
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "conversations.json").write_bytes(data[: data.index(b'"Talk 2"') + 4])
    res = migrate(folder)
    assert res.format == "chatgpt" and sorted(sessions(corpus)) == ["c0", "c1"]
    assert [(p.code, "cut off" in p.message) for p in res.problems] == [("bad_json", True)]


def test_a_zipped_export_reads_conversations_and_names_what_it_left_out(
    tmp_path: Path, corpus: Path, migrate: Migrate
) -> None:
    archive = tmp_path / "chatgpt-export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("conversations.json", json.dumps([modern()]))
        zf.writestr("chat.html", "<html></html>")
        zf.writestr("user.json", '{"email": "me@example.com"}')
    res = migrate(archive)
    assert res.format == "chatgpt" and res.into == "logs/sessions/chatgpt/export" and res.items == {"session": 1}
    assert [(p.code, "chat.html, user.json" in p.message) for p in res.problems] == [("not_imported", True)]
    assert list(sessions(corpus)) == ["conv-2025"]
    assert not (corpus / "knowledge").exists()


# --- the real samples ------------------------------------------------------------------------------


def test_real_branching_conversation_gives_the_visible_path(
    samples: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    res = migrate(samples / "chatgpt/librechat/chatgpt-tree.json")
    assert res.format == "chatgpt" and res.items == {"session": 1} and res.problems == []
    session = sessions(corpus)["d5dc5307-6807-41a0-8b04-4acee626eeb7"]
    assert session.title == "Assist user with summary"
    roles = [m.role for m in session.messages]
    assert roles == ["user", "assistant"] * 3
    assert [m.text for m in session.messages if m.role == "user"] == ["hi there", "hi again", "tell me a joke"]
    assert "scientists trust atoms" in session.messages[-1].text
    assert session.messages[0].time == "2024-05-01T17:37:11.150Z" and session.updated == "2024-05-01T17:37:40.598Z"
    raw = next((corpus / "logs/sessions/chatgpt/export").glob("*.md")).read_text()
    assert "so cool bro" not in raw and "tell me a story" not in raw
    hits = service.search(SearchRequest(query="joke", corpus="sessions", mode="recall")).hits
    assert hits and hits[0].turn is not None and hits[0].turn.message_id == session.messages[4].id


def test_real_export_with_browsing_turns(samples: Path, corpus: Path, migrate: Migrate, service: DoryService) -> None:
    source = samples / "chatgpt/librechat/chatgpt-export.json"
    res = migrate(source)
    assert res.items == {"session": 2} and res.problems == []
    found = sessions(corpus)
    web = found["d6523d1e-7ec3-474f-a363-0e9dffdb3d93"]
    plain = found["7c5ab593-dbab-43bd-862d-2c3c1eeebf6a"]
    assert (web.title, plain.title) == ("Conversation 1. Web Search", "Conversation 2")
    assert [m.role for m in plain.messages] == ["user", "assistant"] * 2
    assert sum(m.role == "user" for m in web.messages) == 3
    assert sum(m.kind == "tool_result" for m in web.messages) == 5
    calls = [call for m in web.messages for call in m.tool_calls]
    assert (
        calls[0] == 'browser: search("Volkswagen Transporter fuel consumption with 8 people l/km")' and len(calls) == 4
    )
    assert web.started == "2024-01-07T12:18:35.776Z" and plain.started == "2023-10-15T12:31:37.900Z"
    assert all(len(m.text) < 2000 for m in web.messages if m.kind == "tool_result")  # compact tool output
    hits = service.search(SearchRequest(query="intervals intersect", corpus="sessions", mode="recall")).hits
    assert hits and hits[0].turn is not None and hits[0].turn.session_id == plain.session_id

    before = tree_hashes(corpus)
    again = migrate(source)
    assert again.created == 0 and again.skipped_unchanged == 2 and tree_hashes(corpus) == before
