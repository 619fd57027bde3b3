"""`dory sessions …` and `dory search --in sessions|all` end to end through the real console script:
ingest of every harness format (problems, redaction, idempotence, appends, dry runs, stdin), hostile input,
path safety, list/show/history/export, rename/delete/restore, recall pointing at exact turn lines, a
transcript in a foreign layout, and (with the real MiniLM model) recall by meaning.

Independent commands run in parallel (`parallel`): each CLI start costs ~0.6 s."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from support.concurrency import parallel
from support.procs import children, waits_with_open
from support.waiting import wait_until

FIXTURES = Path(__file__).parents[1] / "sessions" / "fixtures"
CLAUDE_ID = "5b6f9a1e-2c3d-4e5f-8a9b-0c1d2e3f4a5b"
CODEX_ID = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
CLAUDE = FIXTURES / f"{CLAUDE_ID}.jsonl"
CODEX = FIXTURES / f"rollout-2026-11-21T09-00-00-{CODEX_ID}.jsonl"
GENERIC = FIXTURES / "generic.jsonl"
# Pieces of the fake secrets planted in the fixtures; none may reach a transcript.
SECRET_PIECES = ["sk-proj-Ab3dE6", "Ab3dE6gH9jK2mN5pQ8", "eyJhbGciOi", "kX9vR2mQ7tL4", "ghp_R8t2", "R8t2Kq9Lm4"]
CORE = {"core/user.md": "# User\n\nThe user prefers short answers.\n"}
GENERIC_PATH = "logs/sessions/unknown/laptop/2026-11-22-chat-42.md"


# -- helpers -------------------------------------------------------------------------------------
def jsonl(*records: dict[str, Any]) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return root


def ok(result) -> Any:
    assert result.code == 0, result
    return result.json()


def nothing_imported(result) -> Any:
    """An ingest that saved no session: the report is printed (--json: with the error) and it exits 4."""
    assert result.code == 4, result
    body = result.json()
    assert body["error"]["code"] == "validation_error" and body["sessions"] == [], body
    return body


def failed(result, exit_code: int, code: str, message: str | None = None) -> dict[str, Any]:
    assert result.code == exit_code, result
    error = result.error()
    assert error["code"] == code, error
    if message is not None:
        assert error["message"] == message, error
    return error


def body(data: bytes) -> bytes:
    """A note's bytes after its frontmatter (the closing `---` line included in the split)."""
    assert data.startswith(b"---\n"), data[:40]
    end = data.index(b"\n---\n", 3)
    return data[end + 5 :]


def frontmatter(data: bytes) -> bytes:
    return data[: len(data) - len(body(data))]


def turn_lines(root: Path, hit: dict[str, Any]) -> list[str]:
    lines = (root / hit["path"]).read_text(encoding="utf-8").split("\n")
    return lines[hit["start_line"] - 1 : hit["end_line"]]


def session_ids(listing: dict[str, Any]) -> list[str]:
    return [s["session_id"] for s in listing["sessions"]]


def hit_sessions(res: dict[str, Any]) -> list[str]:
    return [hit["turn"]["session_id"] for hit in res["hits"]]


def no_secrets(root: Path) -> None:
    for path in (root / "logs").rglob("*.md"):
        text = path.read_text(encoding="utf-8")
        leaked = [piece for piece in SECRET_PIECES if piece in text]
        assert not leaked, (path, leaked)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return write(tmp_path / "corpus", CORE)


@pytest.fixture
def run(dory, root: Path) -> Callable[..., Any]:
    """run(*args, input=None) -> Run: `dory --corpus ROOT <args> --json`."""

    def call(*args: str, **popen: Any):
        return dory("--corpus", str(root), *args, "--json", **popen)

    return call


# -- 1. ingest of each harness format ------------------------------------------------------------
CLAUDE_MORE = jsonl(
    {
        "parentUuid": "u-0013",
        "isSidechain": False,
        "type": "user",
        "sessionId": CLAUDE_ID,
        "uuid": "u-0014",
        "timestamp": "2026-11-20T10:04:00.000Z",
        "message": {"role": "user", "content": "Does the pelican test pass?"},
    },
    {
        "parentUuid": "u-0014",
        "isSidechain": False,
        "type": "assistant",
        "sessionId": CLAUDE_ID,
        "uuid": "u-0015",
        "timestamp": "2026-11-20T10:04:05.000Z",
        "message": {
            "id": "msg_01DDD",
            "role": "assistant",
            "content": [{"type": "text", "text": "Yes, pelican passes."}],
        },
    },
)
CODEX_MORE = jsonl(
    {
        "timestamp": "2026-11-21T09:02:00.000Z",
        "type": "response_item",
        "payload": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "pelican deploy done?"}],
        },
    },
    {
        "timestamp": "2026-11-21T09:02:05.000Z",
        "type": "response_item",
        "payload": {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Yes, the pelican deploy finished."}],
        },
    },
)
GENERIC_MORE = jsonl(
    {"type": "user", "timestamp": "2026-11-22T08:03:00Z", "content": "one more thing about the pelican rota"},
    {"type": "assistant", "timestamp": "2026-11-22T08:03:05Z", "content": "The pelican rota is on the wiki."},
)


def extended(source: Path, more: str) -> bytes:
    """The harness file as it looks after the session went on: a cut last line is completed (here: replaced
    by the next records), then more records follow."""
    data = source.read_bytes()
    if not data.endswith(b"\n"):
        data = data[: data.rindex(b"\n") + 1]
    return data + more.encode()


FORMATS = {
    "claude-code": dict(
        source=CLAUDE,
        more=CLAUDE_MORE,
        fmt="claude-code",
        session_id=CLAUDE_ID,
        title="Fix the flaky login test",
        path=f"logs/sessions/claude-code/laptop/2026-11-20-{CLAUDE_ID}.md",
        messages=9,
        redactions=2,
        problems=[
            {"line": 14, "message": "not valid JSON: Expecting ',' delimiter at column 98"},
            {"line": 15, "message": "user record without a message object"},
            {"line": 17, "message": "truncated last line: no newline and incomplete JSON"},
        ],
        problems_after=[14, 15],
    ),
    "codex": dict(
        source=CODEX,
        more=CODEX_MORE,
        fmt="codex",
        session_id=CODEX_ID,
        title="deploy.sh fails with 401 even though it sends Authorization: Bearer [REDACTED] \u2014 why?",
        path=f"logs/sessions/codex/laptop/2026-11-21-{CODEX_ID}.md",
        messages=8,
        redactions=3,
        problems=[
            {"line": 17, "message": "response_item record without a payload object"},
            {"line": 18, "message": "not valid JSON: Expecting value at column 1"},
        ],
        problems_after=[17, 18],
    ),
    "jsonl": dict(
        source=GENERIC,
        more=GENERIC_MORE,
        fmt="jsonl",
        session_id="chat-42",
        title="Rotate the API keys",
        path=GENERIC_PATH,
        messages=5,
        redactions=3,
        problems=[
            {"line": 4, "message": "not valid JSON: Unterminated string starting at at column 71"},
            {"line": 7, "message": "unknown message type 'reaction'"},
            {"line": 8, "message": "content must be text or a list of parts, not int"},
        ],
        problems_after=[4, 7, 8],
    ),
}


@pytest.fixture(scope="module")
def format_runs(dory, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """For each format, in its own corpus (the three at once): ingest, ingest again, ingest an extended copy,
    with the transcript's bytes after each step."""
    base = tmp_path_factory.mktemp("formats")

    def scenario(name: str) -> dict[str, Any]:
        case = FORMATS[name]
        root = write(base / name / "corpus", CORE)
        longer = base / name / case["source"].name  # same file name: the same session id for every format
        longer.write_bytes(extended(case["source"], case["more"]))
        steps: dict[str, Any] = {"root": root}
        for step, source in (("first", case["source"]), ("again", case["source"]), ("grown", longer)):
            steps[step] = dory("--corpus", str(root), "sessions", "ingest", str(source), "--device", "laptop", "--json")
            target = root / case["path"]
            steps[step + "_bytes"] = target.read_bytes() if target.is_file() else None
        return steps

    with ThreadPoolExecutor(max_workers=3) as pool:
        return dict(zip(FORMATS, pool.map(scenario, FORMATS), strict=True))


@pytest.mark.parametrize("name", list(FORMATS))
def test_ingest_each_format_then_again_then_extended(format_runs, name: str) -> None:
    case, steps = FORMATS[name], format_runs[name]
    root = steps["root"]
    res = ok(steps["first"])
    assert (res["source"], res["format"], res["dry_run"], res["indexed"]) == (
        str(case["source"]),
        case["fmt"],
        False,
        True,
    )
    assert res["problems"] == case["problems"]
    assert res["redactions"] == case["redactions"]
    [made] = res["sessions"]
    assert {k: made[k] for k in ("path", "session_id", "title", "action", "messages", "added")} == {
        "path": case["path"],
        "session_id": case["session_id"],
        "title": case["title"],
        "action": "created",
        "messages": case["messages"],
        "added": case["messages"],
    }
    assert sorted(p.relative_to(root).as_posix() for p in (root / "logs").rglob("*") if p.is_file()) == [case["path"]]
    first = steps["first_bytes"]
    text = first.decode("utf-8")  # valid UTF-8: lone surrogates became U+FFFD
    assert "\x00" not in text and "\x1b" not in text and "\ufffd" in text
    assert f"\nmessages: {case['messages']}\n" in text and text.count("\n## ") == case["messages"]

    again = ok(steps["again"])
    assert [(s["action"], s["added"], s["path"]) for s in again["sessions"]] == [("unchanged", 0, case["path"])]
    assert again["indexed"] is False and again["problems"] == case["problems"]
    assert steps["again_bytes"] == first

    grown = ok(steps["grown"])
    [appended] = grown["sessions"]
    assert (appended["action"], appended["added"], appended["messages"], appended["path"]) == (
        "appended",
        2,
        case["messages"] + 2,
        case["path"],
    )
    assert [p["line"] for p in grown["problems"]] == case["problems_after"] and grown["indexed"] is True
    after = steps["grown_bytes"]
    assert body(after).startswith(body(first))  # every earlier turn byte-identical, new turns after them
    assert b"pelican" in body(after)[len(body(first)) :] and b"pelican" not in body(first)
    assert f"\nmessages: {case['messages'] + 2}\n".encode() in frontmatter(after)
    no_secrets(root)


def test_dry_run_writes_nothing_and_stdin_ingests(run, root: Path, tree_digest) -> None:
    data = CODEX.read_text(encoding="utf-8")
    before = tree_digest(root)
    dry = ok(run("sessions", "ingest", "-", "--device", "laptop", "--dry-run", input=data))
    assert (dry["dry_run"], dry["indexed"], dry["source"], dry["format"]) == (True, False, None, "codex")
    assert [(s["action"], s["path"], s["added"]) for s in dry["sessions"]] == [("created", FORMATS["codex"]["path"], 8)]
    assert tree_digest(root) == before and not (root / "logs").exists()

    res = ok(run("sessions", "ingest", "-", "--device", "laptop", input=data))
    assert [(s["action"], s["path"], s["session_id"]) for s in res["sessions"]] == [
        ("created", FORMATS["codex"]["path"], CODEX_ID)
    ]
    assert res["source"] is None and res["indexed"] is True and res["redactions"] == 3
    written = (root / FORMATS["codex"]["path"]).read_text(encoding="utf-8")
    assert "source_path" not in written and "\nsource_format: codex\n" in written
    no_secrets(root)
    hits = ok(run("sessions", "search", "pass store initialised"))["hits"]
    assert hits and hits[0]["turn"]["session_id"] == CODEX_ID


# -- 2. hostile input ----------------------------------------------------------------------------
BIG_WORDS = 700_000  # a ~3.5 MB single line
HOSTILE: dict[str, dict[str, Any]] = {
    "latin-1 bytes": dict(
        data=b'{"type":"user","session_id":"latin","timestamp":"2025-01-01T00:00:00Z",'
        b'"content":"caf\xe9 cr\xe8me br\xfbl\xe9e"}\n',
        path="logs/sessions/unknown/d/2025-01-01-latin.md",
        text="caf\ufffd cr\ufffdme br\ufffdl\ufffde",
    ),
    "utf-16": dict(
        data='{"type":"user","content":"hello"}\n'.encode("utf-16"),
        format="markdown",
        problems=[{"line": 0, "message": "{src}: contains NUL bytes at offset 7 (binary file?)"}],
    ),
    "NUL bytes": dict(
        data=b'{"type":"user","session_id":"nul","timestamp":"2025-01-01T00:00:00Z","content":"a\\u0000b c\x00d"}\n',
        path="logs/sessions/unknown/d/2025-01-01-nul.md",
        text="ab cd",
    ),
    "lone surrogates": dict(
        data=b'{"type":"user","session_id":"sur\\ud800","title":"t\\udfff",'
        b'"timestamp":"2025-01-01T00:00:00Z","content":"x \\ud800 y"}\n',
        path=re.compile(r"logs/sessions/unknown/d/2025-01-01-sur-[0-9a-f]{8}\.md"),
        text="x \ufffd y",
    ),
    "0-byte file": dict(data=b"", format="markdown", problems=[{"line": 0, "message": "session src: no messages"}]),
    "garbage text": dict(
        data=b"garbage\n\x01\x02\x03\n]]]\n",
        format="markdown",
        problems=[{"line": 0, "message": "session src: no messages"}],
    ),
    "garbage JSON lines": dict(
        data=b'{not json\n[1, 2]\n{"a": \n',
        format="jsonl",
        problems=[
            {"line": 1, "message": "not valid JSON: Expecting property name enclosed in double quotes at column 2"},
            {"line": 2, "message": "expected a JSON object, found list"},
            {"line": 3, "message": "not valid JSON: Expecting value at column 7"},
            {"line": 0, "message": "session src: no messages"},
        ],
    ),
    "path-like ids": dict(
        data=b'{"type":"user","session_id":"../../../etc/passwd","timestamp":"2025-01-01T00:00:00Z",'
        b'"content":"where does this go"}\n',
        args=("--agent", "../../x"),
        path=re.compile(r"logs/sessions/x/d/2025-01-01-etc-passwd-[0-9a-f]{8}\.md"),
        text="where does this go",
    ),
    "a folder": dict(data=None),
    "a missing file": dict(data=None),
    "huge single line": dict(
        data=json.dumps(
            {
                "type": "user",
                "session_id": "huge",
                "timestamp": "2025-01-01T00:00:00Z",
                "content": "filler " * BIG_WORDS + "needlequark",
            }
        ).encode()
        + b"\n",
        path="logs/sessions/unknown/d/2025-01-01-huge.md",
        text="needlequark",
    ),
}


@pytest.fixture(scope="module")
def hostile_runs(dory, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Any, Path, Path]]:
    """Every hostile file ingested at once, each into its own corpus: {case: (run, corpus, source)}."""
    base = tmp_path_factory.mktemp("hostile")
    jobs = []
    for index, (name, case) in enumerate(HOSTILE.items()):
        corpus = write(base / f"c{index}", CORE)
        source = base / f"s{index}" / "src.jsonl"
        source.parent.mkdir()
        if name == "a folder":
            source.mkdir()
        elif case["data"] is not None:
            source.write_bytes(case["data"])
        jobs.append((name, corpus, source, case.get("args", ())))
    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = pool.map(
            lambda job: dory(
                "--corpus", str(job[1]), "sessions", "ingest", str(job[2]), "--device", "d", *job[3], "--json"
            ),
            jobs,
        )
        return {name: (result, corpus, source) for (name, corpus, source, _), result in zip(jobs, runs, strict=True)}


@pytest.mark.parametrize("name", [name for name, case in HOSTILE.items() if case["data"] is not None])
def test_hostile_files_are_ingested_safely_or_reported(hostile_runs, tree_digest, name: str) -> None:
    case = HOSTILE[name]
    result, corpus, source = hostile_runs[name]
    res = nothing_imported(result) if "problems" in case else ok(result)
    if "problems" in case:  # nothing usable: reported, nothing written, and the exit code says so
        problems = [p | {"message": p["message"].replace("{src}", str(source))} for p in case["problems"]]
        assert (res["format"], res["sessions"], res["problems"], res["indexed"]) == (
            case["format"],
            [],
            problems,
            False,
        )
        assert set(tree_digest(corpus)) == {"core/user.md"}
        return
    [made] = res["sessions"]
    assert made["action"] == "created" and res["indexed"] is True, res
    pattern = case["path"]
    assert pattern.fullmatch(made["path"]) if isinstance(pattern, re.Pattern) else made["path"] == pattern, made
    files = [p for p in corpus.rglob("*") if p.is_file() and ".dory" not in p.relative_to(corpus).parts]
    assert sorted(p.relative_to(corpus).as_posix() for p in files) == sorted(["core/user.md", made["path"]])
    data = (corpus / made["path"]).read_bytes()
    text = data.decode("utf-8")  # strict: no lone surrogate or stray byte got through
    assert b"\x00" not in data and case["text"] in text
    assert not list(source.parent.glob("*.md")) and not list(corpus.parent.glob("*.md"))  # nothing beside


def test_huge_single_line_is_searchable(hostile_runs, dory) -> None:
    _, corpus, _ = hostile_runs["huge single line"]
    res = ok(dory("--corpus", str(corpus), "sessions", "search", "needlequark", "--json"))
    [hit] = res["hits"]
    assert hit["turn"]["session_id"] == "huge" and "needlequark" in hit["snippet"]
    assert len(hit["snippet"]) < 2000  # a snippet, not the 3.5 MB turn


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("a folder", "{src} is a folder; give one transcript file (or use `dory sessions import-local`)"),
        ("a missing file", "cannot read {src}: No such file or directory"),
    ],
)
def test_folder_or_missing_path_is_a_usage_error(hostile_runs, tree_digest, name: str, message: str) -> None:
    result, corpus, source = hostile_runs[name]
    failed(result, 2, "usage_error", message.format(src=source))
    assert set(tree_digest(corpus)) == {"core/user.md"} and not (corpus / "logs").exists()


BROKEN_YAML = "title: [unclosed\n"


def test_existing_transcript_with_broken_frontmatter_is_reported_and_left_alone(run, root: Path) -> None:
    ok(run("sessions", "ingest", str(GENERIC), "--device", "laptop"))
    path = root / GENERIC_PATH
    broken = path.read_bytes().replace(b"title: Rotate the API keys\n", BROKEN_YAML.encode(), 1)
    assert broken != path.read_bytes()
    path.write_bytes(broken)
    again, shown = parallel(
        run, ("sessions", "ingest", str(GENERIC), "--device", "laptop"), ("sessions", "show", "chat-42")
    )
    res = nothing_imported(again)
    assert res["sessions"] == [] and res["indexed"] is False
    assert res["problems"][:-1] == FORMATS["jsonl"]["problems"]
    last = res["problems"][-1]
    assert last["line"] == 0 and last["message"].startswith(
        f"session chat-42: {GENERIC_PATH}: broken YAML frontmatter: "
    ), last
    failed(shown, 4, "broken_frontmatter")
    assert path.read_bytes() == broken


def test_unindexed_file_with_broken_frontmatter_at_the_target_path(run, root: Path, tree_digest) -> None:
    write(root, {GENERIC_PATH: "---\n" + BROKEN_YAML + "---\n\n## user · m-0123456789ab\n\nhand written\n"})
    before = tree_digest(root)
    dry = run("sessions", "ingest", str(GENERIC), "--device", "laptop", "--dry-run")
    live = run("sessions", "ingest", str(GENERIC), "--device", "laptop")
    for res in (nothing_imported(dry), nothing_imported(live)):
        assert res["sessions"] == [] and res["indexed"] is False
        assert res["problems"][-1]["line"] == 0
        assert res["problems"][-1]["message"].startswith(f"session chat-42: {GENERIC_PATH}: broken YAML frontmatter")
    assert tree_digest(root) == before


def test_a_file_where_the_transcript_folder_belongs_is_reported_not_a_traceback(run, root: Path, tree_digest) -> None:
    write(root, {"logs/sessions/unknown": "not a folder\n"})  # (a folder at the transcript's path: the same)
    before = tree_digest(root)
    result = run("sessions", "ingest", str(GENERIC), "--device", "laptop")
    assert "Traceback" not in result.stderr, result
    document = result.json()  # a report with a problem, or an error body
    assert result.code == 4, result
    if "sessions" in document:  # the report, with the error that says nothing was imported
        assert document["sessions"] == [] and document["problems"][-1]["line"] == 0
    assert tree_digest(root) == before


def test_a_symlink_at_the_target_path_leading_outside_is_not_followed(run, root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "secret.md"
    outside.parent.mkdir()
    outside.write_text("---\nsession_id: leak\n---\n\n## user · m-0123456789ab\n\noutside secret plankton\n")
    target = root / GENERIC_PATH
    target.parent.mkdir(parents=True)
    target.symlink_to(outside)
    res = nothing_imported(run("sessions", "ingest", str(GENERIC), "--device", "laptop"))
    assert outside.read_text().endswith("outside secret plankton\n")
    leaked = [p for p in root.rglob("*.md") if not p.is_symlink() and "plankton" in p.read_text()]
    assert leaked == [], leaked
    assert all(s["session_id"] == "chat-42" for s in res["sessions"]), res


def test_show_refuses_paths_outside_the_plane_and_bad_ids(run, root: Path, tree_digest) -> None:
    two = jsonl(
        {"type": "user", "session_id": "chat-42", "timestamp": "2025-01-01T00:00:00Z", "content": "one"},
        {"type": "user", "session_id": "chat-43", "timestamp": "2025-01-02T00:00:00Z", "content": "two"},
    )
    made = ok(run("sessions", "ingest", "-", "--device", "d", input=two))
    assert [s["session_id"] for s in made["sessions"]] == ["chat-42", "chat-43"]
    (root / made["sessions"][1]["path"]).unlink()  # indexed, then removed behind Dory's back (no daemon)
    before = tree_digest(root)
    runs = parallel(
        run,
        *[
            ("sessions", "show", ident)
            for ident in (
                "../../etc/passwd.md",
                "logs/../../x.md",
                "/etc/passwd.md",
                "core/user.md",
                "logs/sessions/missing.md",
                "chat-4",
                "nope",
                "chat_4",
                "chat-42",
                "chat-43",
            )
        ],
    )
    failed(runs[0], 4, "path_outside_corpus", "path escapes the corpus: ../../etc/passwd.md")
    failed(runs[1], 4, "path_outside_corpus", "path escapes the corpus: logs/../../x.md")
    failed(runs[2], 4, "path_outside_corpus", "path must be relative to the corpus: /etc/passwd.md")
    failed(runs[3], 4, "validation_error", "core/user.md is not a session transcript (under logs/sessions/)")
    failed(runs[4], 3, "not_found", "no such file in the corpus: logs/sessions/missing.md")
    error = failed(runs[5], 2, "usage_error", "'chat-4' matches several sessions; give more of the id")
    assert error["details"] == {"candidates": ["chat-42", "chat-43"]}
    error = failed(runs[6], 3, "not_found", "no session 'nope'; `dory sessions list` shows them")
    assert error["details"] == {"id": "nope"}
    failed(runs[7], 3, "not_found")  # `_` is not a LIKE wildcard here
    assert ok(runs[8])["session"]["path"] == "logs/sessions/unknown/d/2025-01-01-chat-42.md"
    gone = made["sessions"][1]["path"]
    failed(runs[9], 3, "not_found", f"the transcript {gone} is gone; run `dory reindex`")
    assert tree_digest(root) == before


def test_symlink_loops_under_logs_sessions_do_not_break_reindex(run, root: Path) -> None:
    ok(run("sessions", "ingest", str(GENERIC), "--device", "laptop"))
    plane = root / "logs/sessions"
    (plane / "self").symlink_to(".")
    (plane / "loop-a").symlink_to("loop-b")
    (plane / "loop-b").symlink_to("loop-a")
    (plane / "unknown/laptop/back").symlink_to("../..")
    res = ok(run("reindex"))
    reasons = {s["path"]: s["reason"] for s in res["skipped"]}
    assert {
        reasons.get(p)
        for p in (
            "logs/sessions/self",
            "logs/sessions/loop-a",
            "logs/sessions/loop-b",
            "logs/sessions/unknown/laptop/back",
        )
    } == {"symlink_loop"}, reasons
    listed, found = parallel(run, ("sessions", "list"), ("sessions", "search", "worker"))
    assert [s["path"] for s in ok(listed)["sessions"]] == [GENERIC_PATH]  # no copy through a loop
    assert {h["path"] for h in ok(found)["hits"]} == {GENERIC_PATH}


def test_concurrent_ingests_of_one_session_lose_no_turn(run, root: Path, tmp_path: Path) -> None:
    sources = []
    for n in range(4):
        source = tmp_path / f"part{n}.jsonl"
        source.write_text(
            jsonl(
                {
                    "type": "user",
                    "session_id": "par",
                    "timestamp": f"2025-01-01T00:00:0{n}Z",
                    "content": f"slice {n} of the zebra",
                }
            )
        )
        sources.append(("sessions", "ingest", str(source), "--device", "d"))
    ok(run("reindex"))  # the index databases exist before the race (their own first open is another story)
    results = [ok(r) for r in parallel(run, *sources)]
    assert sorted(r["sessions"][0]["action"] for r in results) == ["appended"] * 3 + ["created"]
    shown, found = parallel(run, ("sessions", "show", "par"), ("sessions", "search", "zebra", "-k", "20"))
    texts = sorted(turn["text"] for turn in ok(shown)["turns"])
    assert texts == [f"slice {n} of the zebra" for n in range(4)]
    assert sorted(h["snippet"] for h in ok(found)["hits"]) == texts  # the index saw the last write


def test_first_open_of_the_session_index_waits_for_a_busy_database(dory, root: Path) -> None:
    state = root / ".dory"
    state.mkdir()
    db = state / "sessions.sqlite"
    holder = sqlite3.connect(db, isolation_level=None)  # a fresh database, rollback journal
    try:
        holder.execute("BEGIN IMMEDIATE")  # as a second process does while it creates the file
        holder.execute("CREATE TABLE creating (x)")
        with ThreadPoolExecutor(max_workers=1) as pool:
            listing = pool.submit(dory, "--corpus", str(root), "sessions", "list", "--json")
            # A broken Dory fails at once; a fixed one waits for the lock, asleep with the database open...
            wait_until(
                lambda: listing.done() or any(waits_with_open(pid, db) for pid in children()),
                what="`dory sessions list` to wait for the busy database",
            )
            holder.execute("ROLLBACK")  # ...and goes on once it is free
            result = listing.result()
    finally:
        holder.close()
    assert "Traceback" not in result.stderr, result
    assert ok(result) == {"sessions": [], "total": 0}


# -- 3. list / show / history / export -----------------------------------------------------------
ALPHA = jsonl(
    {"type": "user", "session_id": "old-1", "timestamp": "2025-01-10T09:00:00Z", "content": "old question"},
    {"type": "assistant", "session_id": "old-1", "timestamp": "2025-01-10T09:00:05Z", "content": "old answer"},
    {"type": "user", "session_id": "new-3", "timestamp": "2025-06-20T09:00:00Z", "content": "first new turn"},
    {
        "type": "assistant",
        "session_id": "new-3",
        "timestamp": "2025-06-20T09:00:05Z",
        "content": "second new turn",
        "tool_calls": ["Bash: ls -la"],
    },
    {"type": "user", "session_id": "new-3", "timestamp": "2025-06-20T09:01:00Z", "content": "## third new turn"},
)
BETA = (
    jsonl(
        {"type": "user", "session_id": "mid-2", "timestamp": "2025-03-05T09:00:00Z", "content": "mid question"},
    )
    + '{"type": "assistant", "session_id": "mid-2", "content": "cut o'
)  # a cut last line: interrupted


def test_list_show_history_and_export(run, root: Path, dory) -> None:
    for agent, data in (("alpha", ALPHA), ("beta", BETA)):  # one by one on a fresh corpus (see test_first_open_…)
        assert ok(run("sessions", "ingest", "-", "--agent", agent, "--device", "d", input=data))["indexed"] is True
    new3 = "logs/sessions/alpha/d/2025-06-20-new-3.md"
    runs = parallel(
        run,
        ("sessions", "list"),
        ("sessions", "list", "--agent", "alpha"),
        ("sessions", "list", "--since", "2025-03-01"),
        ("sessions", "list", "--status", "interrupted"),
        ("sessions", "list", "-n", "1"),
        ("sessions", "show", "new-3"),
        ("sessions", "history", "new-3", "-n", "2"),
        ("sessions", "export", "new-3", "--format", "markdown"),
    )
    listing = ok(runs[0])
    assert session_ids(listing) == ["new-3", "mid-2", "old-1"] and listing["total"] == 3
    assert [(s["agent"], s["status"], s["messages"]) for s in listing["sessions"]] == [
        ("alpha", "done", 3),
        ("beta", "interrupted", 1),
        ("alpha", "done", 2),
    ]
    assert session_ids(ok(runs[1])) == ["new-3", "old-1"]
    assert session_ids(ok(runs[2])) == ["new-3", "mid-2"]
    assert session_ids(ok(runs[3])) == ["mid-2"]
    limited = ok(runs[4])
    assert session_ids(limited) == ["new-3"] and limited["total"] == 3
    shown = ok(runs[5])
    assert shown["session"]["path"] == new3 and shown["total_turns"] == 3 and shown["summary"] is None
    turns = shown["turns"]
    assert [(t["role"], t["text"], t["tool_calls"]) for t in turns] == [
        ("user", "first new turn", []),
        ("assistant", "second new turn", ["Bash: ls -la"]),
        ("user", "## third new turn", []),
    ]
    lines = (root / new3).read_text(encoding="utf-8").split("\n")
    for turn in turns:
        heading = lines[turn["start_line"] - 1]
        assert heading.startswith("## ") and heading.endswith(turn["id"]), heading
        assert turn["text"].removeprefix("## ") in "\n".join(lines[turn["start_line"] - 1 : turn["end_line"]])
    history = ok(runs[6])
    assert history["turns"] == turns[-2:] and history["total_turns"] == 3
    exported = ok(runs[7])
    assert exported["content"].encode("utf-8") == (root / new3).read_bytes() and exported["format"] == "markdown"
    plain = dory("--corpus", str(root), "sessions", "export", "new-3")
    assert plain.code == 0 and plain.stdout.encode("utf-8") == (root / new3).read_bytes()

    ok(run("sessions", "delete", "mid-2"))
    default, everything = parallel(run, ("sessions", "list"), ("sessions", "list", "--all"))
    assert session_ids(ok(default)) == ["new-3", "old-1"] and ok(default)["total"] == 2
    assert [(s["session_id"], s["status"]) for s in ok(everything)["sessions"]] == [
        ("new-3", "done"),
        ("mid-2", "deleted"),
        ("old-1", "done"),
    ]


@pytest.fixture(scope="module")
def roundtrip(dory, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    """The Claude Code fixture ingested, exported as JSONL, given a new session id, ingested again:
    {"original": turns, "copy": turns, "ingest": the second ingest's report}."""
    root = write(tmp_path_factory.mktemp("roundtrip") / "corpus", CORE)

    def run(*args: str, **popen: Any):
        return dory("--corpus", str(root), *args, "--json", **popen)

    ok(run("sessions", "ingest", str(CLAUDE), "--device", "laptop"))
    content = ok(run("sessions", "export", CLAUDE_ID[:8], "--format", "jsonl"))["content"]
    records = [json.loads(line) for line in content.splitlines()]
    assert {r["session_id"] for r in records} == {CLAUDE_ID} and len(records) == 9
    copy = "".join(json.dumps(r | {"session_id": "copy-of-claude"}) + "\n" for r in records)
    report = ok(run("sessions", "ingest", "-", "--format", "jsonl", "--device", "laptop", input=copy))
    original, copied = parallel(run, ("sessions", "show", CLAUDE_ID), ("sessions", "show", "copy-of-claude"))
    return {"original": ok(original)["turns"], "copy": ok(copied)["turns"], "ingest": report}


def test_export_jsonl_round_trips_into_a_new_session(roundtrip) -> None:
    report = roundtrip["ingest"]
    assert report["problems"] == [] and report["redactions"] == 0  # already redacted: nothing left to find
    assert [(s["session_id"], s["action"], s["added"]) for s in report["sessions"]] == [
        ("copy-of-claude", "created", 9)
    ]

    def key(turn: dict[str, Any]) -> tuple[Any, ...]:
        return turn["role"], turn["time"], turn["text"], turn["tool_calls"]

    assert [key(t) for t in roundtrip["copy"]] == [key(t) for t in roundtrip["original"]]
    assert not {t["id"] for t in roundtrip["copy"]} & {t["id"] for t in roundtrip["original"]}


def test_export_jsonl_keeps_turn_kinds(roundtrip) -> None:
    assert [t["kind"] for t in roundtrip["copy"]] == [t["kind"] for t in roundtrip["original"]]


# -- 4. rename / delete / restore ----------------------------------------------------------------
def test_rename_delete_restore(run, root: Path, tmp_path: Path) -> None:
    ok(run("sessions", "ingest", str(GENERIC), "--device", "laptop"))
    path = root / GENERIC_PATH
    original = path.read_bytes()
    title = "Key rotation: [runbook] #1"
    renamed = ok(run("sessions", "rename", "chat-42", f"  {title}\n"))
    status = renamed["status"]  # active until the fixture's last turn is 30 minutes old, then done
    assert (renamed["title"], renamed["path"]) == (title, GENERIC_PATH) and status in ("active", "done")
    after_rename = path.read_bytes()
    assert body(after_rename) == body(original)
    assert frontmatter(after_rename).decode().count("\n") == frontmatter(original).decode().count("\n")
    again = ok(run("sessions", "ingest", str(GENERIC), "--device", "laptop"))
    assert [(s["action"], s["title"]) for s in again["sessions"]] == [("unchanged", title)]
    assert path.read_bytes() == after_rename

    deleted = ok(run("sessions", "delete", "chat"))  # a unique prefix will do
    assert (deleted["status"], deleted["title"]) == ("deleted", title)
    tombstone = path.read_bytes()
    assert body(tombstone) == body(original)
    assert b"\nstatus: deleted\n" in frontmatter(tombstone)
    longer = tmp_path / "generic.jsonl"
    longer.write_bytes(extended(GENERIC, GENERIC_MORE))
    runs = parallel(
        run,
        ("sessions", "list"),
        ("sessions", "list", "--all"),
        ("sessions", "search", "worker"),
        ("sessions", "search", "worker", "--status", "deleted"),
        ("search", "worker", "--in", "all"),
        ("sessions", "ingest", str(GENERIC), "--device", "laptop"),
        ("sessions", "ingest", str(longer), "--device", "laptop"),
    )
    assert ok(runs[0]) == {"sessions": [], "total": 0}
    assert [(s["session_id"], s["status"]) for s in ok(runs[1])["sessions"]] == [("chat-42", "deleted")]
    assert ok(runs[2])["hits"] == [] and ok(runs[4])["hits"] == []
    assert set(hit_sessions(ok(runs[3]))) == {"chat-42"}
    for res in (ok(runs[5]), ok(runs[6])):  # a re-import never resurrects it, nor adds to it
        assert [(s["action"], s["added"], s["status"]) for s in res["sessions"]] == [("kept_deleted", 0, "deleted")]
    assert path.read_bytes() == tombstone

    restored = ok(run("sessions", "restore", "chat-42"))
    assert (restored["status"], restored["title"]) == (status, title)  # the status it had before
    assert body(path.read_bytes()) == body(original)
    listed, found = parallel(run, ("sessions", "list"), ("sessions", "search", "worker"))
    assert [(s["session_id"], s["title"]) for s in ok(listed)["sessions"]] == [("chat-42", title)]
    assert set(hit_sessions(ok(found))) == {"chat-42"}
    grown = ok(run("sessions", "ingest", str(longer), "--device", "laptop"))  # the session goes on
    assert [(s["action"], s["added"], s["title"]) for s in grown["sessions"]] == [("appended", 2, title)]
    assert body(path.read_bytes()).startswith(body(original))


# -- 5. search: durable vs sessions, exact turn lines, scope -------------------------------------
TRIP = jsonl(
    {
        "type": "user",
        "session_id": "trip-1",
        "title": "Trip planning",
        "timestamp": "2025-02-10T09:00:00Z",
        "content": "We should book the quokka island ferry for March.",
    },
    {
        "type": "assistant",
        "session_id": "trip-1",
        "timestamp": "2025-02-10T09:00:05Z",
        "content": "Booked: the ferry leaves at nine.\n\nBring sunscreen.",
    },
)
GARDEN = jsonl(
    {
        "type": "user",
        "session_id": "garden-7",
        "title": "Garden chores",
        "timestamp": "2025-05-03T10:00:00Z",
        "content": "The quokka statue in the garden needs repainting.",
    },
    {
        "type": "assistant",
        "session_id": "garden-7",
        "timestamp": "2025-05-03T10:00:05Z",
        "content": "Use exterior acrylic paint on the statue.",
    },
)
NOTE = {"knowledge/quokka.md": "# Quokkas\n\nQuokkas live on Rottnest Island and smile a lot.\n"}


def check_turn_hits(root: Path, res: dict[str, Any], word: str) -> None:
    assert res["hits"], res
    for hit in res["hits"]:
        assert hit["evidence_class"] == "session" and hit["path"].startswith("logs/sessions/")
        lines = turn_lines(root, hit)
        message_id = hit["turn"]["message_id"]
        assert re.fullmatch(r"m-[0-9a-f]{12}", message_id) and hit["chunk_id"] == f"{hit['path']}#{message_id}"
        assert lines[0].startswith("## ") and lines[0].split(" · ")[2] == message_id, lines
        assert word in "\n".join(lines).lower(), (word, lines)
        assert lines[-1].strip(), lines  # the range ends at the turn's last text line


def test_session_text_stays_out_of_durable_search_and_recall_points_at_the_turn(run, root: Path) -> None:
    write(root, NOTE)
    reindexed = ok(run("reindex"))
    trip, garden = map(
        ok,
        parallel(
            run,
            ("sessions", "ingest", "-", "--agent", "alpha", "--device", "d", {"input": TRIP}),
            ("sessions", "ingest", "-", "--agent", "beta", "--device", "d", {"input": GARDEN}),
        ),
    )
    trip_path, garden_path = trip["sessions"][0]["path"], garden["sessions"][0]["path"]
    runs = parallel(
        run,
        ("search", "ferry"),
        ("search", "ferry", "-m", "exact"),
        ("search", "ferry", "--in", "sessions"),
        ("search", "ferry", "--in", "all"),
        ("search", "ferry", "-m", "recall"),
        ("search", "quokka", "--in", "all", "-k", "10"),
        ("search", "quokka"),
        ("sessions", "search", "quokka", "--agent", "alpha"),
        ("search", "quokka", "--in", "sessions", "--session", "garden-7", "-m", "bm25"),
        ("sessions", "search", "quokka", "--since", "2025-04-01"),
        ("sessions", "search", "quokka", "--until", "2025-03-01"),
        ("sessions", "search", "quokka", "--since", "2025-02-11", "--until", "2025-05-02"),
        ("search", "ferry", "-m", "exact", "--in", "sessions"),
    )
    for durable in runs[0:2]:  # neither ranked nor exact durable search reads transcripts
        assert ok(durable)["hits"] == [], durable
    for res, corpus, mode in (
        (ok(runs[2]), "sessions", "hybrid"),
        (ok(runs[3]), "all", "hybrid"),
        (ok(runs[4]), "sessions", "recall"),
    ):
        assert (res["corpus"], res["mode"]) == (corpus, mode)
        assert {h["path"] for h in res["hits"]} == {trip_path}
        check_turn_hits(root, res, "ferry")
    both = ok(runs[5])
    assert {h["path"] for h in both["hits"]} == {"knowledge/quokka.md", trip_path, garden_path}
    check_turn_hits(root, {"hits": [h for h in both["hits"] if h.get("turn")]}, "quokka")
    durable = ok(runs[6])
    assert [h["path"] for h in durable["hits"]] == ["knowledge/quokka.md"]
    assert all(h.get("turn") is None for h in durable["hits"])
    assert set(hit_sessions(ok(runs[7]))) == {"trip-1"}
    assert set(hit_sessions(ok(runs[8]))) == {"garden-7"}
    assert set(hit_sessions(ok(runs[9]))) == {"garden-7"}
    assert set(hit_sessions(ok(runs[10]))) == {"trip-1"}
    assert ok(runs[11])["hits"] == []  # trip ended before the window, the garden session began after it
    for res in (ok(runs[7]), ok(runs[8])):
        check_turn_hits(root, res, "quokka")
    failed(
        runs[12],
        2,
        "usage_error",
        "input: Value error, exact mode searches durable memory only; use bm25 or recall for sessions",
    )
    assert reindexed["new"] == 2  # the two durable notes; transcripts are not durable files


def test_recall_hits_point_only_at_turns_that_hold_the_word(run, root: Path) -> None:
    statue = jsonl(
        {
            "type": "user",
            "session_id": "statue",
            "timestamp": "2025-05-03T10:00:00Z",
            "content": "The quokka statue in the garden needs repainting.",
        },
        {
            "type": "assistant",
            "timestamp": "2025-05-03T10:00:05Z",
            "content": "Use exterior acrylic paint on the statue.",
        },
    )
    ok(run("sessions", "ingest", "-", "--device", "d", input=statue))
    res = ok(run("sessions", "search", "quokka"))
    check_turn_hits(root, res, "quokka")


# -- 6. a transcript in a foreign layout ---------------------------------------------------------
LOCOMO = """---
title: LoCoMo conversation 26
---

# Conversation 26

## Session 1 (8 May 2023)

**Caroline** (D1:1): Hey Mel! I went to a support group yesterday and it was so powerful.

**Melanie** (D1:2): That's great, Caroline! I've been painting a sunrise over the lake
with my kids, it was calming.

**Caroline** (D1:3): I'm thinking about a career in counseling for young people.
"""


def test_foreign_layout_is_recalled_by_paragraph_after_reindex(run, root: Path) -> None:
    rel = "logs/sessions/locomo/bench/conv-26.md"
    write(root, {rel: LOCOMO})
    res = ok(run("reindex"))
    assert res["sessions_indexed"] == 1 and res["skipped"] == []
    found, everywhere, shown = parallel(
        run,
        ("sessions", "search", "sunrise painting"),
        ("search", "counseling career", "--in", "all"),
        ("sessions", "show", "conv-26"),
    )
    lines = LOCOMO.split("\n")
    hit = ok(found)["hits"][0]
    assert (hit["path"], hit["start_line"], hit["end_line"]) == (rel, 11, 12)
    assert turn_lines(root, hit) == lines[10:12] and lines[10].startswith("**Melanie** (D1:2)")
    assert hit["turn"]["session_id"] == "conv-26" and hit["turn"]["agent"] == "locomo"
    top = ok(everywhere)["hits"][0]
    assert (top["path"], top["start_line"], top["end_line"]) == (rel, 14, 14)
    assert turn_lines(root, top) == [lines[13]]
    session = ok(shown)
    assert session["total_turns"] == 3 and session["session"]["messages"] == 3
    assert [(t["start_line"], t["end_line"]) for t in session["turns"]] == [(9, 9), (11, 12), (14, 14)]
    assert (root / rel).read_text() == LOCOMO  # indexing never rewrites it


def test_delete_of_a_foreign_transcript_without_frontmatter_keeps_its_text(run, root: Path) -> None:
    rel = "logs/sessions/locomo/bench/conv-27.md"
    original = LOCOMO.split("---\n", 2)[2].lstrip("\n")  # the same conversation, no frontmatter at all
    write(root, {rel: original})
    assert ok(run("reindex"))["sessions_indexed"] == 1
    deleted = run("sessions", "delete", "conv-27")
    after = (root / rel).read_text(encoding="utf-8")
    assert after.endswith(original), after  # the text is never touched, whatever happens
    assert ok(deleted)["status"] == "deleted"
    assert after.startswith("---\n") and body(after.encode()).decode() == original
    assert ok(run("sessions", "search", "sunrise painting"))["hits"] == []


def test_import_local_survives_a_folder_named_like_a_transcript(dory, root: Path, tmp_path: Path) -> None:
    claude = tmp_path / "claude" / "-home-dev-acme"
    claude.mkdir(parents=True)
    (claude / "0000-odd.jsonl").mkdir()  # sorts first
    (claude / CLAUDE.name).write_bytes(CLAUDE.read_bytes())
    env = {"DORY_CLAUDE_PROJECTS_ROOT": str(tmp_path / "claude"), "DORY_CODEX_SESSIONS_ROOT": str(tmp_path / "none")}
    result = dory("--corpus", str(root), "sessions", "import-local", "--json", env=env)
    assert "Traceback" not in result.stderr, result
    res = ok(result)
    assert res["counts"]["created"] == 1 and res["roots"]["codex"] is None
    listed = ok(dory("--corpus", str(root), "sessions", "list", "--json", env=env))
    assert session_ids(listed) == [CLAUDE_ID]


# -- the real embedder: turn vectors end to end --------------------------------------------------
GARAGE = jsonl(
    {
        "type": "user",
        "session_id": "garage",
        "timestamp": "2025-03-01T09:00:00Z",
        "content": "I spent the weekend fixing my car's engine: the spark plugs were worn out.",
    },
    {
        "type": "assistant",
        "timestamp": "2025-03-01T09:00:05Z",
        "content": "Let us plan the birthday party menu with cake and balloons.",
    },
    {
        "type": "user",
        "timestamp": "2025-03-01T09:01:00Z",
        "content": "I keep mixing up Spanish verb conjugations in the past tense.",
    },
)
REPEAT = jsonl(
    {
        "type": "user",
        "session_id": "again",
        "timestamp": "2025-04-01T09:00:00Z",
        "content": "I spent the weekend fixing my car's engine: the spark plugs were worn out.",
    },
    {"type": "assistant", "timestamp": "2025-04-01T09:00:05Z", "content": "Did you check the oil as well?"},
)


def embedded_texts(root: Path) -> int:
    conn = sqlite3.connect(root / ".dory" / "sessions.sqlite")
    try:
        return conn.execute("SELECT count(*) FROM embeddings").fetchone()[0]
    finally:
        conn.close()


@pytest.mark.model
def test_recall_finds_a_turn_by_meaning_with_the_real_model(dory, root: Path) -> None:
    def real(*args: str, **popen: Any):
        return dory("--corpus", str(root), *args, "--json", backend=None, **popen)

    made = ok(real("sessions", "ingest", "-", "--device", "d", input=GARAGE))
    assert made["indexed"] is True
    assert embedded_texts(root) == 3  # the ingest embedded its turns at once
    recall, keywords = (
        ok(real("sessions", "search", "automobile repair")),
        ok(real("search", "automobile repair", "--in", "sessions", "-m", "bm25")),
    )
    assert keywords["hits"] == []  # no shared keyword...
    assert recall["warnings"] == []
    top = recall["hits"][0]  # ...yet the turn about the car comes first
    assert "fixing my car's engine" in top["snippet"] and top["turn"]["role"] == "user"
    check_turn_hits(root, {"hits": [top]}, "engine")
    ok(real("sessions", "ingest", "-", "--device", "d", input=REPEAT))
    assert embedded_texts(root) == 4  # the repeated turn reused its cached vector
    assert ok(real("reindex"))["session_vectors_embedded"] == 0
