"""Fixtures for the daemon tests: real `dory ops watch` processes, killed if a test leaves them running."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.daemon import DaemonProcess, daemon_env


@pytest.fixture
def daemon_factory(dory_cmd: list[str]) -> Iterator[Callable[..., DaemonProcess]]:
    started: list[DaemonProcess] = []

    def make(root: Path, env: dict[str, str] | None = None) -> DaemonProcess:
        daemon = DaemonProcess(dory_cmd, root, env or daemon_env())
        started.append(daemon)
        return daemon

    yield make
    for daemon in started:
        if daemon.proc is not None and daemon.proc.poll() is None:
            daemon.proc.kill()
            daemon.proc.wait(30)
