"""Capture reads harness transcripts as they grow: every turn once, whatever the moment it looks.

The fixtures under fixtures/capture/ are written in the harnesses' real formats (Claude Code 2.0
and Codex CLI 0.58 rollouts): tool calls and their results, a compaction, and the boilerplate the
harnesses mix into the conversation (slash commands, local command output, system reminders, hook
output, environment context). A transcript cut at any line, or inside a line, and read again later
must give exactly the turns a single read of the whole file gives.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from pathlib import Path

import pytest

from dory.config import Settings, load_settings
from dory.models import JobRunRequest, SearchRequest, SessionIngestRequest
from dory.service import DoryService
from dory.sessions.capture import PIECE_BYTES, capture
from dory.sessions.capture_ledger import CaptureLedger
from dory.sessions.importers import parse_source
from dory.sessions.transcript import Session, merge

FIXTURES = Path(__file__).parent / "fixtures" / "capture"
CLAUDE_ID = "7c1e2d3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f"
CODEX_ID = "019a6f2e-5b3c-7d41-9e8f-2a3b4c5d6e7f"
LATER = dt.datetime(2026, 11, 21, tzinfo=dt.UTC)  # long after the fixtures' last turn
BOILERPLATE = (
    "command-name",
    "command-message",
    "local-command-stdout",
    "system-reminder",
    "Caveat:",
    "hook success",
    "Stop hook feedback",
    "stop_hook_summary",
    "environment_context",
    "user_instructions",
    "Set model to",
    "Compacted (ctrl+o",
    "malware",
)


def fixture_lines(name: str) -> list[bytes]:
    return (FIXTURES / name).read_bytes().splitlines(keepends=True)


class Plane:
    """The receiving end, as the session plane does it: every piece parsed back and merged by id."""

    def __init__(self) -> None:
        self.sessions: dict[str, Session] = {}
        self.pieces: list[SessionIngestRequest] = []

    def deliver(self, requests: list[SessionIngestRequest]) -> None:
        for req in requests:
            self.pieces.append(req)
            for incoming in parse_source(req.content.encode(), "markdown", req.source_path).sessions:
                known = self.sessions.get(incoming.session_id)
                self.sessions[incoming.session_id] = merge(known, incoming) if known else incoming


def turns(session: Session) -> list[tuple[str, str, str, str, tuple[str, ...]]]:
    return [(m.id, m.role, m.kind, m.text, tuple(m.tool_calls)) for m in session.messages]


def whole_file(path: Path, harness: str) -> Session:
    [session] = parse_source(path.read_bytes(), harness, str(path), None, "laptop").sessions  # type: ignore[arg-type]
    return session


def harness_settings(root: Path) -> Settings:
    (root / "corpus").mkdir(parents=True, exist_ok=True)
    overrides = {
        "capture.enabled": True,
        "capture.claude_root": str(root / "claude"),
        "capture.codex_root": str(root / "codex"),
        "capture.device": "laptop",
        "embedder.backend": "none",
    }
    return load_settings(root / "corpus", overrides, env={})


CASES = [
    ("claude-code", "claude-code.jsonl", f"claude/-home-dev-shop/{CLAUDE_ID}.jsonl"),
    ("codex", "codex.jsonl", f"codex/2026/11/20/rollout-2026-11-20T14-02-11-{CODEX_ID}.jsonl"),
]


@pytest.mark.parametrize(("harness", "fixture", "rel"), CASES)
def test_a_transcript_cut_anywhere_and_read_again_gives_each_turn_once(
    tmp_path: Path, harness: str, fixture: str, rel: str
) -> None:
    lines = fixture_lines(fixture)
    data = b"".join(lines)
    expected = turns(whole_file(FIXTURES / fixture, harness))
    cuts = sorted({0, *itertools.accumulate(len(line) for line in lines)})
    # every cut at a line end and in the middle of a line, and every two cuts a few lines apart
    plans: list[tuple[int, ...]] = [(cut,) for cut in cuts]
    plans += [(a + (b - a) // 2,) for a, b in itertools.pairwise(cuts)]
    plans += [(a, b) for i, a in enumerate(cuts) for b in cuts[i + 1 : i + 4]]
    for n, plan in enumerate(plans):
        base = tmp_path / str(n)
        settings = harness_settings(base)
        path = base / rel
        path.parent.mkdir(parents=True)
        ledger = CaptureLedger(settings.capture_db_path)
        plane = Plane()
        for end in (*plan, len(data)):
            with path.open("ab") as handle:
                handle.write(data[path.stat().st_size : end])
            capture(settings, ledger, plane, now=LATER)
        ledger.close()
        [session] = plane.sessions.values()
        assert turns(session) == expected, (plan, data[: plan[0]].count(b"\n"))


@pytest.mark.parametrize(("harness", "fixture", "rel"), CASES)
def test_harness_boilerplate_never_becomes_a_turn(tmp_path: Path, harness: str, fixture: str, rel: str) -> None:
    session = whole_file(FIXTURES / fixture, harness)
    text = "\n".join(m.text + "\n".join(m.tool_calls) for m in session.messages)
    assert [word for word in BOILERPLATE if word in text] == []
    shapes = [(m.role, m.kind) for m in session.messages]
    assert ("system", "summary") in shapes  # the compaction's summary is kept
    assert ("tool", "tool_result") in shapes and any(m.tool_calls for m in session.messages)


def test_the_claude_code_fixture_keeps_the_conversation() -> None:
    session = whole_file(FIXTURES / "claude-code.jsonl", "claude-code")
    assert [(m.role, m.kind, m.text.split("\n")[0][:40], m.tool_calls) for m in session.messages] == [
        ("user", "message", "Add a discount code field to the checkou", []),
        (
            "assistant",
            "message",
            "I'll read the checkout form and the disc",
            ["Read: /home/dev/shop/src/checkout/Form.tsx"],
        ),
        ("tool", "tool_result", "     1\texport function CheckoutForm() {", []),
        (
            "assistant",
            "message",
            "The form has no discount input yet. Addi",
            ["Edit: /home/dev/shop/src/checkout/Form.tsx"],
        ),
        ("tool", "tool_result", "The file /home/dev/shop/src/checkout/For", []),
        ("assistant", "message", "Done: the checkout form now shows a disc", []),
        ("system", "message", "Conversation compacted", []),
        ("system", "summary", "This session is being continued from a p", []),
        ("user", "message", "Now validate the codes on the server: re", []),
        (
            "assistant",
            "message",
            "Adding the check to the discounts endpoi",
            ["Bash: pytest tests/test_discounts.py -q"],
        ),
        ("tool", "tool_result", "[error]", []),
        ("assistant", "message", "TODO: the expired-code test still fails;", []),
    ]
    assert session.messages[2].text.endswith("3\t}")  # the reminder after the file's lines is cut


def test_the_codex_fixture_keeps_the_conversation() -> None:
    session = whole_file(FIXTURES / "codex.jsonl", "codex")
    assert [(m.role, m.kind, m.text.split("\n")[0][:30], m.tool_calls) for m in session.messages] == [
        ("user", "message", "The HTTP client gives up too e", []),
        ("assistant", "message", "Looking for where the client s", ["shell: rg -n 'retries' src"]),
        ("tool", "tool_result", "src/client.rs:42:    retries: ", []),
        (
            "assistant",
            "message",
            "",
            [
                "apply_patch: *** Begin Patch *** Update File: src/client.rs @@ - retries: 3, + retries: 5, "
                "*** End Patch"
            ],
        ),
        ("tool", "tool_result", "Success. Updated the following", []),
        ("assistant", "message", "Raised the retry count in src/", []),
        ("system", "summary", "Summary: the retry count of th", []),
        ("user", "message", "Now run the tests", []),
        ("assistant", "message", "Running cargo test.", ["shell: cargo test -q"]),
        ("tool", "tool_result", "running 14 tests", []),
        ("assistant", "message", "All 14 tests pass. Follow-up: ", []),
    ]
    assert session.extra["cwd"] == "/home/dev/api" and session.extra["model"] == "gpt-5-codex"


def test_unchanged_transcripts_are_not_read_again(tmp_path: Path) -> None:
    settings = harness_settings(tmp_path)
    path = tmp_path / CASES[0][2]
    path.parent.mkdir(parents=True)
    path.write_bytes((FIXTURES / "claude-code.jsonl").read_bytes())
    ledger = CaptureLedger(settings.capture_db_path)
    first = capture(settings, ledger, Plane(), now=LATER)
    again = capture(settings, ledger, Plane(), now=LATER)
    assert (first.files, first.read, first.sessions) == (1, 1, 1)
    assert (again.files, again.read, again.sessions) == (1, 0, 0)


def test_a_rewritten_or_shrunk_transcript_is_read_again_from_the_start(tmp_path: Path) -> None:
    settings = harness_settings(tmp_path)
    path = tmp_path / CASES[1][2]
    path.parent.mkdir(parents=True)
    lines = fixture_lines("codex.jsonl")
    path.write_bytes(b"".join(lines[:12]))
    ledger = CaptureLedger(settings.capture_db_path)
    plane = Plane()
    capture(settings, ledger, plane, now=LATER)
    # the file is rewritten with another line where the last line read was: read from the start
    edited = json.loads(lines[10])
    edited["payload"]["content"][0]["text"] = "Looking for where the client sets its RETRIES, again."
    path.write_bytes(b"".join([*lines[:10], json.dumps(edited, separators=(",", ":")).encode() + b"\n", lines[11]]))
    report = capture(settings, ledger, plane, now=LATER)
    assert (report.read, report.restarted) == (1, 1)
    texts = [m.text for m in plane.sessions[CODEX_ID].messages]
    assert "Looking for where the client sets its RETRIES, again." in texts  # what the file says now
    assert "Looking for where the client sets its retries." in texts  # never forgotten
    # shrunk (a harness that started the file over): read from the start; then it only grows
    path.write_bytes(b"".join(lines[:5]))
    assert capture(settings, ledger, plane, now=LATER).restarted == 1
    path.write_bytes(b"".join(lines))
    report = capture(settings, ledger, plane, now=LATER)
    assert (report.read, report.restarted) == (1, 0)
    assert [t for t in turns(plane.sessions[CODEX_ID]) if "RETRIES" not in t[3]] == turns(
        whole_file(FIXTURES / "codex.jsonl", "codex")
    )


def test_a_session_captured_while_going_on_is_marked_done_once_quiet(tmp_path: Path) -> None:
    settings = harness_settings(tmp_path)
    path = tmp_path / CASES[0][2]
    path.parent.mkdir(parents=True)
    path.write_bytes((FIXTURES / "claude-code.jsonl").read_bytes())
    ledger = CaptureLedger(settings.capture_db_path)
    plane = Plane()
    during = dt.datetime(2026, 11, 20, 10, 22, tzinfo=dt.UTC)  # a minute after the last turn
    capture(settings, ledger, plane, now=during)
    assert plane.sessions[CLAUDE_ID].status == "active"
    quiet_file = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC) + dt.timedelta(hours=1)
    report = capture(settings, ledger, plane, now=quiet_file)
    assert report.read == 1 and plane.sessions[CLAUDE_ID].status == "done"
    assert capture(settings, ledger, plane, now=quiet_file).read == 0  # once


def test_a_long_session_travels_in_pieces_under_the_cap(tmp_path: Path) -> None:
    settings = harness_settings(tmp_path)
    path = tmp_path / CASES[0][2]
    path.parent.mkdir(parents=True)
    records = [
        {
            "type": "user" if n % 2 == 0 else "assistant",
            "sessionId": "big",
            "timestamp": f"2026-11-20T10:{n:02d}:00Z",
            "message": {"role": "user" if n % 2 == 0 else "assistant", "content": f"{n} " + "word " * 60_000},
        }
        for n in range(6)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    plane = Plane()
    ledger = CaptureLedger(settings.capture_db_path)
    report = capture(settings, ledger, plane, now=LATER)
    assert report.pieces == len(plane.pieces) == 2  # three messages of 300 kB each
    assert all(len(piece.content.encode()) < PIECE_BYTES for piece in plane.pieces)
    assert turns(plane.sessions["big"]) == turns(whole_file(path, "claude-code"))


def test_the_capture_job_saves_and_indexes_each_turn_once(tmp_path: Path) -> None:
    settings = harness_settings(tmp_path)
    for _, fixture, rel in CASES:
        path = tmp_path / rel
        path.parent.mkdir(parents=True)
        path.write_bytes(b"".join(fixture_lines(fixture)[:15]))
    svc = DoryService(settings)
    try:
        first = svc.run_job(JobRunRequest(job="capture"))
        for _, fixture, rel in CASES:
            (tmp_path / rel).write_bytes((FIXTURES / fixture).read_bytes())
        second = svc.run_job(JobRunRequest(job="capture", force=True))
        third = svc.run_job(JobRunRequest(job="capture", force=True))
        for harness, _, rel in CASES:
            expected = whole_file(tmp_path / rel, harness)
            shown = svc.sessions.show(expected.session_id)
            assert [(t.id, t.text) for t in shown.turns] == [(m.id, m.text) for m in expected.messages]
            assert shown.session.device == "laptop" and shown.session.agent == harness
        hits = svc.search(SearchRequest(query="expired code", mode="recall")).hits
    finally:
        svc.close()
    assert (first.outputs["read"], first.outputs["sessions"]) == (2, 2)
    assert (second.outputs["read"], third.outputs["read"]) == (2, 0)
    assert hits and all(hit.path.startswith("logs/sessions/claude-code/laptop/2026-11-20-") for hit in hits)
