"""Helpers for driving the real `dory` console script in a subprocess.

Every run gets an environment with no DORY_* variable inherited from the developer's shell, a
private cache folder for the model verification stamp, and (unless a test asks otherwise)
`DORY_EMBEDDER_BACKEND=none` so no model is loaded.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


@dataclass
class Run:
    args: tuple[str, ...]
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        """stdout parsed as exactly one JSON document (json.loads refuses trailing data)."""
        try:
            return json.loads(self.stdout)
        except json.JSONDecodeError as exc:
            raise AssertionError(
                f"stdout of dory {' '.join(self.args)} is not one JSON document: {exc}\n"
                f"stdout={self.stdout!r}\nstderr={self.stderr[-2000:]!r}"
            ) from exc

    def error(self) -> dict[str, Any]:
        body = self.json()
        assert set(body) == {"error"}, body
        return body["error"]

    def __str__(self) -> str:
        return (
            f"dory {' '.join(self.args)} -> exit {self.code}\n"
            f"stdout: {self.stdout[-1500:]}\nstderr: {self.stderr[-1500:]}"
        )


RunDory = Callable[..., Run]


def clean_env(cache_dir: Path, backend: str | None = "none", **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DORY_") and k != "PYTHONDONTWRITEBYTECODE"}
    env["DORY_CACHE_DIR"] = str(cache_dir / "dory")
    # Bytecode goes to a private folder (never into the package): later runs skip recompiling dory.
    env["PYTHONPYCACHEPREFIX"] = str(cache_dir / "pycache")
    if backend is not None:
        env["DORY_EMBEDDER_BACKEND"] = backend
    env.update(extra)
    return env


@pytest.fixture(scope="session")
def dory_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("dory-cli-cache")


@pytest.fixture(scope="session")
def dory(dory_cache_dir: Path, tmp_path_factory: pytest.TempPathFactory, dory_cmd: list[str]) -> RunDory:
    """run(*args, cwd=None, backend="none", env=None, timeout=120) -> Run"""
    default_cwd = tmp_path_factory.mktemp("cli-cwd")

    def run(
        *args: str,
        cwd: Path | None = None,
        backend: str | None = "none",
        env: dict[str, str] | None = None,
        timeout: float = 120,
        **popen: Any,
    ) -> Run:
        full_env = clean_env(dory_cache_dir, backend, **(env or {}))
        if "stdout" not in popen and "stderr" not in popen:
            popen["capture_output"] = True
        proc = subprocess.run(
            [*dory_cmd, *args], cwd=cwd or default_cwd, env=full_env, text=True, timeout=timeout, **popen
        )
        return Run(tuple(args), proc.returncode, proc.stdout or "", proc.stderr or "")

    return run


def digest_tree(root: Path, skip_state: bool = True) -> dict[str, str]:
    """sha256 of every file under root (the .dory state folder left out)."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not (skip_state and ".dory" in p.relative_to(root).parts)
    }


@pytest.fixture(scope="session")
def tree_digest() -> Callable[..., dict[str, str]]:
    return digest_tree
