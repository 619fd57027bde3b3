"""Session logs in the JSON-lines formats the session importers know (Claude Code, Codex, generic),
migrated as sessions: a single file or a folder, other files through the generic reader, and JSON
lines that are not sessions (an MCP memory graph) left to other readers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.migration import Migrate, tree_hashes

from dory.models import SearchRequest
from dory.service import DoryService
from dory.sessions.transcript import Session, parse_session


def lines(*records: dict[str, Any]) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


CLAUDE_CODE = lines(
    {
        "type": "user",
        "sessionId": "cc-1",
        "timestamp": "2025-02-01T10:00:00Z",
        "cwd": "/repo",
        "message": {"role": "user", "content": "Why does the heron build fail?"},
    },
    {
        "type": "assistant",
        "sessionId": "cc-1",
        "timestamp": "2025-02-01T10:00:05Z",
        "message": {
            "id": "msg-1",
            "role": "assistant",
            "content": [
                {"type": "text", "text": "The egret module is missing."},
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls egret"}},
            ],
        },
    },
    {
        "type": "user",
        "sessionId": "cc-1",
        "timestamp": "2025-02-01T10:00:06Z",
        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "no egret"}]},
    },
)
CODEX = lines(
    {"timestamp": "2025-02-02T09:00:00Z", "type": "session_meta", "payload": {"id": "cx-1", "cwd": "/repo"}},
    {
        "timestamp": "2025-02-02T09:00:01Z",
        "type": "response_item",
        "payload": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "rename the bittern"}],
        },
    },
    {
        "timestamp": "2025-02-02T09:00:02Z",
        "type": "response_item",
        "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Renamed."}]},
    },
)
GENERIC = lines(
    {"role": "user", "session_id": "g-1", "timestamp": "2025-02-03T08:00:00Z", "content": "What do storks eat?"},
    {"role": "assistant", "timestamp": "2025-02-03T08:00:01Z", "content": "Frogs, mostly."},
)


def sessions(corpus: Path) -> dict[str, Session]:
    found = {}
    for path in sorted((corpus / "logs/sessions").rglob("*.md")):
        session = parse_session(path.relative_to(corpus).as_posix(), path.read_bytes())
        found[session.session_id] = session
    return found


def test_a_claude_code_log_becomes_a_session_found_by_recall(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    log = tmp_path / "cc-1.jsonl"
    log.write_text(CLAUDE_CODE)
    res = migrate(log)
    assert res.format == "sessions-jsonl" and res.items == {"session": 1} and res.problems == []
    session = sessions(corpus)["cc-1"]
    assert (session.agent, session.device, session.status) == ("claude-code", "imported", "done")
    assert [(m.role, m.text) for m in session.messages] == [
        ("user", "Why does the heron build fail?"),
        ("assistant", "The egret module is missing."),
        ("tool", "no egret"),
    ]
    assert session.messages[1].tool_calls == ["Bash: ls egret"]
    assert (corpus / "logs/sessions/claude-code/imported/2025-02-01-cc-1.md").is_file()
    hits = service.search(SearchRequest(query="egret module", corpus="sessions", mode="recall")).hits
    assert hits and hits[0].turn is not None and hits[0].turn.session_id == "cc-1"

    before = tree_hashes(corpus)
    again = migrate(log)
    assert again.created == 0 and again.skipped_unchanged == 1 and tree_hashes(corpus) == before


def test_a_folder_of_logs_with_a_readme(tmp_path: Path, corpus: Path, migrate: Migrate) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "cc-1.jsonl").write_text(CLAUDE_CODE)
    (folder / "rollout-2025-02-02T09-00-00-cx-1.jsonl").write_text(CODEX)
    (folder / "chat.jsonl").write_text(GENERIC + '{"role": "user", "content": "broken\n')
    (folder / "README.md").write_text("# My logs\n")
    res = migrate(folder)
    assert res.format == "sessions-jsonl" and res.items == {"session": 3, "note": 1}
    assert [(p.source, p.code) for p in res.problems] == [("chat.jsonl:3", "bad_line")]
    found = sessions(corpus)
    assert {sid: s.agent for sid, s in found.items()} == {"cc-1": "claude-code", "cx-1": "codex", "g-1": "unknown"}
    assert [m.text for m in found["cx-1"].messages] == ["rename the bittern", "Renamed."]
    assert (corpus / "knowledge/logs/README.md").read_text() == "# My logs\n"


def test_json_lines_that_are_not_sessions_are_not_taken_for_sessions(tmp_path: Path, migrate: Migrate) -> None:
    memory = tmp_path / "memory.jsonl"
    memory.write_text(
        lines(
            {"type": "entity", "name": "Heron", "entityType": "bird", "observations": ["grey"]},
            {"type": "relation", "from": "Heron", "to": "Pond", "relationType": "lives at"},
        )
    )
    assert migrate(memory, dry_run=True).format != "sessions-jsonl"
    other = tmp_path / "mixed"
    other.mkdir()
    (other / "cc-1.jsonl").write_text(CLAUDE_CODE)
    for n in range(3):
        (other / f"note{n}.md").write_text("a note\n")
    assert migrate(other, dry_run=True).format != "sessions-jsonl"  # mostly notes: not a folder of logs


def test_a_log_without_any_turn_is_an_empty_session_problem(tmp_path: Path, corpus: Path, migrate: Migrate) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "cc-1.jsonl").write_text(CLAUDE_CODE)
    (folder / "cc-2.jsonl").write_text(
        lines({"type": "user", "sessionId": "cc-2", "message": {"role": "user", "content": ""}})
    )
    res = migrate(folder, from_format="sessions-jsonl")
    assert res.items == {"session": 1} and [(p.source, p.code) for p in res.problems] == [
        ("cc-2.jsonl", "empty_session")
    ]
