"""Driving a real `dory serve` process (HTTP + daemon) on 127.0.0.1 with a free port, and calling it."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path
from typing import Any

import httpx

from dory.config import load_settings
from dory.service.daemon_state import daemon_status
from support.daemon import daemon_env
from support.waiting import DEADLINE_S, wait_until


class ServerProcess:
    """`dory serve --port 0` as a child process; `url` is known once the daemon publishes it."""

    def __init__(self, cmd: list[str], root: Path, env: dict[str, str] | None = None) -> None:
        self.cmd = cmd
        self.root = root
        self.env = env or daemon_env()
        self.settings = load_settings(root, env=self.env)
        self.proc: subprocess.Popen[str] | None = None
        self.log = root.parent / f"{root.name}-serve.log"
        self.url = ""

    def start(self, *args: str) -> ServerProcess:
        with self.log.open("a") as handle:
            self.proc = subprocess.Popen(
                [*self.cmd, "--corpus", str(self.root), "serve", "--port", "0", *args],
                env=self.env,
                stdout=subprocess.DEVNULL,
                stderr=handle,
                text=True,
            )
        self.url = wait_until(self._ready, DEADLINE_S, "the server to answer /readyz")
        return self

    def _ready(self) -> str | None:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"dory serve exited with {self.proc.returncode}:\n{self.log.read_text()[-3000:]}")
        status = daemon_status(self.settings)
        if not (status.running and status.pid == self.proc.pid and status.http_url and status.idle):
            return None
        try:
            answer = httpx.get(f"{status.http_url}/readyz", timeout=DEADLINE_S)
        except httpx.TransportError:
            return None
        return status.http_url if answer.status_code == 200 else None

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=DEADLINE_S)

    def stop(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(DEADLINE_S)
        self.proc = None
        return code

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        self.proc = None


def cli(cmd: list[str], root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*cmd, "--corpus", str(root), *args], env=env or daemon_env(), capture_output=True, text=True, timeout=120
    )


def error_code(answer: httpx.Response) -> Any:
    return answer.json()["error"]["code"]
