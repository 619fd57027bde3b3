"""Several machines, one memory: a laptop's daemon ships what it captures to a home `dory serve`.
While the server is down the pieces wait in the laptop's spool (transcripts keep growing meanwhile);
once it is back the spool drains, and the server's session plane holds every turn exactly once.
Nothing is written into the laptop's own corpus."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from pathlib import Path

from support.daemon import DaemonProcess, daemon_env, wait_until
from support.server import ServerProcess, cli

from dory.config import load_settings
from dory.models import SessionIngestRequest
from dory.service.capture import capture_status
from dory.sessions.capture_ledger import CaptureLedger
from dory.sessions.importers import parse_source
from dory.sessions.shipping import Spool, drain
from dory.sessions.transcript import parse_session, render_session

FIXTURES = Path(__file__).parents[1] / "sessions" / "fixtures" / "capture"
CLAUDE_ID = "7c1e2d3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_sessions_wait_in_the_spool_while_the_server_is_down_and_arrive_once(
    tmp_path: Path, dory_cmd: list[str], daemon_factory: Callable[..., DaemonProcess]
) -> None:
    home, laptop_root, server_root = tmp_path / "home", tmp_path / "laptop", tmp_path / "server"
    transcript = home / ".claude/projects/-home-dev-shop" / f"{CLAUDE_ID}.jsonl"
    for folder in (transcript.parent, laptop_root, server_root):
        folder.mkdir(parents=True)
    server_env = daemon_env()
    made = cli(dory_cmd, server_root, "auth", "new", "laptop", "--scope", "sessions", "--json", env=server_env)
    token = json.loads(made.stdout)["token"]
    port = free_port()
    server = ServerProcess(dory_cmd, server_root, server_env)
    url = f"http://127.0.0.1:{port}"

    env = daemon_env(
        HOME=str(home),
        DORY_CAPTURE_ENABLED="true",
        DORY_CAPTURE_DEVICE="laptop",
        DORY_CAPTURE_DEBOUNCE_MS="100",
        DORY_CAPTURE_SWEEP_S="0.5",  # the sweep is also what retries the server
        DORY_CAPTURE_RETRY_MAX_S="1",
        DORY_CAPTURE_SERVER=url,
        DORY_CAPTURE_TOKEN=token,
    )
    laptop = daemon_factory(laptop_root, env).start()
    settings = load_settings(laptop_root, env=env)
    lines = (FIXTURES / "claude-code.jsonl").read_bytes().splitlines(keepends=True)

    # The server is down: the first part of the session is spooled, and the laptop says why.
    transcript.write_bytes(b"".join(lines[:12]))
    first = wait_until(
        lambda: (st := capture_status(settings)).spool_pending and st.shipping_error and st, what="a spooled piece"
    )
    assert "cannot reach" in (first.shipping_error or "")
    with transcript.open("ab") as handle:  # the session goes on meanwhile
        handle.write(b"".join(lines[12:]))
    wait_until(lambda: capture_status(settings).spool_pending > first.spool_pending, what="the second piece")

    # The server comes back (on the same address): the spool drains.
    server.start("--port", str(port))

    def drained() -> bool:
        status = capture_status(settings)
        return status.spool_pending == 0 and status.shipping_error is None

    wait_until(drained, what="the spool to drain")
    assert capture_status(settings).spool_refused == 0

    [path] = (server_root / "logs/sessions/claude-code/laptop").glob("*.md")
    shipped = parse_session(path.relative_to(server_root).as_posix(), path.read_bytes())
    [whole] = parse_source(b"".join(lines), "claude-code", None, None, "laptop").sessions
    assert [(m.id, m.text) for m in shipped.messages] == [(m.id, m.text) for m in whole.messages]
    assert shipped.agent == "claude-code"  # not the token's name: the transcript says who spoke
    assert not (laptop_root / "logs/sessions").exists()

    # More lines later: shipped at once, still each turn once.
    extra = {
        "parentUuid": None,
        "isSidechain": False,
        "type": "user",
        "sessionId": CLAUDE_ID,
        "timestamp": "2026-11-20T10:30:00.000Z",
        "message": {"role": "user", "content": "Ship it after lunch"},
    }
    with transcript.open("ab") as handle:
        handle.write(json.dumps(extra).encode() + b"\n")

    def arrived() -> bool:
        session = parse_session(path.relative_to(server_root).as_posix(), path.read_bytes())
        return session.messages[-1].text == "Ship it after lunch"

    wait_until(arrived, what="the new turn on the server")
    final = parse_session(path.relative_to(server_root).as_posix(), path.read_bytes())
    assert len({m.id for m in final.messages}) == len(final.messages) == len(whole.messages) + 1
    assert laptop.stop() == 0
    assert server.stop() == 0


def test_a_piece_the_server_refuses_is_set_aside_and_the_rest_go_on(tmp_path: Path, dory_cmd: list[str]) -> None:
    server_root = tmp_path / "server"
    server_root.mkdir()
    server = ServerProcess(dory_cmd, server_root).start()
    spool = Spool(tmp_path / "spool")
    spool.folder.mkdir()
    (spool.folder / "00000000000000000001-000000.json").write_text('{"content": "x", "format": "yaml"}')
    good = parse_source((FIXTURES / "claude-code.jsonl").read_bytes(), "claude-code", None, None, "laptop")
    spool.put(
        SessionIngestRequest(content=render_session(good.sessions[0]).decode(), format="markdown", device="laptop")
    )
    ledger = CaptureLedger(tmp_path / "capture.sqlite")
    try:
        report = drain(spool, ledger, server.url, None, retry_max_s=1)
    finally:
        ledger.close()
        server.stop()
    assert (report.sent, report.refused, report.pending, report.error) == (1, 1, 0, None)
    assert spool.dead() == 1
    [reason] = (spool.folder / "dead").glob("*.error.txt")
    assert reason.read_text().startswith("HTTP 400") and "usage_error" in reason.read_text()
    assert len(list((server_root / "logs/sessions/claude-code/laptop").glob("*.md"))) == 1
