"""Driving a real `dory ops watch` process over a corpus in a temporary folder, and waiting for it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

from dory.config import load_settings
from dory.index.store import IndexStore
from dory.models import DaemonStatus, ReindexRequest
from dory.service import DoryService
from dory.service.daemon_state import daemon_status
from support.waiting import DEADLINE_S, wait_until  # wait_until is also imported from here

STARTUP_S = DEADLINE_S  # start-up may load the model and embed the corpus on a busy machine


def daemon_env(lexical: bool = True, **settings: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("DORY_")}
    env["DORY_DAEMON_DEBOUNCE_MS"] = "150"
    env["DORY_DAEMON_HEARTBEAT_S"] = "1"
    if lexical:
        env["DORY_EMBEDDER_BACKEND"] = "none"
    env.update(settings)
    return env


class DaemonProcess:
    """`dory ops watch` as a child process, stopped (or killed) by the test."""

    def __init__(self, cmd: list[str], root: Path, env: dict[str, str]) -> None:
        self.cmd = cmd
        self.root = root
        self.env = env
        self.settings = load_settings(root, env=env)
        self.proc: subprocess.Popen[str] | None = None
        self.log = root.parent / f"{root.name}-daemon.log"

    def start(self, wait: bool = True) -> DaemonProcess:
        handle = self.log.open("a")
        self.proc = subprocess.Popen(
            [*self.cmd, "--corpus", str(self.root), "ops", "watch"],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=handle,
            text=True,
        )
        handle.close()
        if wait:
            self.wait_idle(STARTUP_S)
        return self

    def status(self) -> DaemonStatus:
        return daemon_status(self.settings)

    def wait_idle(self, timeout_s: float = DEADLINE_S) -> DaemonStatus:
        """Until the daemon says it has nothing queued, written or embedded (and is the live one)."""

        def settled() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"daemon exited with {self.proc.returncode}:\n{self.log.read_text()[-3000:]}")
            st = self.status()
            return st.running and st.pid == self.proc.pid and st.idle

        wait_until(settled, timeout_s, "the daemon to go idle")
        return self.status()

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = DEADLINE_S) -> int:
        assert self.proc is not None
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout_s)
        self.proc = None
        return code

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(30)
        self.proc = None

    def cli(self, *args: str) -> tuple[int, Any, str]:
        """Run `dory --corpus ROOT ARGS --json` and parse stdout."""
        run = subprocess.run(
            [*self.cmd, "--corpus", str(self.root), *args, "--json"],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return run.returncode, json.loads(run.stdout) if run.stdout.strip() else None, run.stderr


def indexed(settings_root: Path, env: dict[str, str]) -> dict[str, str]:
    """{path: sha256} as the daemon's index has it, read with a read-only connection."""
    settings = load_settings(settings_root, env=env)
    if not settings.db_path.exists():
        return {}
    store = IndexStore(settings.db_path, settings.index.tokenizer, readonly=True)
    try:
        return {row[0]: row[1] for row in store.conn.execute("SELECT path, sha256 FROM files")}
    finally:
        store.close()


def chunk_rows(settings_root: Path, env: dict[str, str], state_dir: Path | None = None) -> list[tuple[Any, ...]]:
    settings = load_settings(settings_root, {"state_dir": str(state_dir) if state_dir else None}, env=env)
    store = IndexStore(settings.db_path, settings.index.tokenizer, readonly=True)
    try:
        return sorted(
            tuple(row)
            for row in store.conn.execute(
                "SELECT f.path, f.sha256, c.ordinal, c.start_line, c.end_line, c.content_hash "
                "FROM chunks c JOIN files f ON f.id = c.file_id"
            )
        )
    finally:
        store.close()


def fresh_reindex(root: Path, env: dict[str, str], state_dir: Path) -> dict[str, str]:
    """What a full reindex from scratch (lexical) makes of the corpus now: {path: sha256}."""
    settings = load_settings(root, {"state_dir": str(state_dir), "embedder.backend": "none"}, env=env)
    svc = DoryService(settings)
    try:
        svc.reindex(ReindexRequest(full=True, vectors=False))
        return {row[0]: row[1] for row in svc.store.conn.execute("SELECT path, sha256 FROM files")}
    finally:
        svc.close()
