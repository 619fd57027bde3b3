"""Dory's session transcript: exact round trips, hand edits, line ranges, safe paths and idempotent merges."""

from __future__ import annotations

import random
import re
from dataclasses import replace

import pytest

from dory.corpus.document import parse_document, split_lines
from dory.errors import BrokenFrontmatter, UnreadableFile
from dory.sessions.transcript import (
    Message,
    Session,
    merge,
    message_at_line,
    message_id,
    new_message,
    normalise_time,
    parse_session,
    render_session,
    session_path,
)

SID = "5b6f9a1e-2c3d-4e5f-8a9b-0c1d2e3f4a5b"
PATH = f"logs/sessions/claude-code/laptop/2026-11-20-{SID}.md"


def sample_session() -> Session:
    return Session(
        session_id=SID,
        agent="claude-code",
        device="laptop",
        title="Fix the login redirect",
        started="2026-11-20T10:00:03Z",
        updated="2026-11-20T10:00:10Z",
        source_format="claude-code",
        messages=[
            new_message(SID, "user", "2026-11-20T10:00:03Z", "Why does login redirect twice?"),
            new_message(SID, "assistant", "2026-11-20T10:00:09Z", "Let me look.", ["Bash: ls -la"]),
            new_message(SID, "tool", "2026-11-20T10:00:10Z", "total 8\n```py\nx = 1\n```", kind="tool_result"),
        ],
    )


def test_render_layout_is_exactly_as_documented() -> None:
    session = sample_session()
    ids = [message.id for message in session.messages]
    expected = f"""---
title: Fix the login redirect
type: session
status: active
canonical: false
source_kind: imported
agent: claude-code
device: laptop
session_id: {SID}
started: '2026-11-20T10:00:03Z'
updated: '2026-11-20T10:00:10Z'
messages: 3
source_format: claude-code
---

## user · 2026-11-20T10:00:03Z · {ids[0]}

Why does login redirect twice?

## assistant · 2026-11-20T10:00:09Z · {ids[1]}

Let me look.

Tool calls:
- Bash: ls -la

## tool · 2026-11-20T10:00:10Z · {ids[2]} · tool_result

````
total 8
```py
x = 1
```
````
"""
    assert render_session(session).decode("utf-8") == expected
    assert parse_session(PATH, expected.encode()) == session


def test_rendered_note_is_an_indexable_session_document() -> None:
    doc = parse_document(PATH, render_session(sample_session()))
    assert doc.frontmatter_error is None
    assert doc.frontmatter["type"] == "session" and doc.frontmatter["canonical"] is False
    assert doc.frontmatter["source_kind"] == "imported" and doc.frontmatter["messages"] == 3
    assert doc.title == "Fix the login redirect"


# --- ids --------------------------------------------------------------------------------------------


def test_message_ids_are_stable_content_hashes() -> None:
    first = new_message(SID, "user", "2026-11-20T10:00:03Z", "hello")
    again = new_message(SID, "user", "2026-11-20T10:00:03.000Z", "\nhello\n\n")  # same canonical content
    assert first.id == again.id and re.fullmatch(r"m-[0-9a-f]{12}", first.id)
    assert first.id == message_id(SID, "user", "2026-11-20T10:00:03Z", "hello")
    others = {
        new_message(SID, "assistant", "2026-11-20T10:00:03Z", "hello").id,
        new_message(SID, "user", "2026-11-20T10:00:04Z", "hello").id,
        new_message(SID, "user", "2026-11-20T10:00:03Z", "hello!").id,
        new_message("other", "user", "2026-11-20T10:00:03Z", "hello").id,
        message_id(SID, "user", "2026-11-20T10:00:03Z", "hello", occurrence=2),
    }
    assert first.id not in others and len(others) == 5


@pytest.mark.parametrize(
    "bad",
    [
        {"role": "human"},
        {"kind": "thought"},
        {"id": "m-XYZ"},
        {"id": "1a2b3c4d5e6f"},
    ],
)
def test_message_refuses_values_outside_the_format(bad: dict[str, str]) -> None:
    fields = {"id": "m-0123456789ab", "role": "user", "time": None, "text": "x"} | bad
    with pytest.raises(ValueError):
        Message(**fields)  # type: ignore[arg-type]


def test_message_text_and_calls_are_canonical() -> None:
    message = Message(
        "m-0123456789ab", "user", "2026-11-20 11:00:03+01:00", "  \n\x00hi\r\nthere\n \n", ["Bash:\n ls   -la", "   "]
    )
    assert message.time == "2026-11-20T10:00:03Z"
    assert message.text == "hi\nthere" and message.tool_calls == ["Bash: ls -la"]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("2026-11-20T10:00:03Z", "2026-11-20T10:00:03Z"),
        ("2026-11-20T10:00:03.120Z", "2026-11-20T10:00:03.120Z"),
        ("2026-11-20T10:00:03.120456+00:00", "2026-11-20T10:00:03.120Z"),
        ("2026-11-20T12:00:03+02:00", "2026-11-20T10:00:03Z"),
        ("2026-11-20T10:00:03", "2026-11-20T10:00:03Z"),
        ("2026-11-20", "2026-11-20T00:00:00Z"),
        (1795168803, "2026-11-20T10:00:03Z"),
        (1795168803120, "2026-11-20T10:00:03.120Z"),
        ("yesterday", None),
        ("", None),
        (None, None),
        (True, None),
        ([], None),
    ],
)
def test_normalise_time(given: object, expected: str | None) -> None:
    assert normalise_time(given) == expected


# --- round trips ------------------------------------------------------------------------------------

# Lines chosen to collide with the format's own structure.
_HOSTILE_LINES = [
    "## user · 2026-11-20T10:00:03Z · m-0123456789ab",
    "## Notes",
    "##",
    "##\tTabbed",
    "\\## escaped already",
    "\\\\## twice",
    "Tool calls:",
    "Tool calls:  ",
    "\\Tool calls:",
    "- Bash: fake call",
    "---",
    "...",
    "```",
    "````python",
    "~~~",
    "# H1",
    "### H3",
    " ## indented",
    "",
    "   ",
    "plain words",
    "tab\there",
    "漢字 🙂 é",
    "<!-- TIMELINE: append-only below this line -->",
    "title: not frontmatter",
    "> quote",
    "`code`",
]


def _random_text(rng: random.Random) -> str:
    lines = [rng.choice(_HOSTILE_LINES) if rng.random() < 0.6 else _random_words(rng) for _ in range(rng.randint(0, 7))]
    return "\n".join(lines)


def _random_words(rng: random.Random) -> str:
    alphabet = "abcxyz `#-:\\\t·éß漢🙂\u2028"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))


def _random_time(rng: random.Random) -> str | None:
    if rng.random() < 0.2:
        return None
    millis = f".{rng.randint(1, 999):03d}" if rng.random() < 0.3 else ""
    return (
        f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"
        f":{rng.randint(0, 59):02d}{millis}Z"
    )


def _random_session(rng: random.Random) -> Session:
    session_id = rng.choice([SID, "chat-42", "0123", "id with spaces: yes", "ünïcode/../x"])
    messages = []
    for _ in range(rng.randint(0, 8)):
        role = rng.choice(["user", "assistant", "tool", "system"])
        kind = rng.choice(["message", "message", "tool_result", "image", "summary"])
        calls = [_random_words(rng) + rng.choice(["", " Tool calls:", " - x"]) for _ in range(rng.randint(0, 2))]
        messages.append(new_message(session_id, role, _random_time(rng), _random_text(rng), calls, kind))
    extra = rng.choice([{}, {"cwd": "/home/dev/x"}, {"tags": ["a", "b"], "pinned": True, "created": "2026-11-20"}])
    return Session(
        session_id=session_id,
        agent=rng.choice(["claude-code", "codex"]),
        device=rng.choice(["laptop", "Büro PC"]),
        title=rng.choice(["", "A title: with colon", "yes", "# not a heading", "'quoted'"]),
        status=rng.choice(["active", "done", "interrupted", "deleted"]),
        started=_random_time(rng),
        updated=_random_time(rng),
        messages=messages,
        source_format=rng.choice(["claude-code", "jsonl"]),
        source_path=rng.choice([None, "/home/u/.claude/projects/p/x.jsonl"]),
        extra=extra,
        preamble=rng.choice(["", "", "Hand-written note above the transcript.", _random_text(rng)]),
    )


@pytest.mark.parametrize("seed", range(12))
def test_parse_is_the_exact_inverse_of_render(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(40):
        session = _random_session(rng)
        data = render_session(session)
        parsed = parse_session(session_path(session), data)
        assert parsed == session
        assert render_session(parsed) == data  # deterministic bytes


def test_text_that_looks_like_structure_survives() -> None:
    tricky = (
        "## user · 2026-11-20T10:00:03Z · m-0123456789ab\n\nTool calls:\n- rm -rf /\n\\## kept\n"
        "```\n## inside a fence\n```"
    )
    session = replace(
        sample_session(),
        messages=[new_message(SID, "user", None, tricky), new_message(SID, "tool", None, tricky, kind="tool_result")],
    )
    parsed = parse_session(PATH, render_session(session))
    assert [m.text for m in parsed.messages] == [tricky, tricky]
    assert [m.tool_calls for m in parsed.messages] == [[], []]


# --- hand edits -------------------------------------------------------------------------------------


def test_hand_edits_are_tolerated() -> None:
    session = sample_session()
    text = render_session(session).decode()
    text = text.replace("type: session\n", "type: session\nmood: curious\nreviewed: 2026-11-21T08:00:00Z\n")
    text = text.replace("---\n\n## user", "---\n\nMy own note before the transcript.\n\n## user", 1)
    text = text.replace("Let me look.\n", "Let me look.\n\n## My aside\n\nwritten by hand\n", 1)
    parsed = parse_session(PATH, text.encode())
    assert parsed.extra == {"mood": "curious", "reviewed": "2026-11-21T08:00:00+00:00"}
    assert parsed.preamble == "My own note before the transcript."
    assistant = parsed.messages[1]
    assert assistant.id == session.messages[1].id
    assert assistant.text == "Let me look.\n\n## My aside\n\nwritten by hand"
    assert assistant.tool_calls == ["Bash: ls -la"]
    assert len(parsed.messages) == 3
    # Re-rendering keeps the hand-written parts, escaped so they stay inside their message.
    again = parse_session(PATH, render_session(parsed))
    assert again == parsed


def test_unquoted_times_status_synonyms_and_a_lost_fence_are_read() -> None:
    text = render_session(sample_session()).decode()
    text = text.replace("started: '2026-11-20T10:00:03Z'", "started: 2026-11-20 11:00:03+01:00")
    text = text.replace("status: active", "status: closed")
    text = text.replace("````\ntotal 8", "total 8").replace("```\n````\n", "```\n")
    parsed = parse_session(PATH, text.encode())
    assert parsed.started == "2026-11-20T10:00:03Z" and parsed.status == "done"
    assert parsed.messages[2].text == "total 8\n```py\nx = 1\n```"


def test_a_note_without_frontmatter_takes_its_identity_from_the_path() -> None:
    message = new_message("abc", "user", None, "hi")
    data = f"## user · {message.id}\n\nhi\n".encode()
    parsed = parse_session("logs/sessions/codex/desk/2026-11-20-abc.md", data)
    assert (parsed.agent, parsed.device, parsed.session_id) == ("codex", "desk", "abc")
    assert parsed.messages == [message] and parsed.title == "codex session abc"


def test_unreadable_files_and_broken_frontmatter_are_refused() -> None:
    with pytest.raises(BrokenFrontmatter):
        parse_session(PATH, b"---\ntitle: [unclosed\n---\n\n## user \xc2\xb7 m-0123456789ab\n\nx\n")
    with pytest.raises(UnreadableFile):
        parse_session(PATH, b"---\ntitle: x\n---\n\nnul \x00 byte\n")
    with pytest.raises(UnreadableFile):
        parse_session(PATH, b"---\ntitle: x\n---\n\nnot utf-8 \xc3\x28\n")


def test_a_note_with_no_session_id_to_be_found_is_refused_as_unreadable() -> None:
    """Found by fuzzing the HTTP ingest: a file name of control characters only, and no session_id in
    the frontmatter (or one of control characters only), leaves nothing to tell the session by."""
    with pytest.raises(UnreadableFile) as refused:
        parse_session("\x96.md", b"## user\n\nhi\n")
    assert refused.value.details["reason"] == "no_session_id"
    with pytest.raises(UnreadableFile):
        parse_session("\x96.md", b'---\nsession_id: "\\x85"\n---\n\n## user\n\nhi\n')


# --- line ranges ------------------------------------------------------------------------------------


def test_parsed_messages_know_their_lines() -> None:
    session = sample_session()
    session.messages[0].text = "first line\nsecond line"
    data = render_session(session)
    lines = split_lines(data.decode())
    parsed = parse_session(PATH, data)
    for message in parsed.messages:
        assert message.start_line is not None and message.end_line is not None
        assert lines[message.start_line - 1].startswith("## ") and message.id in lines[message.start_line - 1]
        assert lines[message.end_line - 1].strip() and message.end_line >= message.start_line
        following = lines[message.end_line : message.end_line + 2]
        assert all(not line.strip() for line in following[:1])
    user, assistant, tool = parsed.messages
    assert lines[user.end_line - 1] == "second line"
    assert lines[assistant.end_line - 1] == "- Bash: ls -la"
    assert lines[tool.end_line - 1] == "````" and tool.end_line == len(lines)
    assert message_at_line(parsed, user.start_line + 3) is user
    assert message_at_line(parsed, assistant.end_line) is assistant
    assert message_at_line(parsed, 2) is None  # inside the frontmatter
    assert user.end_line < assistant.start_line < assistant.end_line < tool.start_line


def test_line_ranges_do_not_count_for_equality_and_render_ignores_them() -> None:
    parsed = parse_session(PATH, render_session(sample_session()))
    moved = [replace(m, start_line=1, end_line=1) for m in parsed.messages]
    assert moved == parsed.messages
    assert render_session(replace(parsed, messages=moved)) == render_session(parsed)


# --- paths ------------------------------------------------------------------------------------------

_SAFE_PATH = re.compile(
    r"^logs/sessions/[a-z0-9](?:[a-z0-9-]*[a-z0-9])?/[a-z0-9](?:[a-z0-9-]*[a-z0-9])?/"
    r"(?:\d{4}-\d{2}-\d{2}|undated)-[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.md$"
)


def test_session_path_layout() -> None:
    assert session_path(sample_session()) == PATH
    undated = replace(sample_session(), started=None, agent="Claude Code", device="MacBook-Pro.local")
    assert session_path(undated) == f"logs/sessions/claude-code/macbook-pro-local/undated-{SID}.md"


@pytest.mark.parametrize(
    "hostile",
    [
        "../../etc",
        "../../../etc/passwd",
        "a/b\\c",
        "nul\x00byte",
        "x" * 5000,
        "",
        "...",
        "-",
        "CON",
        "名前",
        "rm -rf /; echo",
        "\u202eevil\u202c",
        "a" * 63 + "/" + "b" * 63,
        " spaced out ",
    ],
)
def test_session_path_is_safe_for_hostile_values(hostile: str) -> None:
    session = Session(session_id=hostile or "x", agent=hostile, device=hostile, started="2026-11-20T10:00:00Z")
    path = session_path(session)
    assert _SAFE_PATH.match(path), path
    assert ".." not in path and "\x00" not in path and len(path) <= 200
    assert path.count("/") == 4


def test_distinct_ids_get_distinct_files() -> None:
    ids = ["a_b", "a-b", "A-B", "a b", "x" * 300, "x" * 301, "名前", "名字"]
    paths = {session_path(Session(session_id=sid, agent="a", device="d")) for sid in ids}
    assert len(paths) == len(ids)


# --- merge ------------------------------------------------------------------------------------------


def _grown(session: Session, extra: int) -> Session:
    messages = list(session.messages)
    for index in range(extra):
        messages.append(new_message(SID, "user", f"2026-11-20T11:0{index}:00Z", f"later turn {index}"))
    return replace(session, messages=messages, updated=messages[-1].time)


def test_merging_the_same_session_changes_nothing() -> None:
    session = sample_session()
    on_disk = parse_session(PATH, render_session(session))
    merged = merge(on_disk, session)
    assert render_session(merged) == render_session(session)
    assert render_session(merge(merged, session)) == render_session(session)


def test_merge_appends_only_new_messages_in_time_order() -> None:
    existing = parse_session(PATH, render_session(sample_session()))
    incoming = _grown(sample_session(), 3)
    incoming.messages[3:] = incoming.messages[3:][::-1]  # the source lists them out of order
    merged = merge(existing, incoming)
    assert [m.id for m in merged.messages[:3]] == [m.id for m in existing.messages]
    assert [m.text for m in merged.messages[3:]] == ["later turn 0", "later turn 1", "later turn 2"]
    assert merged.updated == "2026-11-20T11:02:00Z" and merged.started == "2026-11-20T10:00:03Z"
    assert f"messages: {len(merged.messages)}\n" in render_session(merged).decode()
    assert merge(merged, incoming) == merged


def test_merge_unites_tool_calls_of_a_message_that_grew() -> None:
    existing = sample_session()
    incoming = sample_session()
    incoming.messages[1].tool_calls = ["Bash: ls -la", "Read: app/views.py"]
    merged = merge(existing, incoming)
    assert merged.messages[1].tool_calls == ["Bash: ls -la", "Read: app/views.py"]
    assert len(merged.messages) == 3


def test_merge_keeps_renames_hand_keys_and_tombstones() -> None:
    existing = replace(sample_session(), title="My rename", extra={"mood": "done", "cwd": "/mine"})
    incoming = replace(
        _grown(sample_session(), 1),
        title="Imported title",
        status="done",
        extra={"cwd": "/theirs", "git_branch": "main"},
        source_path="/new/path.jsonl",
    )
    merged = merge(existing, incoming)
    assert merged.title == "My rename" and merged.status == "done"
    assert merged.extra == {"cwd": "/mine", "git_branch": "main", "mood": "done"}
    assert merged.source_path == "/new/path.jsonl"
    untitled = replace(sample_session(), title="")
    assert merge(untitled, incoming).title == "Imported title"
    tombstone = replace(sample_session(), status="deleted", messages=[])
    assert merge(tombstone, incoming) == tombstone


def test_messages_without_time_stay_next_to_their_neighbour() -> None:
    existing = replace(sample_session(), messages=[])
    late = new_message(SID, "user", "2026-11-20T12:00:00Z", "late")
    untimed = new_message(SID, "tool", None, "result of late", kind="tool_result")
    early = new_message(SID, "user", "2026-11-20T09:00:00Z", "early")
    merged = merge(existing, replace(existing, messages=[late, untimed, early]))
    assert [m.text for m in merged.messages] == ["early", "late", "result of late"]
