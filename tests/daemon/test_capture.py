"""Automatic capture on a real daemon: recorded Claude Code and Codex transcripts appear in the
harnesses' folders (under a temporary HOME) while `dory ops watch` runs, then grow; every turn lands
in the session plane exactly once, boilerplate never, and the day's digest, which ran before the
sessions arrived, is written again with them (late sessions are digested)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

from support.daemon import DaemonProcess, daemon_env, wait_until

from dory.jobs.ledger import JobLedger
from dory.sessions.importers import parse_source
from dory.sessions.transcript import Session, parse_session

FIXTURES = Path(__file__).parents[1] / "sessions" / "fixtures" / "capture"
FIXTURE_DAY = "2026-11-20"
CLAUDE_ID = "7c1e2d3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f"
CODEX_ID = "019a6f2e-5b3c-7d41-9e8f-2a3b4c5d6e7f"
BOILERPLATE = ("<command-name>", "local-command-stdout", "system-reminder", "hook success", "Stop hook feedback")


def dated(name: str, day: str) -> list[bytes]:
    """A fixture's lines, its sessions moved to `day`."""
    text = (FIXTURES / name).read_text(encoding="utf-8").replace(FIXTURE_DAY, day)
    return [line.encode() for line in text.splitlines(keepends=True)]


def runs(daemon: DaemonProcess, job: str) -> list[dict]:
    ledger = JobLedger(daemon.settings.ledger_path)
    try:
        return ledger.history(job, 500)
    finally:
        ledger.close()


def captured(root: Path, agent: str) -> Session | None:
    found = sorted((root / "logs/sessions" / agent / "laptop").glob("*.md"))
    return parse_session(found[0].relative_to(root).as_posix(), found[0].read_bytes()) if found else None


def turns(session: Session | None) -> list[tuple[str, str]]:
    return [(m.id, m.text) for m in session.messages] if session else []


def expected(lines: list[bytes], harness: str) -> list[tuple[str, str]]:
    [session] = parse_source(b"".join(lines), harness, None, None, "laptop").sessions  # type: ignore[arg-type]
    return turns(session)


def capture_env(home: Path, **more: str) -> dict[str, str]:
    return daemon_env(
        HOME=str(home),  # the harnesses' default folders, in a temporary home
        TZ="UTC",
        DORY_CAPTURE_ENABLED="true",
        DORY_CAPTURE_DEVICE="laptop",
        DORY_CAPTURE_DEBOUNCE_MS="100",
        DORY_CAPTURE_SWEEP_S="3600",  # after the start-up sweep, only the watcher triggers runs
        DORY_JOBS_DAILY_DIGEST="*/2 * * * * *",
        DORY_DIGEST_QUIET_MINUTES="0",
        DORY_DAEMON_CATCH_UP_DAYS="2",
        **more,
    )


def test_transcripts_growing_under_a_running_daemon_are_captured_once_and_digested(
    tmp_path: Path, daemon_factory: Callable[..., DaemonProcess]
) -> None:
    home, root = tmp_path / "home", tmp_path / "corpus"
    claude = home / ".claude/projects/-home-dev-shop" / f"{CLAUDE_ID}.jsonl"
    yesterday = (dt.datetime.now(dt.UTC).date() - dt.timedelta(days=1)).isoformat()
    codex = home / ".codex/sessions" / yesterday.replace("-", "/") / f"rollout-{yesterday}T14-02-11-{CODEX_ID}.jsonl"
    for folder in (claude.parent, codex.parent, root):
        folder.mkdir(parents=True)
    claude_lines, codex_lines = dated("claude-code.jsonl", yesterday), dated("codex.jsonl", yesterday)
    daemon = daemon_factory(root, capture_env(home)).start()

    # Before any session: the start-up sweep found nothing, and yesterday's digest produced nothing.
    wait_until(lambda: any(r["status"] == "ok" for r in runs(daemon, "capture")), what="the first capture sweep")
    wait_until(
        lambda: any(r["period"] == yesterday and r["status"] == "warning" for r in runs(daemon, "daily-digest")),
        what="yesterday's empty digest",
    )
    digest = root / f"digests/daily/{yesterday}.md"
    assert not digest.exists()

    # The sessions begin: each file stops inside a message (a Claude Code response whose tool call is
    # on the next line; a Codex answer whose mirror event is on the next line).
    claude.write_bytes(b"".join(claude_lines[:8]))
    codex.write_bytes(b"".join(codex_lines[:10]))
    wait_until(
        lambda: (
            turns(captured(root, "claude-code")) == expected(claude_lines[:8], "claude-code")
            and turns(captured(root, "codex")) == expected(codex_lines[:10], "codex")
        ),
        what="the first part of both sessions",
    )
    wait_until(lambda: digest.exists() and "discount code" in digest.read_text(), what="the late digest")

    # They go on, past a compaction, the last line first written in two halves.
    tail = b"".join(claude_lines[8:])
    with claude.open("ab") as handle:
        handle.write(tail[:-40])
        handle.flush()
        handle.write(tail[-40:])
    with codex.open("ab") as handle:
        handle.write(b"".join(codex_lines[10:]))
    wait_until(
        lambda: (
            turns(captured(root, "claude-code")) == expected(claude_lines, "claude-code")
            and turns(captured(root, "codex")) == expected(codex_lines, "codex")
        ),
        what="every turn of both sessions",
    )
    wait_until(
        lambda: (
            "expired-code test still fails" in digest.read_text()
            and "add a test for the 503 retry path" in digest.read_text()
        ),
        what="the digest to take in the rest of the day",
    )
    daemon.wait_idle()

    for agent in ("claude-code", "codex"):
        [path] = (root / "logs/sessions" / agent / "laptop").glob("*.md")
        text = path.read_text(encoding="utf-8")
        assert [word for word in BOILERPLATE if word in text] == []
        assert path.name.startswith(yesterday)
    session_ids = {CLAUDE_ID, CODEX_ID}
    assert session_ids <= set(digest.read_text().split("sessions:")[1].split("agents:")[0].split())
    digest_runs = runs(daemon, "daily-digest")
    assert [r["trigger"] for r in digest_runs if r["period"] == yesterday] == ["input changed"]
    assert {r["trigger"] for r in runs(daemon, "capture")} >= {"sweep", "watch"}
    assert daemon.stop() == 0


def test_dory_toml_changes_reach_the_running_daemon(
    tmp_path: Path, daemon_factory: Callable[..., DaemonProcess]
) -> None:
    """`dory capture on` while the daemon runs starts capture at its next heartbeat; a new job
    schedule is used at once; a section that needs a restart is named in the log."""
    home, root = tmp_path / "home", tmp_path / "corpus"
    claude = home / ".claude/projects/-home-dev-shop" / f"{CLAUDE_ID}.jsonl"
    for folder in (claude.parent, root):
        folder.mkdir(parents=True)
    claude.write_bytes((FIXTURES / "claude-code.jsonl").read_bytes())
    (root / "dory.toml").write_text("# my settings\n[digest]\nquiet_minutes = 0  # keep this comment\n")
    env = daemon_env(HOME=str(home), DORY_CAPTURE_DEVICE="laptop", DORY_CAPTURE_DEBOUNCE_MS="100")
    daemon = daemon_factory(root, env).start()
    assert runs(daemon, "capture") == [] and captured(root, "claude-code") is None

    code, status, err = daemon.cli("capture", "on")
    assert code == 0, err
    assert (status["enabled"], status["changed"], status["daemon_running"]) == (True, True, True)
    text = (root / "dory.toml").read_text()
    assert text.startswith("# my settings\n[digest]\nquiet_minutes = 0  # keep this comment\n")
    assert "[capture]\nenabled = true" in text
    whole = expected((FIXTURES / "claude-code.jsonl").read_bytes().splitlines(keepends=True), "claude-code")
    wait_until(lambda: turns(captured(root, "claude-code")) == whole, what="capture to start without a restart")

    with (root / "dory.toml").open("a") as handle:
        handle.write('\n[jobs]\nreconcile = "*/1 * * * * *"\n\n[index]\nchunk_tokens = 100\n')
    wait_until(lambda: any(r["trigger"] == "schedule" for r in runs(daemon, "reconcile")), what="the new schedule")
    wait_until(lambda: "changed [index]: restart the daemon" in daemon.log.read_text(), what="the restart notice")

    code, status, err = daemon.cli("capture", "off")
    assert code == 0 and status["enabled"] is False, err
    assert daemon.stop() == 0
