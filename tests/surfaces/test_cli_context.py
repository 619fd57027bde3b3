"""`dory context pack|remind|mark` and `dory sessions compact` end to end through the real console script:
packing a stored session into a small budget (placeholders, the hard budget, the summary first once the
session is compacted), `--messages` from a file or stdin and every way to get it wrong, remind returning the
exact stored text (whole messages and chunks), marks written into the transcript's frontmatter that survive
a full reindex and make pack recall an old message without a query, compaction dry runs, idempotence and
`--retain`, and compaction with a model configured through DORY_LLM_* (tests/support/fake_llm.py).

Independent commands run in parallel (`parallel`): each CLI start costs ~0.6 s; the `--messages` checks run
the same click command tree in-process (`invoke`)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from support.concurrency import parallel
from support.fake_llm import FakeLlm, ok, status
from support.waiting import DEADLINE_S

from dory.surfaces.cli import cli

SESSION_ID = "pack-1"
TRANSCRIPT = "logs/sessions/unknown/laptop/2026-11-22-pack-1.md"
SUMMARY = "logs/sessions/unknown/laptop/2026-11-22-pack-1.summary.md"
TOPICS = [
    "kettle",
    "lantern",
    "harbor",
    "violin",
    "glacier",
    "orchard",
    "compass",
    "meadow",
    "quarry",
    "saddle",
    "tundra",
    "walnut",
    "beacon",
    "canyon",
    "falcon",
]
DECISION = "We decided to use the harbor crane for the pelican project from now on."
LOG = "".join(f"line {n}: the build step {n} copied artefact-{n}.tar.gz to the cache folder\n" for n in range(60))
CALL = "bash: make build --jobs 4"


def records() -> list[dict[str, Any]]:
    """30 turns, one topic word per question/answer pair; turn 3 calls a tool, turn 4 is its long output,
    turn 5 states a decision (a durable fact compaction proposes)."""
    out: list[dict[str, Any]] = []
    for n, topic in enumerate(TOPICS):
        out.append(
            {
                "type": "user",
                "timestamp": f"2026-11-22T09:{n:02d}:00Z",
                "content": f"Question {n}: tell me about the {topic} and why the {topic} matters for the "
                "pelican project in detail please.",
            }
        )
        out.append(
            {
                "type": "assistant",
                "timestamp": f"2026-11-22T09:{n:02d}:30Z",
                "content": f"Answer {n}: the {topic} matters because the {topic} supports the pelican "
                "project in several ways, including logistics and planning.",
            }
        )
    out[0].update(session_id=SESSION_ID, title="Long packing session")
    out[3]["tool_calls"] = [{"name": "bash", "arguments": {"command": "make build --jobs 4"}}]
    out[4] = {"type": "tool_result", "timestamp": "2026-11-22T09:02:00Z", "content": LOG}
    out[5]["content"] = DECISION
    return out


JSONL = "".join(json.dumps(record) + "\n" for record in records())


# -- helpers ----------------------------------------------------------------------------------------
@dataclass
class Outcome:
    """An in-process run, shaped like the `dory` fixture's Run."""

    args: tuple[str, ...]
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)

    def error(self) -> dict[str, Any]:
        body = self.json()
        assert set(body) == {"error"}, body
        return body["error"]


def ok_json(result: Any) -> Any:
    assert result.code == 0, result
    return result.json()


def partial_json(result: Any, exit_code: int, code: str) -> Any:
    """A command that did part of the job: its --json result, with the error that made it exit non-zero."""
    assert result.code == exit_code, result
    body = result.json()
    assert body["error"]["code"] == code, body
    return body


def failed(result: Any, exit_code: int, code: str, message: str) -> None:
    assert result.code == exit_code, result
    error = result.error()
    assert (error["code"], error["message"]) == (code, message), error


def split_note(data: bytes) -> tuple[bytes, bytes]:
    """(frontmatter with its fences, body) of a note's bytes."""
    assert data.startswith(b"---\n"), data[:40]
    end = data.index(b"\n---\n", 3) + 5
    return data[:end], data[end:]


def frontmatter_lines(data: bytes) -> list[str]:
    return split_note(data)[0].decode().split("\n")


@pytest.fixture(scope="module")
def template(dory: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """A corpus with the session ingested (once per module; every test works on its own copy) and the
    session's turns as `dory sessions show --json` reports them."""
    base = tmp_path_factory.mktemp("context")
    (base / "pack.jsonl").write_text(JSONL, encoding="utf-8")
    corpus = base / "corpus"
    corpus.mkdir()
    ingested = ok_json(
        dory("--corpus", str(corpus), "sessions", "ingest", str(base / "pack.jsonl"), "--device", "laptop", "--json")
    )
    assert [(s["path"], s["action"], s["messages"]) for s in ingested["sessions"]] == [(TRANSCRIPT, "created", 30)]
    shown = ok_json(dory("--corpus", str(corpus), "sessions", "show", SESSION_ID, "--json"))
    assert len(shown["turns"]) == 30 and shown["summary"] is None
    return corpus, shown["turns"]


@pytest.fixture
def root(template: tuple[Path, list[dict[str, Any]]], tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    shutil.copytree(template[0], corpus)
    return corpus


@pytest.fixture
def run(dory: Any, root: Path) -> Callable[..., Any]:
    """run(*args, env=None, input=None) -> Run: `dory --corpus ROOT <args> --json`."""

    def call(*args: str, **popen: Any) -> Any:
        return dory("--corpus", str(root), *args, "--json", **popen)

    return call


@pytest.fixture
def invoke(root: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[..., Any]:
    """invoke(*args, input=None) -> Outcome: `dory --corpus ROOT <args> --json` through the same click command
    tree in this process, with the environment the `dory` fixture gives (for the cheap `--messages` checks:
    no interpreter start)."""
    for name in [n for n in os.environ if n.startswith("DORY_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("DORY_EMBEDDER_BACKEND", "none")
    monkeypatch.setenv("DORY_CACHE_DIR", str(tmp_path / "cache"))

    def call(*args: str, input: str | None = None) -> Any:
        full = ("--corpus", str(root), *args, "--json")
        result = CliRunner().invoke(cli, list(full), input=input, prog_name="dory")
        return Outcome(full, result.exit_code, result.stdout, result.stderr + repr(result.exception or ""))

    return call


@pytest.fixture
def session(template: tuple[Path, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The stored session's turns (in the corpus every test copies)."""
    return template[1]


def pack(run: Callable[..., Any], budget: int, *more: str) -> Any:
    return run("context", "pack", "--session", SESSION_ID, "--budget", str(budget), "--reserve", "0", *more)


def check_packed(res: dict[str, Any], budget: int, turns: list[dict[str, Any]]) -> None:
    """Invariants of the packed lane: within budget, a placeholder per archived range naming its ids,
    the last six messages protected, every message shown or archived exactly once, in order."""
    assert res["lane"] == "packed" and res["budget"] == res["available"] == budget
    assert res["tokens"] == sum(item["tokens"] for item in res["items"]) <= budget
    placeholders = [item for item in res["items"] if item["kind"] == "placeholder"]
    assert len(placeholders) == len(res["archived"]) >= 1
    order = [t["id"] for t in turns]
    for item, archived in zip(placeholders, res["archived"], strict=True):
        assert item["id"] == archived["first_id"]
        assert f"`dory context remind {archived['first_id']}` brings one back" in item["text"]
        assert f"[archived: {archived['messages']} message" in item["text"]
    assert res["protected"] == order[-6:]
    shown = [item["id"] for item in res["items"] if item["kind"] == "message"]
    archived_ids = [
        i for a in res["archived"] for i in order[order.index(a["first_id"]) : order.index(a["last_id"]) + 1]
    ]
    assert sorted(shown + archived_ids, key=order.index) == order and len(shown + archived_ids) == 30
    assert sum(a["messages"] for a in res["archived"]) == len(archived_ids)


# -- pack and compact ---------------------------------------------------------------------------------
def test_pack_then_compact_then_pack_starts_with_the_summary(run, root: Path, session, tree_digest) -> None:
    turns = session
    before = tree_digest(root)
    first, dry = parallel(
        run,
        ("context", "pack", "--session", SESSION_ID, "--budget", "400", "--reserve", "0"),
        ("sessions", "compact", SESSION_ID, "--retain", "4", "--dry-run"),
    )
    first = ok_json(first)
    check_packed(first, 400, turns)
    assert first["items"][0]["kind"] == "placeholder" and first["recalled"] == []

    dry = ok_json(dry)
    assert tree_digest(root) == before  # a dry run writes nothing: no summary, no proposal
    assert (dry["dry_run"], dry["method"], dry["proposals"], dry["messages_after"]) == (True, "extractive", [], 5)
    subject = "Use the harbor crane for the pelican project from now on"  # the clause decided, whole words
    assert dry["warnings"] == [f"would propose (decision, {subject}): {DECISION}"]

    res = ok_json(run("sessions", "compact", SESSION_ID, "--retain", "4"))
    assert (res["path"], res["summary_path"], res["method"], res["dry_run"]) == (
        TRANSCRIPT,
        SUMMARY,
        "extractive",
        False,
    )
    assert (res["messages_before"], res["messages_after"], res["proposals_existing"], res["llm"]) == (30, 5, 0, None)
    assert res["summary"] == dry["summary"] and res["tokens_before"] > res["tokens_after"] > 0
    [proposal] = res["proposals"]
    proposed = sorted((root / "inbox" / "proposed").glob("*.json"))
    assert [p.name for p in proposed] == [f"{proposal}.json"]
    write = json.loads(proposed[0].read_text())["write"]
    source = f"{TRANSCRIPT}#{turns[5]['id']}"
    assert (write["kind"], write["content"], write["source"]) == ("decision", DECISION, source)
    summary_text = (root / SUMMARY).read_text(encoding="utf-8")
    assert summary_text.startswith('---\ntype: "session_summary"\nsession_id: "pack-1"\n')
    assert f'covers_through: "{turns[25]["id"]}"\n' in summary_text and summary_text.endswith(f"\n{res['summary']}\n")
    assert "Question 13" not in res["summary"] and "falcon" not in res["summary"]  # the retained tail
    proposals_before = {p.name: p.read_bytes() for p in proposed}

    again, packed, listing = parallel(
        run,
        ("sessions", "compact", SESSION_ID, "--retain", "4"),
        ("context", "pack", "--session", SESSION_ID, "--budget", "600", "--reserve", "0"),
        ("sessions", "list"),
    )
    again = ok_json(again)
    assert (again["proposals"], again["proposals_existing"]) == ([], 1)
    assert {p.name: p.read_bytes() for p in (root / "inbox" / "proposed").glob("*.json")} == proposals_before
    packed = ok_json(packed)
    check_packed(packed, 600, turns)
    head = packed["items"][0]
    assert (head["kind"], head["role"], head["text"]) == ("summary", "system", res["summary"])
    assert [item["kind"] for item in packed["items"]].count("summary") == 1
    listing = ok_json(listing)  # the summary file next to the transcript is no session of its own
    assert (listing["total"], [s["path"] for s in listing["sessions"]]) == (1, [TRANSCRIPT])


def test_compact_retain_and_a_missing_session(run, session) -> None:
    all_kept, none_kept, missing = parallel(
        run,
        ("sessions", "compact", SESSION_ID, "--retain", "30", "--dry-run"),
        ("sessions", "compact", SESSION_ID, "--retain", "0", "--dry-run"),
        ("sessions", "compact", "no-such-session"),
    )
    assert ok_json(all_kept)["messages_after"] == 31
    assert ok_json(none_kept)["messages_after"] == 1
    failed(missing, 3, "not_found", "no session 'no-such-session'; `dory sessions list` shows them")


def test_compact_with_a_model_from_the_environment(dory, root: Path, session) -> None:
    with FakeLlm() as llm:
        env = {
            "DORY_LLM_BACKEND": "openai",
            "DORY_LLM_URL": llm.url,
            "DORY_LLM_MODEL": "fake-model",
            "DORY_LLM_TIMEOUT_S": f"{DEADLINE_S:g}",  # only bounds a hang
            "DORY_LLM_RETRIES": "0",
        }
        llm.script(
            ok(
                {
                    "files_modified": [],
                    "key_decisions": ["Use the  harbor crane."],
                    "important_values": ["artefact-7.tar.gz", "artefact-7.tar.gz"],
                    "current_state": "Planning   is done.",
                    "pending_tasks": [],
                }
            ),
            status(500, "overloaded"),
        )
        first = ok_json(dory("--corpus", str(root), "sessions", "compact", SESSION_ID, "--json", env=env))
        assert first["method"] == "llm" and first["warnings"] == []
        assert first["llm"] == {"attempted": 1, "produced": 1, "empty": 0, "failed": 0, "retried": 0}
        assert first["summary"] == (
            "<continuation_summary>\n## Files Modified\n- (none)\n## Key Decisions\n- Use the harbor crane.\n"
            "## Important Values\n- artefact-7.tar.gz\n## Current State\n- Planning is done.\n"
            "## Pending Tasks\n- (none)\n</continuation_summary>"
        )
        transcript = llm.chat_requests[0].messages[1]["content"]
        assert transcript.startswith("Transcript:\n[") and f"] tool: {LOG}" in transcript
        on_disk = (root / SUMMARY).read_bytes()

        second = dory("--corpus", str(root), "sessions", "compact", SESSION_ID, env=env)  # human output
        assert second.code == 0, second
        assert second.stdout.startswith(f"wrote {SUMMARY} (kept_previous, ")
        assert (
            f"! LLM endpoint {llm.url}/v1/chat/completions (model 'fake-model', task 'compaction') answered "
            "HTTP 500 (tried 1 times): overloaded; the previous summary was kept"
        ) in second.stdout
        assert (root / SUMMARY).read_bytes() == on_disk
        assert len(llm.chat_requests) == 2


# -- --messages ---------------------------------------------------------------------------------------
def test_pack_messages_from_a_file_or_stdin(invoke, root: Path) -> None:
    conversation = [
        {"role": "user", "content": "hello there", "id": "u-1"},
        {"role": "assistant", "content": "Hi! What can I do for you today?"},
        {"role": "tool", "content": "ok", "kind": "tool_result", "time": "2026-11-22T10:00:00Z"},
    ]
    (root.parent / "messages.json").write_text(json.dumps(conversation), encoding="utf-8")
    from_file = invoke(
        "context", "pack", "--messages", str(root.parent / "messages.json"), "--budget", "300", "--reserve", "0"
    )
    from_stdin = invoke(
        "context", "pack", "--messages", "-", "--budget", "300", "--reserve", "0", input=json.dumps(conversation)
    )
    res = ok_json(from_file)
    assert ok_json(from_stdin) == res
    assert (res["lane"], res["archived"], res["warnings"]) == ("pass_through", [], [])
    assert [(i["kind"], i["role"], i["text"], i["time"]) for i in res["items"]] == [
        ("message", m["role"], m["content"], m.get("time")) for m in conversation
    ]
    assert res["items"][0]["id"] == "u-1" and res["items"][1]["id"].startswith("m-")
    assert res["tokens"] == sum(i["tokens"] for i in res["items"]) <= 150


def test_pack_input_errors_are_usage_errors(invoke, root: Path) -> None:
    folder = root.parent
    (folder / "bad.json").write_text("{not json", encoding="utf-8")
    (folder / "object.json").write_text('{"role": "user", "content": "x"}', encoding="utf-8")
    (folder / "role.json").write_text('[{"role": "narrator", "content": "x"}]', encoding="utf-8")
    (folder / "good.json").write_text('[{"role": "user", "content": "x"}]', encoding="utf-8")
    bad, obj, role, both, neither, tiny, reserved, own_reserve = (
        invoke(*call)
        for call in (
            ("context", "pack", "--messages", str(folder / "bad.json"), "--budget", "300"),
            ("context", "pack", "--messages", str(folder / "object.json"), "--budget", "300"),
            ("context", "pack", "--messages", str(folder / "role.json"), "--budget", "300"),
            ("context", "pack", "--messages", str(folder / "good.json"), "--session", SESSION_ID, "--budget", "300"),
            ("context", "pack", "--budget", "300"),
            ("context", "pack", "--messages", str(folder / "good.json"), "--budget", "100"),
            ("context", "pack", "--messages", str(folder / "good.json"), "--budget", "600"),
            ("context", "pack", "--messages", str(folder / "good.json"), "--budget", "600", "--reserve", "500"),
        )
    )
    failed(
        bad,
        2,
        "usage_error",
        "--messages is not a JSON array of messages: Expecting property name enclosed in "
        "double quotes: line 1 column 2 (char 1)",
    )
    failed(obj, 2, "usage_error", "--messages must hold a JSON array of messages")
    failed(role, 2, "usage_error", "role: Input should be 'user', 'assistant', 'tool' or 'system'")
    failed(both, 2, "usage_error", "input: Value error, give exactly one of session and messages")
    failed(neither, 2, "usage_error", "input: Value error, give exactly one of session and messages")
    failed(tiny, 2, "usage_error", "budget: Input should be greater than or equal to 256")
    # A budget the reserve (512 by default) leaves almost nothing of is refused and explained.
    failed(
        reserved,
        2,
        "usage_error",
        "a budget of 600 tokens leaves 88 for the context: 512 are reserved for the answer ([context] reserve); "
        "give a budget of at least 640 or a smaller --reserve",
    )
    failed(
        own_reserve,
        2,
        "usage_error",
        "a budget of 600 tokens leaves 100 for the context: 500 are reserved for the answer (--reserve); "
        "give a budget of at least 628 or a smaller --reserve",
    )


def test_messages_nested_100000_deep_are_a_usage_error_not_a_traceback(invoke, root: Path, tree_digest) -> None:
    """Issue 15, item 6: the JSON parser's RecursionError escaped as a traceback."""
    before = tree_digest(root)
    for depth in (40, 100_000):
        (root.parent / "deep.json").write_text("[" * depth + "]" * depth, encoding="utf-8")
        res = invoke("context", "pack", "--messages", str(root.parent / "deep.json"), "--budget", "300")
        failed(res, 2, "usage_error", "--messages is not a JSON array of messages: nested deeper than 32 levels")
    assert tree_digest(root) == before


def test_a_missing_messages_file_is_a_usage_error(invoke, root: Path) -> None:
    res = invoke("context", "pack", "--messages", str(root.parent / "missing.json"), "--budget", "300")
    assert res.code == 2, res
    assert res.error()["code"] == "usage_error"


# -- remind ---------------------------------------------------------------------------------------------
def test_remind_returns_the_stored_text_of_messages_and_chunks(run, session) -> None:
    turns = session
    plain, called, log = turns[7], turns[3], turns[4]
    assert (called["tool_calls"], log["role"], log["text"]) == ([CALL], "tool", LOG.rstrip("\n"))
    reminded, chunked, whole = parallel(
        run,
        ("context", "remind", plain["id"], called["id"], "m-000000000000", log["id"]),
        ("context", "remind", *(f"{log['id']}#{n}" for n in range(1, 13)), "--session", SESSION_ID),
        ("context", "pack", "--session", SESSION_ID, "--budget", "100000"),
    )
    # An unknown id: what was found is printed, and the exit code says something was not.
    res = partial_json(reminded, 3, "not_found")
    assert [(i["id"], i["session_id"], i["path"], i["role"], i["time"]) for i in res["items"]] == [
        (t["id"], SESSION_ID, TRANSCRIPT, t["role"], t["time"]) for t in (plain, called, log)
    ]
    assert res["missing"] == ["m-000000000000"]
    assert res["items"][0]["text"] == plain["text"]  # exactly what `sessions show` reports
    assert res["items"][1]["text"] == f"{called['text']}\n\nTool calls:\n- {CALL}"
    assert res["items"][2]["text"] == log["text"]
    packed = {item["id"]: item["text"] for item in ok_json(whole)["items"]}
    assert ok_json(whole)["lane"] == "pass_through"
    assert all(item["text"] == packed[item["id"]] for item in res["items"])  # what pack showed is what comes back

    chunks = partial_json(chunked, 3, "not_found")
    found = len(chunks["items"])
    assert 3 <= found < 12, chunks
    assert [i["id"] for i in chunks["items"]] == [f"{log['id']}#{n}" for n in range(1, found + 1)]
    assert chunks["missing"] == [f"{log['id']}#{n}" for n in range(found + 1, 13)]
    assert "".join(i["text"] for i in chunks["items"]) == log["text"]
    assert all(i["text"].startswith("line ") for i in chunks["items"])  # cut at line ends


# -- mark -----------------------------------------------------------------------------------------------
def test_mark_writes_the_weight_into_the_frontmatter_and_pack_recalls_it(run, dory, root: Path, session) -> None:
    turns = session
    old, other = turns[2], turns[8]
    file = root / TRANSCRIPT
    before = file.read_bytes()
    unmarked, unknown = parallel(
        run,
        ("context", "pack", "--session", SESSION_ID, "--budget", "400", "--reserve", "0"),
        ("context", "mark", "m-000000000000", "--weight", "5"),
    )
    unmarked = ok_json(unmarked)
    check_packed(unmarked, 400, turns)
    assert unmarked["recalled"] == []
    failed(unknown, 3, "not_found", "no message 'm-000000000000' in the session index")
    assert file.read_bytes() == before

    assert ok_json(run("context", "mark", old["id"], "--weight", "5")) == {
        "id": old["id"],
        "session_id": SESSION_ID,
        "path": TRANSCRIPT,
        "weight": 5.0,
    }
    marked_bytes = file.read_bytes()
    assert split_note(marked_bytes)[1] == split_note(before)[1]  # the body is untouched, byte for byte
    assert frontmatter_lines(marked_bytes) == [*frontmatter_lines(before)[:-2], f"weights: {old['id']}=5", "---", ""]

    marked = ok_json(pack(run, 400))
    check_packed(marked, 400, turns)
    assert marked["recalled"] == [old["id"]] and old["id"] not in marked["protected"]
    [recalled] = [item for item in marked["items"] if item["kind"] == "recalled"]
    assert (recalled["id"], recalled["role"], recalled["text"]) == (old["id"], "user", old["text"])

    ok_json(run("reindex", "--full"))
    assert file.read_bytes() == marked_bytes
    after_reindex, second_mark = parallel(
        run,
        ("context", "pack", "--session", SESSION_ID, "--budget", "400", "--reserve", "0"),
        ("context", "mark", other["id"], "--weight", "0.5", "--session", SESSION_ID),
    )
    # The pack may run before or after the concurrent mark of `other`; the weight of `old` holds either way.
    assert old["id"] in ok_json(after_reindex)["recalled"]
    ok_json(second_mark)
    weights = sorted([f"{old['id']}=5", f"{other['id']}=0.5"])
    assert f"weights: {' '.join(weights)}" in frontmatter_lines(file.read_bytes())

    ok_json(run("context", "mark", old["id"], "--weight", "0"))  # a reset takes the weight out again
    assert f"weights: {other['id']}=0.5" in frontmatter_lines(file.read_bytes())
