"""Compaction (dory/sessions/compaction.py) and `SessionService.compact`: the five-section
`<continuation_summary>` under its word cap, extraction without a model, the normalised LLM answer and
every way the model can fail (the previous summary is kept byte for byte, else extraction steps in), the
durable facts flushed into proposals before summarising (idempotently), dry runs that write nothing, and
`--retain`. The service runs in-process on a temporary corpus, the model is tests/support/fake_llm.py."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.fake_llm import FakeLlm, Reply, Request, empty, hang, malformed, ok, status
from support.waiting import DEADLINE_S

from dory.config import load_settings
from dory.models import (
    CompactRequest,
    CompactResponse,
    ReindexRequest,
    SearchRequest,
    SessionIngestRequest,
    SessionListRequest,
)
from dory.service import DoryService
from dory.sessions import compaction
from dory.sessions.compaction import CLOSE, OPEN, SECTIONS, Parts
from dory.sessions.facts import Found
from dory.sessions.packing import PackMessage

SESSION_ID = "compact-1"
TRANSCRIPT = "logs/sessions/unknown/laptop/2026-11-22-compact-1.md"
SUMMARY = "logs/sessions/unknown/laptop/2026-11-22-compact-1.summary.md"
USER_PAGE = "---\ntitle: User\ntype: core\ncanonical: true\n---\n# User\n\nWho the user is.\n"


def rec(kind: str, minute: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "timestamp": f"2026-11-22T08:{minute}Z", "content": content, **extra}


RECORDS: list[dict[str, Any]] = [
    rec(
        "user",
        "00:00",
        "The pelican deploy fails with a 401 on https://deploy.example.com/api/v2/push today.",
        session_id=SESSION_ID,
        title="Fix the pelican deploy",
    ),
    rec(
        "assistant",
        "00:05",
        "Let me look at the deploy script first.",
        tool_calls=[{"name": "bash", "arguments": {"command": "cat scripts/deploy.sh"}}],
    ),
    rec("tool_result", "00:06", "Error: 401 Unauthorized from push endpoint"),
    rec("user", "01:00", "I prefer tabs over spaces in every shell script."),
    rec("assistant", "01:05", "We decided to switch to token auth for the pelican deploy from now on."),
    rec("user", "02:00", "Remember that the staging cluster is called heron-7."),
    rec(
        "assistant",
        "02:05",
        "Updated the config file.",
        tool_calls=[{"name": "edit", "arguments": {"file_path": "config/deploy.toml"}}],
    ),
    rec("user", "03:00", "We still need to rotate the old pelican token later."),
    rec("assistant", "03:05", "Noted, the zeppelin rotation is pending."),
    rec("user", "04:00", "Thanks, that is all for the marmalade today."),
]
DECISION = "We decided to switch to token auth for the pelican deploy from now on."
PREFERENCE = "I prefer tabs over spaces in every shell script."
REMEMBER = "Remember that the staging cluster is called heron-7."
SUBJECT = "Switch to token auth for the pelican deploy from now on"  # the decision's clause, whole words
GOOD_ANSWER = {
    "files_modified": ["config/deploy.toml", "  config/deploy.toml  ", "CONFIG/DEPLOY.TOML"],
    "key_decisions": ["Switch the pelican deploy\n   to token auth."],
    "important_values": ["https://deploy.example.com/api/v2/push", "", "   ", "heron-7"],
    "current_state": "  The deploy works again;\n\tthe old token still exists.  ",
    "pending_tasks": ["Rotate the old pelican token."],
}
EMPTY_SECTIONS = {
    "files_modified": ["  ", ""],
    "key_decisions": [],
    "important_values": ["\n"],
    "current_state": "   ",
    "pending_tasks": [],
}


# -- helpers ----------------------------------------------------------------------------------------
def jsonl(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


def digest(root: Path) -> dict[str, str]:
    """sha256 of every corpus file (the .dory state folder left out)."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".dory" not in p.relative_to(root).parts
    }


def sections(block: str) -> dict[str, list[str]]:
    """The summary block's sections, checked to be exactly the five titles, in order, inside the tags."""
    lines = block.split("\n")
    assert lines[0] == OPEN and lines[-1] == CLOSE, block
    found: dict[str, list[str]] = {}
    for line in lines[1:-1]:
        if line.startswith("## "):
            found[line[3:]] = []
        else:
            assert line.startswith("- "), line
            found[list(found)[-1]].append(line[2:])
    assert list(found) == list(SECTIONS), block
    return {title: [] if items == ["(none)"] else items for title, items in found.items()}


def content_words(block: str) -> int:
    """What the word cap counts: item words, plus three per section heading."""
    return sum(len(item.split()) for items in sections(block).values() for item in items) + 3 * len(SECTIONS)


def proposal_files(root: Path) -> dict[str, bytes]:
    folder = root / "inbox" / "proposed"
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.json"))} if folder.is_dir() else {}


def summary_meta(text: str) -> dict[str, Any]:
    head, _, _ = text.removeprefix("---\n").partition("\n---\n")
    return {key: json.loads(value) for key, value in (line.split(": ", 1) for line in head.split("\n"))}


def msg(ident: str, role: str, text: str) -> PackMessage:
    return PackMessage(ident, role, text)


MakeService = Callable[..., DoryService]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A corpus with the session ingested and indexed (core/user.md is the entity `user` preferences
    are proposed to), built once; every test compacts its own copy."""
    root = tmp_path_factory.mktemp("compaction") / "corpus"
    (root / "core").mkdir(parents=True)
    (root / "core" / "user.md").write_text(USER_PAGE, encoding="utf-8")
    svc = DoryService(load_settings(root, {"embedder.backend": "none"}, env={}))
    try:
        ingested = svc.sessions.ingest(SessionIngestRequest(content=jsonl(RECORDS), format="jsonl", device="laptop"))
        assert [(s.action, s.path) for s in ingested.sessions] == [("created", TRANSCRIPT)] and not ingested.problems
        svc.reindex(ReindexRequest())
    finally:
        svc.close()
    return root


@pytest.fixture
def make_service(template: Path, tmp_path: Path) -> Iterator[MakeService]:
    """make_service(llm=None, **overrides): a service over a fresh copy of the template corpus; with `llm`,
    its dory.toml points [llm] at the fake server (no retries; a timeout that only bounds a hang)."""
    services: list[DoryService] = []

    def build(llm: FakeLlm | None = None, **overrides: Any) -> DoryService:
        root = tmp_path / f"corpus{len(services)}"
        shutil.copytree(template, root)
        if llm is not None:
            (root / "dory.toml").write_text(
                f'[llm]\nbackend = "openai"\nurl = "{llm.url}"\nmodel = "fake-model"\n'
                f"timeout_s = {DEADLINE_S:g}\nretries = 0\n",
                encoding="utf-8",
            )
        svc = DoryService(load_settings(root, {"embedder.backend": "none", **overrides}, env={}))
        services.append(svc)
        return svc

    yield build
    for svc in services:
        svc.close()


def ids(svc: DoryService) -> list[str]:
    return [turn.id for turn in svc.sessions.show(SESSION_ID).turns]


def first_line(svc: DoryService, session_id: str) -> int:
    """The line a session's first turn starts on."""
    line = svc.sessions.show(session_id).turns[0].start_line
    assert line is not None
    return line


def compact(svc: DoryService, **fields: Any) -> CompactResponse:
    return svc.sessions.compact(CompactRequest(id=SESSION_ID, **fields))


# -- render -----------------------------------------------------------------------------------------
def test_render_always_has_the_five_sections_in_order_inside_the_tags() -> None:
    block = compaction.render(Parts(values=["https://example.com/x"], pending=["ship it"]), 400)
    assert block == (
        "<continuation_summary>\n## Files Modified\n- (none)\n## Key Decisions\n- (none)\n"
        "## Important Values\n- https://example.com/x\n## Current State\n- (none)\n## Pending Tasks\n- ship it\n"
        "</continuation_summary>"
    )
    assert sections(compaction.render(Parts(), 50)) == {title: [] for title in SECTIONS}


def test_render_trims_state_then_decisions_then_pending_then_files_and_values_last() -> None:
    parts = Parts(
        files=["a.py"],
        decisions=["d1 d2 d3", "d4 d5"],
        values=["v1 v2 v3", "v4 v5"],
        state=["s1 s2 s3 s4", "s5 s6"],
        pending=["p1 p2"],
    )
    # The whole block counts: 2 tags + 5 three-word headings + a "-" per item, "- (none)" for an empty section.
    full = 17 + (1 + 1) + (3 + 2 + 2) + (3 + 2 + 2) + (4 + 2 + 2) + (2 + 1)
    assert len(compaction.render(parts, full).split()) == full == 44
    assert sections(compaction.render(parts, full))["Current State"] == ["s1 s2 s3 s4", "s5 s6"]
    got = sections(compaction.render(parts, 38))
    assert (got["Current State"], got["Key Decisions"]) == ([], ["d1 d2 d3", "d4 d5"])
    got = sections(compaction.render(parts, 33))
    assert (got["Key Decisions"], got["Pending Tasks"], got["Files Modified"]) == ([], ["p1 p2"], ["a.py"])
    got = sections(compaction.render(parts, 32))
    assert (got["Pending Tasks"], got["Files Modified"], got["Important Values"]) == (
        [],
        ["a.py"],
        ["v1 v2 v3", "v4 v5"],
    )
    got = sections(compaction.render(parts, 31))
    assert (got["Files Modified"], got["Important Values"]) == ([], ["v1 v2 v3"])  # exact values go last
    assert sections(compaction.render(parts, 10)) == {title: [] for title in SECTIONS}
    for cap in (10, 27, 31, 32, 33, 38, 44, 50):
        assert len(compaction.render(parts, cap).split()) <= max(cap, 27)


def test_the_rendered_block_stays_within_the_word_cap() -> None:
    parts = Parts(values=[f"value{n}" for n in range(40)], state=[f"state sentence {n}" for n in range(20)])
    assert len(compaction.render(parts, 60).split()) <= 60


# -- extraction -------------------------------------------------------------------------------------
TURNS = [
    msg("m-1", "user", "**Alice**: The pelican deploy fails on https://deploy.example.com/push today."),
    msg(
        "m-2",
        "assistant",
        "Let me look at the script.\n\nTool calls:\n- bash: ./deploy.sh --dry-run\n"
        "- edit: scripts/deploy.sh\n- read: README.md",
    ),
    msg("m-3", "tool", "Traceback (most recent call last):\nPermissionError: [Errno 13] Permission denied"),
    msg("m-4", "assistant", "We decided to keep the bash script instead of a Makefile. See docs/deploy.md for it."),
    msg("m-5", "user", "We still need to update the runbook later."),
    msg("m-6", "assistant", "The deploy now runs cleanly on the staging machine."),
]


def test_extractive_fills_the_sections_from_the_turns() -> None:
    parts = compaction.extractive(TURNS, 400)
    assert parts.files == ["scripts/deploy.sh"]  # from the edit call; a read call is no modification
    assert parts.decisions == ["We decided to keep the bash script instead of a Makefile."]
    assert parts.values == [
        "https://deploy.example.com/push",
        "./deploy.sh --dry-run",
        "Traceback (most recent call last):",
        "PermissionError: [Errno 13] Permission denied",
        "docs/deploy.md",
    ]
    assert parts.pending == ["We still need to update the runbook later."]
    # Current State: central sentences the other sections did not take, with their speaker.
    assert "Alice: The pelican deploy fails on https://deploy.example.com/push today." in parts.state
    assert not set(parts.state) & set(parts.decisions + parts.pending)
    assert all("Traceback" not in s for s in parts.state)  # tool output is no sentence of the conversation


def test_extractive_pending_comes_from_the_second_half_only() -> None:
    turns = [
        msg("m-1", "user", "We still need to migrate the database schema."),
        msg("m-2", "assistant", "The schema migration finished without problems."),
        msg("m-3", "user", "Then the next step is the backup policy."),
        msg("m-4", "assistant", "The backup policy document is drafted."),
    ]
    assert compaction.extractive(turns).pending == ["Then the next step is the backup policy."]


def test_extractive_state_fills_only_the_words_the_other_sections_leave() -> None:
    chatter = [
        msg(f"m-{n}", "user" if n % 2 else "assistant", f"Crane{n} moved box{n} to quay{n} before noon{n}.")
        for n in range(40)
    ]
    for cap in (60, 120, 400):
        parts = compaction.extractive(chatter, cap)
        assert parts.state, cap
        assert len(compaction.render(parts, cap).split()) <= cap
    assert len(compaction.extractive(chatter, 400).state) > len(compaction.extractive(chatter, 60).state)


def test_extractive_of_nothing_is_empty() -> None:
    assert compaction.is_empty(compaction.extractive([]))
    assert compaction.render(compaction.extractive([]), 400).count("- (none)") == 5


# -- the LLM contract -------------------------------------------------------------------------------
def test_llm_input_lists_the_turns_with_ids_and_the_previous_summary_first() -> None:
    turns = [msg("m-1", "user", "hello there"), msg("m-2", "assistant", "hi, how can I help?")]
    assert compaction.llm_input(turns, None) == (
        "Transcript:\n[m-1] user: hello there\n\n[m-2] assistant: hi, how can I help?"
    )
    assert compaction.llm_input(turns, "<continuation_summary>old</continuation_summary>") == (
        "Previous summary:\n<continuation_summary>old</continuation_summary>\n\n"
        "Transcript:\n[m-1] user: hello there\n\n[m-2] assistant: hi, how can I help?"
    )


def test_llm_input_keeps_the_newest_text_when_too_long() -> None:
    turns = [msg("m-1", "user", "OLDEST " + "a" * compaction.LLM_INPUT_CHARS), msg("m-2", "assistant", "NEWEST")]
    text = compaction.llm_input(turns, None)
    assert text.startswith("Transcript:\n…\n") and text.endswith("[m-2] assistant: NEWEST")
    assert len(text) == len("Transcript:\n…\n") + compaction.LLM_INPUT_CHARS
    assert "OLDEST" not in text


def test_from_llm_normalises_whitespace_drops_duplicates_and_blanks_and_caps() -> None:
    answer = {
        "files_modified": ["  src/a.py ", "src/a.py", "SRC/A.PY", "", "   ", "src/b.py"],
        "key_decisions": ["Use   token\n auth"],
        "important_values": ["x" * 400],
        "current_state": "  Deploy   works\nnow. ",
        "pending_tasks": [f"task {n}" for n in range(20)],
    }
    parts = compaction.from_llm(answer)
    assert parts == Parts(
        files=["src/a.py", "src/b.py"],
        decisions=["Use token auth"],
        values=["x" * compaction.ITEM_CHARS],
        state=["Deploy works now."],
        pending=[f"task {n}" for n in range(compaction.ITEMS_PER_SECTION)],
    )
    assert compaction.is_empty(compaction.from_llm(EMPTY_SECTIONS))
    assert not compaction.is_empty(parts)


def test_from_llm_treats_missing_fields_as_empty() -> None:
    assert compaction.is_empty(compaction.from_llm({"current_state": "   "}))


# -- durable facts ----------------------------------------------------------------------------------
def test_durable_facts_are_decisions_and_what_the_user_says_each_with_its_page() -> None:
    turns = [
        msg("m-1", "user", "I prefer dark mode in every editor. The build is green again."),
        msg("m-2", "assistant", "I prefer nothing at all. Remember that I am only a bot."),  # not the user's
        msg("m-3", "tool", "We decided to drop Python 3.9 support."),  # tool output states nothing
        msg("m-4", "assistant", "After the review we decided to drop Python 3.9 support, finally."),
        msg("m-5", "user", "Remember that the staging cluster is heron-7."),  # about a thing: its own page
        msg("m-6", "user", "We will use Redis for caching."),  # a collective choice is a decision
        msg("m-7", "user", "i prefer dark mode in every editor."),  # the same preference again
        msg("m-8", "user", "We agreed on the plan today."),
        msg("m-9", "user", "Remember that I am allergic to peanuts."),  # asked to remember, about themselves
        msg("m-10", "user", "Should we decide on a database? Agreed, what a big decision."),  # no decision
        msg("m-11", "user", "I always run the tests in this repo with -x."),  # about the repo, no project known
    ]
    got = [
        (f.kind, f.subject, f.found.scope, f.found.needs_repeat, f.content, f.message_id)
        for f in compaction.durable_facts(turns)
    ]
    assert got == [
        ("preference", "user", None, True, "I prefer dark mode in every editor.", "m-1"),
        (
            "decision",
            "Drop Python 3.9 support",
            "decision",
            False,
            "After the review we decided to drop Python 3.9 support, finally.",
            "m-4",
        ),
        ("fact", "staging cluster", "concept", False, "Remember that the staging cluster is heron-7.", "m-5"),
        ("decision", "Use Redis for caching", "decision", False, "We will use Redis for caching.", "m-6"),
        ("decision", "Agreed on the plan today", "decision", False, "We agreed on the plan today.", "m-8"),
        ("fact", "user", None, False, "Remember that I am allergic to peanuts.", "m-9"),
    ]


def test_durable_facts_of_a_session_in_a_project_go_to_its_page() -> None:
    turns = [
        msg("m-1", "user", "I always run the tests in this repo with -x."),
        msg("m-2", "user", "Remember that the staging cluster is heron-7."),
        msg("m-3", "user", "I prefer dark mode in every editor."),  # about the user: core if said again
    ]
    found = [f.found for f in compaction.durable_facts(turns, project="pelican")]
    assert found == [
        Found("preference", "pelican", "project"),
        Found("fact", "pelican", "project"),
        Found("preference", "user", None, needs_repeat=True, otherwise=Found("preference", "pelican", "project")),
    ]


def test_durable_facts_keep_the_latest_ten() -> None:
    turns = [msg(f"m-{n}", "user", f"I always run the linter number {n} first.") for n in range(14)]
    facts = compaction.durable_facts(turns)
    assert [f.message_id for f in facts] == [f"m-{n}" for n in range(4, 14)]


def test_summary_file_is_frontmatter_then_the_block() -> None:
    text = compaction.summary_file(
        "s-1",
        "m-9",
        "llm",
        "<continuation_summary>\nx\n</continuation_summary>",
        {"messages_before": 10, "tokens_before": 200, "tokens_after": 50},
        "2026-11-21T10:00:00Z",
    )
    assert text == (
        '---\ntype: "session_summary"\nsession_id: "s-1"\ncovers_through: "m-9"\nmethod: "llm"\n'
        'created: "2026-11-21T10:00:00Z"\nmessages_before: 10\ntokens_before: 200\ntokens_after: 50\n'
        "---\n\n<continuation_summary>\nx\n</continuation_summary>\n"
    )
    assert "covers_through: null\n" in compaction.summary_file("s", None, "extractive", "b", {}, "t")


# -- SessionService.compact without a model ---------------------------------------------------------
def test_compact_flushes_facts_then_writes_the_summary_next_to_the_transcript(make_service: MakeService) -> None:
    svc = make_service()
    root = svc.settings.corpus
    turn_ids = ids(svc)
    res = compact(svc, retain=2)
    assert (res.session_id, res.path, res.summary_path, res.method, res.dry_run) == (
        SESSION_ID,
        TRANSCRIPT,
        SUMMARY,
        "extractive",
        False,
    )
    assert (res.messages_before, res.messages_after, res.llm, res.proposals_existing) == (10, 3, None, 0)
    assert res.tokens_before > 0 and res.tokens_after > 0 and res.words == len(res.summary.split())
    assert res.warnings == []

    got = sections(res.summary)
    assert got["Files Modified"] == ["config/deploy.toml"]
    assert got["Key Decisions"] == [DECISION]
    assert got["Pending Tasks"] == ["We still need to rotate the old pelican token later."]
    assert {
        "https://deploy.example.com/api/v2/push",
        "cat scripts/deploy.sh",
        "Error: 401 Unauthorized from push endpoint",
    } <= set(got["Important Values"])
    assert got["Current State"]
    assert "zeppelin" not in res.summary and "marmalade" not in res.summary  # the two retained messages

    text = (root / SUMMARY).read_text(encoding="utf-8")
    assert text.endswith(f"\n\n{res.summary}\n")
    meta = summary_meta(text)
    assert {
        k: meta[k]
        for k in ("type", "session_id", "covers_through", "method", "messages_before", "tokens_before", "tokens_after")
    } == {
        "type": "session_summary",
        "session_id": SESSION_ID,
        "covers_through": turn_ids[7],
        "method": "extractive",
        "messages_before": 10,
        "tokens_before": res.tokens_before,
        "tokens_after": res.tokens_after,
    }
    assert svc.sessions.show(SESSION_ID).summary == text

    # One proposal per durable fact, each pointing at the message it came from; the user's preference,
    # said in this session only, waits until they say it again (see the next test).
    files = proposal_files(root)
    assert sorted(files) == sorted(f"{pid}.json" for pid in res.proposals) and len(files) == 2
    writes = sorted((json.loads(data)["write"] for data in files.values()), key=lambda w: w["source"])
    assert [(w["kind"], w["subject"], w["scope"], w["content"], w["source"]) for w in writes] == sorted(
        [
            ("decision", SUBJECT, "decision", DECISION, f"{TRANSCRIPT}#{turn_ids[4]}"),
            ("fact", "staging cluster", "concept", REMEMBER, f"{TRANSCRIPT}#{turn_ids[5]}"),
        ],
        key=lambda w: w[4],
    )
    plans = {json.loads(data)["plan"]["target_path"] for data in files.values()}
    assert plans == {
        "decisions/switch-to-token-auth-for-the-pelican-deploy-from-now-on.md",
        "concepts/staging-cluster.md",
    }


def test_a_preference_the_user_said_in_another_session_too_is_proposed_for_core(make_service: MakeService) -> None:
    svc = make_service()
    earlier = [rec("user", "00:00", "I prefer tabs over spaces in shell scripts.", session_id="older", title="Style")]
    [other] = svc.sessions.ingest(
        SessionIngestRequest(content=jsonl(earlier), format="jsonl", device="laptop")
    ).sessions
    res = compact(svc, retain=2)
    writes = [json.loads(data)["write"] for data in proposal_files(svc.settings.corpus).values()]
    [preference] = [w for w in writes if w["kind"] == "preference"]
    assert (preference["subject"], preference["scope"], preference["content"]) == ("user", None, PREFERENCE)
    assert preference["reason"] == f"the user said it in another session too ({other.path}#L{first_line(svc, 'older')})"
    assert len(res.proposals) == 3


def test_compact_again_proposes_nothing_new(make_service: MakeService) -> None:
    svc = make_service()
    first = compact(svc, retain=2)
    before = proposal_files(svc.settings.corpus)
    second = compact(svc, retain=2)
    assert (second.proposals, second.proposals_existing) == ([], 2)
    assert proposal_files(svc.settings.corpus) == before
    assert second.summary == first.summary


def test_dry_run_writes_nothing_and_says_what_it_would_propose(make_service: MakeService) -> None:
    svc = make_service()
    root = svc.settings.corpus
    before = digest(root)
    res = compact(svc, retain=2, dry_run=True)
    assert digest(root) == before
    assert not (root / SUMMARY).exists() and proposal_files(root) == {}
    assert (res.dry_run, res.method, res.proposals, res.proposals_existing) == (True, "extractive", [], 0)
    assert res.warnings == [
        f"would propose (decision, {SUBJECT}): {DECISION}",
        f"would propose (fact, staging cluster): {REMEMBER}",
    ]
    assert res.summary == compact(svc, retain=2).summary  # what it showed is what a real run writes


@pytest.mark.parametrize("retain", [0, 1, 5, 10])
def test_retain_keeps_the_last_messages_out_of_the_summary(make_service: MakeService, retain: int) -> None:
    svc = make_service()
    turn_ids = ids(svc)
    res = compact(svc, retain=retain)
    assert (res.messages_before, res.messages_after) == (10, retain + 1)
    covered = 10 - retain
    assert summary_meta((svc.settings.corpus / SUMMARY).read_text())["covers_through"] == (
        turn_ids[covered - 1] if covered else None
    )
    assert ("marmalade" in res.summary) == (retain == 0)


def test_retain_beyond_the_session_keeps_every_message(make_service: MakeService) -> None:
    svc = make_service()
    res = compact(svc, retain=12)
    assert res.messages_after == 11
    assert summary_meta((svc.settings.corpus / SUMMARY).read_text())["covers_through"] is None


def test_the_summary_file_is_no_session_and_not_durable_memory(make_service: MakeService) -> None:
    svc = make_service()
    compact(svc, retain=2)
    assert (svc.settings.corpus / SUMMARY).is_file()
    svc.reindex(ReindexRequest(full=True))
    listing = svc.sessions.list(SessionListRequest())
    assert (listing.total, [s.path for s in listing.sessions]) == (1, [TRANSCRIPT])
    rows = svc.session_store.conn.execute("SELECT path FROM sessions").fetchall()
    assert [tuple(row) for row in rows] == [(TRANSCRIPT,)]
    durable = svc.search(SearchRequest(query="pelican deploy token", mode="bm25"))
    assert all(not hit.path.startswith("logs/") for hit in durable.hits), durable.hits
    everything = svc.search(SearchRequest(query="pelican deploy token", mode="bm25", corpus="all"))
    assert everything.hits and {hit.path for hit in everything.hits} == {TRANSCRIPT}


# -- SessionService.compact with a model ------------------------------------------------------------
def test_an_llm_answer_becomes_the_normalised_summary(make_service: MakeService, llm: FakeLlm) -> None:
    svc = make_service(llm)
    turn_ids = ids(svc)
    llm.script(ok(GOOD_ANSWER))
    res = compact(svc, retain=2)
    assert (res.method, res.warnings) == ("llm", [])
    assert res.llm == {"attempted": 1, "produced": 1, "empty": 0, "failed": 0, "retried": 0}
    assert sections(res.summary) == {
        "Files Modified": ["config/deploy.toml"],
        "Key Decisions": ["Switch the pelican deploy to token auth."],
        "Important Values": ["https://deploy.example.com/api/v2/push", "heron-7"],
        "Current State": ["The deploy works again; the old token still exists."],
        "Pending Tasks": ["Rotate the old pelican token."],
    }
    assert summary_meta((svc.settings.corpus / SUMMARY).read_text())["method"] == "llm"
    [request] = llm.chat_requests
    system, user = request.messages[0]["content"], request.messages[1]["content"]
    assert system.startswith(compaction.PROMPT) and '"files_modified"' in system
    assert user.startswith("Transcript:\n") and "Previous summary" not in user
    assert f"[{turn_ids[0]}] user: The pelican deploy fails with a 401" in user
    assert f"[{turn_ids[1]}] assistant: Let me look at the deploy script first.\n\nTool calls:\n- bash: cat" in user
    assert turn_ids[7] in user and turn_ids[8] not in user and "zeppelin" not in user  # retained: not sent


def test_the_next_compaction_hands_the_model_the_previous_summary(make_service: MakeService, llm: FakeLlm) -> None:
    svc = make_service(llm)
    llm.script(ok(GOOD_ANSWER), ok({**GOOD_ANSWER, "pending_tasks": ["Nothing left."]}))
    first = compact(svc, retain=2)
    second = compact(svc, retain=0)
    assert (first.method, second.method) == ("llm", "llm")
    user = llm.chat_requests[1].messages[1]["content"]
    assert user.startswith(f"Previous summary:\n{first.summary}\n\nTranscript:\n")
    assert "marmalade" in user
    assert sections(second.summary)["Pending Tasks"] == ["Nothing left."]


def test_facts_are_proposed_before_the_model_is_asked(make_service: MakeService, llm: FakeLlm) -> None:
    seen: list[list[str]] = []
    svc = make_service(llm)
    proposed = svc.settings.corpus / "inbox" / "proposed"

    def answer(request: Request) -> Reply:
        seen.append(sorted(p.name for p in proposed.glob("*.json")))
        return ok(GOOD_ANSWER)

    llm.default = answer
    res = compact(svc, retain=2)
    assert res.method == "llm" and len(res.proposals) == 2
    assert seen == [sorted(f"{pid}.json" for pid in res.proposals)]


FAILURES = {
    "empty": (
        empty(),
        "LLM model 'fake-model' (task 'compaction') answered with an empty message",
        {"attempted": 1, "produced": 0, "empty": 1, "failed": 1, "retried": 0},
    ),
    "malformed": (
        malformed(),
        "LLM model 'fake-model' (task 'compaction') did not answer with a JSON object: this is not json {",
        {"attempted": 1, "produced": 0, "empty": 0, "failed": 1, "retried": 0},
    ),
    "empty-sections": (
        ok(EMPTY_SECTIONS),
        "compaction: the model returned only empty sections",
        {"attempted": 1, "produced": 0, "empty": 1, "failed": 1, "retried": 0},
    ),
    "timeout": (
        hang(),
        "LLM endpoint {endpoint} (model 'fake-model', task 'compaction') timed out after 0.3 s; tried 1 times",
        {"attempted": 1, "produced": 0, "empty": 0, "failed": 1, "retried": 0},
    ),
    "http-500": (
        status(500, "boom"),
        "LLM endpoint {endpoint} (model 'fake-model', task 'compaction') answered HTTP 500 (tried 1 times): boom",
        {"attempted": 1, "produced": 0, "empty": 0, "failed": 1, "retried": 0},
    ),
}


def short_timeout_for_a_hang(svc: DoryService, reply: Reply) -> None:
    """A reply that never comes ends only by the timeout: 0.3 s for the call that gets it."""
    if reply.delay_s:
        svc.settings.llm.timeout_s = 0.3


@pytest.mark.parametrize("case", list(FAILURES))
def test_a_failed_model_keeps_the_previous_summary_byte_for_byte(
    make_service: MakeService, llm: FakeLlm, case: str
) -> None:
    reply, problem, counters = FAILURES[case]
    svc = make_service(llm)
    llm.script(ok(GOOD_ANSWER), reply)
    assert compact(svc, retain=2).method == "llm"
    short_timeout_for_a_hang(svc, reply)
    file = svc.settings.corpus / SUMMARY
    before = file.read_bytes()
    previous = before.decode()[before.decode().index(OPEN) :].rstrip("\n")
    res = compact(svc, retain=1)
    assert file.read_bytes() == before
    assert (res.method, res.summary) == ("kept_previous", previous)
    endpoint = f"{llm.url}/v1/chat/completions"
    assert res.warnings == [problem.replace("{endpoint}", endpoint) + "; the previous summary was kept"]
    assert res.llm == counters
    assert res.proposals_existing == 2  # the facts were flushed all the same


@pytest.mark.parametrize("case", list(FAILURES))
def test_a_failed_model_without_a_previous_summary_falls_back_to_extraction(
    make_service: MakeService, llm: FakeLlm, case: str
) -> None:
    reply, problem, counters = FAILURES[case]
    svc = make_service(llm)
    short_timeout_for_a_hang(svc, reply)
    llm.script(reply)
    res = compact(svc, retain=2)
    assert res.method == "extractive"
    endpoint = f"{llm.url}/v1/chat/completions"
    assert res.warnings == [problem.replace("{endpoint}", endpoint) + "; the summary was extracted without the model"]
    assert res.llm == counters
    assert sections(res.summary)["Key Decisions"] == [DECISION]
    text = (svc.settings.corpus / SUMMARY).read_text()
    assert summary_meta(text)["method"] == "extractive" and text.endswith(f"\n\n{res.summary}\n")


def test_an_answer_with_only_empty_sections_is_counted_as_empty(make_service: MakeService, llm: FakeLlm) -> None:
    svc = make_service(llm)
    llm.script(ok(EMPTY_SECTIONS))
    assert compact(svc).llm == {"attempted": 1, "produced": 0, "empty": 1, "failed": 1, "retried": 0}


def test_the_word_cap_setting_bounds_the_summary(make_service: MakeService) -> None:
    svc = make_service(**{"context.summary_words": 50})
    res = compact(svc, retain=0)
    assert content_words(res.summary) <= 50
    assert sections(res.summary)["Important Values"]  # exact values are the last to go
    assert re.search(r"^- https://deploy\.example\.com/api/v2/push$", res.summary, re.MULTILINE)
