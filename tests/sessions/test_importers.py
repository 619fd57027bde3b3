"""Importers: Claude Code, Codex, generic JSONL and Dory markdown, from realistic fixture files."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from dory.errors import UsageError
from dory.sessions.importers import ImportResult, Problem, detect_format, parse_source
from dory.sessions.transcript import Session, merge, parse_session, render_session, session_path

FIXTURES = Path(__file__).parent / "fixtures"
CLAUDE_ID = "5b6f9a1e-2c3d-4e5f-8a9b-0c1d2e3f4a5b"
CLAUDE = FIXTURES / f"{CLAUDE_ID}.jsonl"  # as in ~/.claude/projects/<project>/<session uuid>.jsonl
CODEX_ID = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
CODEX = FIXTURES / f"rollout-2026-11-21T09-00-00-{CODEX_ID}.jsonl"
GENERIC = FIXTURES / "generic.jsonl"
# Pieces of the fake secrets planted in the fixtures; none may survive an import.
SECRET_PIECES = ["sk-proj-Ab3dE6", "Ab3dE6gH9jK2mN5pQ8", "eyJhbGciOi", "kX9vR2mQ7tL4", "ghp_R8t2", "R8t2Kq9Lm4"]


def load(path: Path, fmt: str = "auto", **kwargs: object) -> ImportResult:
    return parse_source(path.read_bytes(), fmt, f"/home/dev/{path.name}", None, "laptop", **kwargs)  # type: ignore[arg-type]


def only(result: ImportResult) -> Session:
    assert len(result.sessions) == 1, result
    return result.sessions[0]


def shape(session: Session) -> list[tuple[str, str]]:
    return [(message.role, message.kind) for message in session.messages]


# --- format detection -------------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "fmt"), [(CLAUDE, "claude-code"), (CODEX, "codex"), (GENERIC, "jsonl")])
def test_detect_format_from_content(path: Path, fmt: str) -> None:
    assert detect_format(path.read_bytes(), None) == fmt
    assert detect_format(path.read_bytes(), "/tmp/renamed.jsonl") == fmt


@pytest.mark.parametrize(
    ("data", "path", "fmt"),
    [
        (b"---\ntitle: x\n---\n\n## user \xc2\xb7 m-0123456789ab\n\nhi\n", None, "markdown"),
        (b"## user \xc2\xb7 m-0123456789ab\n\nhi\n", "x.md", "markdown"),
        (b'{"type": "user", "content": "hi"}\n', None, "jsonl"),
        (b'{"foo": 1}\n', "/home/u/.codex/sessions/2026/11/21/x.jsonl", "codex"),
        (b'{"foo": 1}\n', "/home/u/.claude/projects/p/x.jsonl", "claude-code"),
        (b'{"foo": 1}\n', "rollout-2026-01-01.jsonl", "codex"),
        (b'{"id": "abc", "timestamp": "2025-05-01T10:00:00Z", "instructions": null}\n', None, "codex"),
        (b'\xef\xbb\xbf{"type":"summary","summary":"t","leafUuid":"u"}\n', None, "claude-code"),
        (b"", None, "markdown"),
    ],
)
def test_detect_format_edge_cases(data: bytes, path: str | None, fmt: str) -> None:
    assert detect_format(data, path) == fmt


def test_unknown_format_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        parse_source(b"{}", "yaml", None, None, "laptop")  # type: ignore[arg-type]


# --- Claude Code ------------------------------------------------------------------------------------


def test_claude_code_fixture() -> None:
    result = load(CLAUDE)
    session = only(result)
    assert session.session_id == CLAUDE_ID and session.agent == "claude-code"
    assert session.title == "Fix the flaky login test" and session.device == "laptop"
    assert session.extra == {"cwd": "/home/dev/acme", "git_branch": "fix/login", "harness_version": "2.0.14"}
    assert (session.started, session.updated) == ("2026-11-20T10:00:03.120Z", "2026-11-20T10:03:30Z")
    assert shape(session) == [
        ("system", "summary"),
        ("user", "message"),
        ("assistant", "message"),
        ("tool", "tool_result"),
        ("assistant", "message"),
        ("tool", "tool_result"),
        ("user", "message"),
        ("system", "message"),
        ("assistant", "message"),
    ]
    texts = [message.text for message in session.messages]
    # Two lines of one response (text, then tool_use) form one message; thinking is not kept.
    assert texts[2] == "Let me run the test first." and "flaky test" not in texts[2]
    assert session.messages[2].tool_calls == ["Bash: pytest tests/test_login.py -x -q"]
    assert session.messages[4].tool_calls == ["Read: /home/dev/acme/app/views.py"]
    assert texts[3].startswith("FAILED tests/test_login.py") and "got 302 twice" in texts[3]
    assert texts[5] == "[error]\nFile does not exist."
    assert texts[6] == "It's app/auth/views.py. Screenshot attached \ufffd:\n\n[image]"
    assert texts[7] == "Conversation compacted"
    assert "Caveat" not in "".join(texts) and "subagent chatter" not in "".join(texts)
    assert result.problems == [
        Problem(14, "not valid JSON: Expecting ',' delimiter at column 98"),
        Problem(15, "user record without a message object"),
        Problem(17, "truncated last line: no newline and incomplete JSON"),
    ]
    assert result.redactions == 2


def test_claude_code_image_only_message_and_compact_summary() -> None:
    lines = [
        {
            "type": "user",
            "sessionId": "s1",
            "timestamp": "2026-11-20T10:00:00Z",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgoAAAA"},
                    }
                ],
            },
        },
        {
            "type": "user",
            "sessionId": "s1",
            "timestamp": "2026-11-20T10:05:00Z",
            "isCompactSummary": True,
            "message": {"role": "user", "content": "This session is being continued from a previous conversation."},
        },
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    session = only(parse_source(data, "claude-code", None, None, "laptop"))
    assert shape(session) == [("user", "image"), ("system", "summary")]
    assert session.messages[0].text == "[image]"
    assert b"iVBORw0KGgo" not in render_session(session)
    assert session.title == "claude-code session s1"


# --- Codex ------------------------------------------------------------------------------------------


def test_codex_fixture() -> None:
    result = load(CODEX)
    session = only(result)
    assert session.session_id == CODEX_ID and session.agent == "codex"
    assert session.extra == {
        "cwd": "/home/dev/acme",
        "originator": "codex_cli_rs",
        "cli_version": "0.46.0",
        "git_branch": "main",
        "model": "gpt-5-codex",
    }
    assert shape(session) == [
        ("user", "message"),
        ("assistant", "message"),
        ("tool", "tool_result"),
        ("assistant", "message"),
        ("tool", "tool_result"),
        ("assistant", "message"),
        ("tool", "tool_result"),
        ("user", "message"),
    ]
    texts = [message.text for message in session.messages]
    assert texts[0].startswith("deploy.sh fails with 401") and "environment_context" not in "".join(texts)
    assert session.messages[1].tool_calls == ["shell: cat deploy.sh"]
    assert texts[2] == "#!/bin/sh\nexport OPENAI_API_KEY=[REDACTED]\ncurl -fsS https://api.acme.dev/deploy"
    assert texts[3] == "The script hard-codes an old key \ufffd and the token expired. Rotating it."
    assert session.messages[3].tool_calls[0].startswith("apply_patch: *** Begin Patch *** Update File: deploy.sh")
    assert texts[6] == "[exit code 1]\nerror: pass: store not initialised"
    assert texts[7] == "ok, I'll init pass myself. Thanks!"  # an event with no response_item mirror is kept
    rendered = render_session(session).decode()
    assert "Inspecting deploy script" not in rendered and "gAAAA" not in rendered  # reasoning skipped
    assert rendered.count("deploy.sh fails with 401") == 2  # the title and the message, not the mirror event
    assert result.problems == [
        Problem(17, "response_item record without a payload object"),
        Problem(18, "not valid JSON: Expecting value at column 1"),
    ]
    assert result.redactions == 3


def test_codex_without_session_meta_takes_the_uuid_from_the_file_name() -> None:
    line = {
        "timestamp": "2026-11-21T09:00:05Z",
        "type": "event_msg",
        "payload": {"type": "user_message", "message": "hi", "images": ["data:image/png;base64,AAAA"]},
    }
    data = (json.dumps(line) + "\n").encode()
    path = f"/home/u/.codex/sessions/2026/11/21/rollout-2026-11-21T09-00-00-{CODEX_ID}.jsonl"
    result = parse_source(data, "auto", path, None, "desk")
    session = only(result)
    assert session.session_id == CODEX_ID and session.messages[0].text == "hi\n\n[image]"
    assert "AAAA" not in render_session(session).decode()


def test_legacy_codex_rollout_without_payload_wrapper() -> None:
    lines = [
        {"id": "legacy-1", "timestamp": "2025-05-01T10:00:00Z", "instructions": None},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]},
        {"type": "function_call", "name": "shell", "arguments": '{"command": ["ls", "-a"]}', "call_id": "c1"},
        {"type": "function_call_output", "call_id": "c1", "output": '{"output": ".\\n..", "metadata": {}}'},
        {"record_type": "state"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Two entries."}]},
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    session = only(parse_source(data, "auto", None, None, "desk"))
    assert session.session_id == "legacy-1" and session.agent == "codex"
    assert [(m.role, m.text, m.tool_calls) for m in session.messages] == [
        ("user", "list files", []),
        ("assistant", "", ["shell: ls -a"]),
        ("tool", ".\n..", []),
        ("assistant", "Two entries.", []),
    ]


# --- generic JSONL ----------------------------------------------------------------------------------


def test_generic_jsonl_fixture() -> None:
    result = load(GENERIC)
    session = only(result)
    assert session.session_id == "chat-42" and session.title == "Rotate the API keys" and session.agent == "unknown"
    assert shape(session) == [
        ("user", "message"),
        ("assistant", "message"),
        ("tool", "tool_result"),
        ("assistant", "message"),
        ("user", "message"),
    ]
    assert session.messages[1].tool_calls == [
        "shell: OPENAI_API_KEY=[REDACTED] ./rotate.sh --force",
        'restart: {"service": "worker"}',
    ]
    assert session.messages[2].text == "rotated\nnew header: Authorization: Bearer [REDACTED]\ndone"
    assert session.messages[3].text == "All set. Lone surrogate: \ufffd (harmless)."  # its duplicate is dropped
    assert result.problems == [
        Problem(4, "not valid JSON: Unterminated string starting at at column 71"),
        Problem(7, "unknown message type 'reaction'"),
        Problem(8, "content must be text or a list of parts, not int"),
    ]
    assert result.redactions == 3


def test_long_tool_calls_are_shortened_only_after_redaction() -> None:
    # The bare key starts 13 characters before the cut: shortened first, its stub would no longer look like a key.
    command = "echo " + "x" * 174 + " sk-proj-Ab3dE6gH9jK2mN5pQ8rS1tU4vW7xY0zA3bC6dE9f --then more"
    line = {
        "type": "assistant",
        "content": "running",
        "tool_calls": [{"name": "shell", "arguments": {"command": command}}],
    }
    session = only(parse_source(_lines(line), "jsonl", None, None, "d"))
    call = session.messages[0].tool_calls[0]
    assert len(call) == 200 and call.endswith("…") and "sk-proj" not in call and "x [REDACTED] -" in call


def test_generic_session_ids_from_field_file_name_or_hash() -> None:
    lines = [
        {"type": "user", "content": "a", "session_id": "one"},
        {"type": "user", "content": "b", "session_id": "two"},
        {"type": "assistant", "content": "c"},
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    result = parse_source(data, "jsonl", None, "bot", "laptop")
    found = [(s.session_id, [m.text for m in s.messages]) for s in result.sessions]
    assert found == [("one", ["a", "c"]), ("two", ["b"])]
    plain = b'{"type": "user", "content": "hello"}\n'
    assert only(parse_source(plain, "jsonl", "/x/My Chat_7.jsonl", None, "d")).session_id == "My Chat_7"
    hashed = only(parse_source(plain, "jsonl", None, None, "d")).session_id
    longer = plain + b'{"type": "assistant", "content": "hi"}\n'
    assert hashed.startswith("s-") and only(parse_source(longer, "jsonl", None, None, "d")).session_id == hashed


def test_raw_control_bytes_and_bad_utf8_are_cleaned_not_fatal() -> None:
    data = b'{"type": "user", "content": "nul\x00 here \xff\xfe and \x1b[1mbold\x1b[0m\rnext"}\n'
    session = only(parse_source(data, "jsonl", None, None, "d"))
    assert session.messages[0].text == "nul here \ufffd\ufffd and bold\nnext"


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\n\n",
        b'[]\n5\n"text"\nnull\n',
        b'{"type": "user", "content": ""}\n',
        b'{"type": "assistant", "content": [{"type": "thinking", "thinking": "hmm"}]}\n',
    ],
)
def test_files_without_messages_give_a_problem_not_a_session(data: bytes) -> None:
    result = parse_source(data, "jsonl", None, None, "d")
    assert result.sessions == []
    assert result.problems and result.problems[-1].line == 0 and "no messages" in result.problems[-1].message


def test_hostile_shapes_do_not_crash() -> None:
    nested: object = "deep"
    for _ in range(500):
        nested = [nested]
    lines = [
        {"type": ["user"], "content": "x"},
        {"type": "user", "content": nested},
        {"type": "user", "content": "ok", "tool_calls": "nope"},
        {"type": "user", "content": "fine", "tool_calls": [None, 5, {"x": 1}]},
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    for fmt in ("jsonl", "claude-code", "codex"):
        parse_source(data, fmt, None, None, "d")  # type: ignore[arg-type]
    result = parse_source(data, "jsonl", None, None, "d")
    assert [p.line for p in result.problems] == [1, 3]
    assert [m.text for m in only(result).messages] == ["fine"]


# --- markdown ---------------------------------------------------------------------------------------


def test_markdown_import_keeps_ids_and_redacts_again() -> None:
    session = only(load(CLAUDE))
    path = session_path(session)
    leaked = "Let me run the test first. GITHUB_TOKEN=ghp_R8t2Kq9Lm4Vx7Nc1Bz6Hd3"
    text = render_session(session).decode().replace("Let me run the test first.", leaked)
    result = parse_source(text.encode(), "auto", path, "other-agent", "other-device")
    imported = only(result)
    assert result.redactions == 1 and "ghp_R8t2" not in render_session(imported).decode()
    assert [m.id for m in imported.messages] == [m.id for m in session.messages]
    assert (imported.agent, imported.device) == ("claude-code", "laptop")
    assert render_session(imported) == render_session(session).replace(
        b"Let me run the test first.", b"Let me run the test first. GITHUB_TOKEN=[REDACTED]"
    )


def test_markdown_problems() -> None:
    broken = parse_source(b"---\ntitle: [\n---\n\nx\n", "markdown", "logs/sessions/a/b/x.md", None, "d")
    assert broken.sessions == [] and broken.problems[0].line == 0 and "YAML" in broken.problems[0].message
    empty = parse_source(b"---\ntitle: x\n---\n\njust notes\n", "markdown", "notes.md", None, "d")
    assert empty.sessions == [] and "no messages" in empty.problems[0].message


# --- every format: cleaning, redaction, idempotence -------------------------------------------------

ALL = [CLAUDE, CODEX, GENERIC]


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name[:12])
def test_no_secret_or_control_character_reaches_the_transcript(path: Path) -> None:
    result = load(path)
    assert result.redactions >= 2
    for session in result.sessions:
        rendered = render_session(session).decode("utf-8")
        for piece in SECRET_PIECES:
            assert piece not in rendered
        assert "[REDACTED]" in rendered
        assert not any(ord(ch) < 32 and ch not in "\n\t" for ch in rendered)
        assert "\ufffd" in rendered  # the lone surrogate, replaced


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name[:12])
def test_importing_twice_gives_identical_bytes(path: Path) -> None:
    first = [render_session(s) for s in load(path).sessions]
    second = [render_session(s) for s in load(path).sessions]
    assert first == second
    for session in load(path).sessions:
        on_disk = parse_session(session_path(session), render_session(session))
        assert render_session(merge(on_disk, session)) == render_session(session)


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name[:12])
def test_every_prefix_of_a_growing_file_merges_into_the_full_import(path: Path) -> None:
    """A harness appends to its log while Dory imports it now and then: whatever prefix was imported
    before (even one cut mid-line), merging the full import gives the same bytes as importing it fresh."""
    data = path.read_bytes()
    full = {s.session_id: s for s in load(path).sessions}
    cuts = sorted({index + 1 for index, byte in enumerate(data) if byte == 0x0A} | set(range(40, len(data), 97)))
    for cut in cuts:
        partial = parse_source(data[:cut], "auto", f"/home/dev/{path.name}", None, "laptop")
        for session in partial.sessions:
            on_disk = parse_session(session_path(session), render_session(session))
            merged = merge(on_disk, full[session.session_id])
            assert render_session(merged) == render_session(full[session.session_id]), (path.name, cut)


def _lines(*records: dict[str, object]) -> bytes:
    return "".join(json.dumps(record) + "\n" for record in records).encode()


def test_three_appended_turns_add_exactly_three_messages() -> None:
    data = GENERIC.read_bytes()
    before = only(parse_source(data, "auto", "/x/generic.jsonl", None, "laptop"))
    grown = data + _lines(
        {"type": "user", "timestamp": "2026-11-22T09:00:00Z", "content": "one more: DB_PASSWORD=swordfish9"},
        {
            "type": "assistant",
            "timestamp": "2026-11-22T09:00:05Z",
            "content": "On it.",
            "tool_calls": [{"name": "shell", "arguments": {"command": "make migrate"}}],
        },
        {"type": "tool_result", "timestamp": "2026-11-22T09:00:09Z", "content": "migrated 3 tables"},
    )
    after = only(parse_source(grown, "auto", "/x/generic.jsonl", None, "laptop"))
    on_disk = parse_session(session_path(before), render_session(before))
    merged = merge(on_disk, after)
    assert len(merged.messages) == len(before.messages) + 3
    assert [m.id for m in merged.messages[: len(before.messages)]] == [m.id for m in before.messages]
    assert [m.text for m in merged.messages[-3:]] == ["one more: DB_PASSWORD=[REDACTED]", "On it.", "migrated 3 tables"]
    assert merged.updated == "2026-11-22T09:00:09Z"
    assert render_session(merged) == render_session(after)
    assert render_session(merge(parse_session(session_path(merged), render_session(merged)), after)) == render_session(
        merged
    )


def test_a_claude_file_that_finished_its_last_line_and_grew() -> None:
    data = CLAUDE.read_bytes()
    complete = data[: data.rindex(b"\n") + 1]
    before = only(parse_source(data, "claude-code", None, None, "laptop"))
    grown = complete + _lines(
        {
            "type": "user",
            "sessionId": before.session_id,
            "timestamp": "2026-11-20T10:04:00.000Z",
            "message": {"role": "user", "content": "thanks, now run the whole suite"},
        },
        {
            "type": "assistant",
            "sessionId": before.session_id,
            "timestamp": "2026-11-20T10:04:02.000Z",
            "message": {
                "id": "msg_01DDD",
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_09", "name": "Bash", "input": {"command": "pytest -q"}}],
            },
        },
        {
            "type": "user",
            "sessionId": before.session_id,
            "timestamp": "2026-11-20T10:04:30.000Z",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_09", "content": "212 passed"}],
            },
        },
    )
    after = parse_source(grown, "claude-code", None, None, "laptop")
    assert [p.line for p in after.problems] == [14, 15]
    merged = merge(parse_session(session_path(before), render_session(before)), only(after))
    assert len(merged.messages) == len(before.messages) + 3
    assert merged.messages[-2].tool_calls == ["Bash: pytest -q"] and merged.messages[-1].text == "212 passed"


# --- status ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "now", "status"),
    [
        (GENERIC, None, "active"),
        (GENERIC, dt.datetime(2026, 11, 22, 8, 20, tzinfo=dt.UTC), "active"),
        (GENERIC, dt.datetime(2026, 11, 22, 9, 0), "done"),  # naive means UTC
        (CLAUDE, dt.datetime(2026, 11, 20, 10, 10, tzinfo=dt.UTC), "active"),
        (CLAUDE, dt.datetime(2026, 11, 21, tzinfo=dt.UTC), "interrupted"),  # its last line was cut off
    ],
)
def test_status_from_age_and_truncation(path: Path, now: dt.datetime | None, status: str) -> None:
    assert only(load(path, now=now)).status == status
