"""Shared fixtures: small corpora built in temporary folders, settings isolated from the environment."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# Shared test helpers live in tests/support (importable as `support.*`).
sys.path.insert(0, str(Path(__file__).parent))

from support.daemon import DaemonProcess, daemon_env
from support.fake_llm import FakeLlm

from dory.config import Settings, load_settings
from dory.index.embedders.model_files import model_status
from dory.service import DoryService


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `model` need the MiniLM weights. Locally they skip without them; on CI
    (CI=true) a missing model is a failure, so the suite cannot pass while silently skipping them."""
    if model_status()["verified"]:
        return
    needs_model = [item for item in items if "model" in item.keywords]
    if needs_model and os.environ.get("CI") == "true":
        raise pytest.UsageError("the MiniLM model is not installed on CI; run `dory models install` first")
    for item in needs_model:
        item.add_marker(pytest.mark.skip(reason="MiniLM model not installed (dory models install)"))


# Where Dory keeps its user config (corpora.toml), and where added corpora keep state and output.
USER_FOLDERS = ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME")


@pytest.fixture(autouse=True)
def private_user_folders(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's own user config, state and data folders (inherited by every `dory` it runs): no
    test reads the developer's corpora.toml, whose default corpus would answer where a test expects
    none, nor what another test added there."""
    base = tmp_path_factory.mktemp("user")
    for name in USER_FOLDERS:
        monkeypatch.setenv(name, str(base / name.lower()))


def dory_command() -> list[str]:
    """The installed console script next to this interpreter, else on PATH, else its entry point."""
    beside = Path(sys.executable).with_name("dory")
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("dory")
    if found:
        return [found]
    return [sys.executable, "-c", "from dory.surfaces.cli import main; main()"]


@pytest.fixture(scope="session")
def dory_cmd() -> list[str]:
    """How to run the real `dory` command line in a subprocess."""
    return dory_command()


WriteCorpus = Callable[[dict[str, str | bytes]], Path]


def write_files(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write {relative path: text or bytes} under root and return root."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


@pytest.fixture
def make_corpus(tmp_path: Path) -> Callable[..., Path]:
    """make_corpus(files, name="corpus") writes the files under tmp_path/name and returns that folder."""

    def make(files: dict[str, str | bytes], name: str = "corpus") -> Path:
        root = tmp_path / name
        root.mkdir(exist_ok=True)
        return write_files(root, files)

    return make


@pytest.fixture
def write_corpus(make_corpus: Callable[..., Path]) -> WriteCorpus:
    """Write {relative path: text or bytes} under tmp_path/corpus and return the corpus root."""
    return make_corpus


def make_settings(root: Path, **overrides: Any) -> Settings:
    return load_settings(root, overrides, env={})


@pytest.fixture
def lexical_service(write_corpus: WriteCorpus) -> Callable[[dict[str, str | bytes]], DoryService]:
    """A service over a fresh corpus with vectors disabled (fast; no model needed)."""
    services: list[DoryService] = []

    def build(files: dict[str, str | bytes]) -> DoryService:
        root = write_corpus(files)
        svc = DoryService(make_settings(root, **{"embedder.backend": "none"}))
        services.append(svc)
        return svc

    yield build  # type: ignore[misc]
    for svc in services:
        svc.close()


@pytest.fixture
def daemon_factory(dory_cmd: list[str]) -> Iterator[Callable[..., DaemonProcess]]:
    """Real `dory ops watch` processes, killed if a test leaves them running."""
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


@pytest.fixture
def llm() -> Iterator[FakeLlm]:
    """A fake OpenAI-compatible LLM server on 127.0.0.1 (tests/support/fake_llm.py), stopped after the test."""
    with FakeLlm() as server:
        yield server
