"""The CLI as a client of a real `dory serve` (--server/--token, DORY_URL/DORY_TOKEN): the same JSON
answers as the local CLI, the same error codes and exit codes, and no corpus needed on the client."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.daemon import daemon_env
from support.server import ServerProcess, cli


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, dory_cmd: list[str]) -> Iterator[tuple[ServerProcess, str]]:
    root = tmp_path_factory.mktemp("client") / "corpus"
    (root / "notes").mkdir(parents=True)
    (root / "notes/alpha.md").write_text("# Alpha\n\nthe quokka lives on an island\n", encoding="utf-8")
    made = cli(dory_cmd, root, "auth", "new", "laptop", "--scope", "write", "--json")
    assert made.returncode == 0, made.stderr
    running = ServerProcess(dory_cmd, root).start()
    yield running, json.loads(made.stdout)["token"]
    assert running.stop() == 0


def client(dory_cmd: list[str], cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`dory ARGS --json` from a folder that is no corpus, so nothing local could answer."""
    return subprocess.run([*dory_cmd, *args, "--json"], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_search_get_and_write_through_the_server_answer_like_the_local_cli(
    server: tuple[ServerProcess, str], dory_cmd: list[str], tmp_path: Path
) -> None:
    running, token = server
    env = daemon_env(DORY_URL=running.url, DORY_TOKEN=token)
    found = client(dory_cmd, tmp_path, env, "search", "quokka", "--mode", "bm25")
    assert found.returncode == 0, found.stderr
    assert [hit["path"] for hit in json.loads(found.stdout)["hits"]] == ["notes/alpha.md"]
    active = client(dory_cmd, tmp_path, env, "active-memory", "where does the quokka live?", "--deadline-ms", "10000")
    assert active.returncode == 0, active.stderr
    assert [e["path"] for e in json.loads(active.stdout)["evidence"]] == ["notes/alpha.md"]
    wrote = client(dory_cmd, tmp_path, env, "write", "notes/from-client.md", "--content", "# C\n\nplatypus\n")
    assert wrote.returncode == 0, wrote.stderr
    assert (running.root / "notes/from-client.md").read_text(encoding="utf-8").endswith("# C\n\nplatypus\n")
    got = client(dory_cmd, tmp_path, env, "get", "notes/from-client.md")
    assert json.loads(got.stdout)["hash"] == json.loads(wrote.stdout)["hash"]


def test_research_through_the_server_reads_and_saves(
    server: tuple[ServerProcess, str], dory_cmd: list[str], tmp_path: Path
) -> None:
    running, token = server
    env = daemon_env(DORY_URL=running.url, DORY_TOKEN=token)
    answered = client(dory_cmd, tmp_path, env, "research", "where is the quokka?", "-m", "bm25")
    assert answered.returncode == 0, answered.stderr
    assert json.loads(answered.stdout)["answer"] == "the quokka lives on an island [notes/alpha.md:3-3]"
    saved = client(dory_cmd, tmp_path, env, "research", "where is the quokka?", "-m", "bm25", "--save")
    assert saved.returncode == 0, saved.stderr
    assert (running.root / json.loads(saved.stdout)["saved"]).is_file()


def test_errors_through_the_server_keep_their_codes_and_exit_codes(
    server: tuple[ServerProcess, str], dory_cmd: list[str], tmp_path: Path
) -> None:
    running, token = server
    flags = ["--server", running.url, "--token", token]
    missing = client(dory_cmd, tmp_path, daemon_env(), *flags, "get", "notes/none.md")
    assert missing.returncode == 3 and json.loads(missing.stdout)["error"]["code"] == "not_found"
    refused = client(dory_cmd, tmp_path, daemon_env(), "--server", running.url, "--token", "dory_0_bad", "status")
    assert refused.returncode == 9 and json.loads(refused.stdout)["error"]["code"] == "unauthorized"
    forbidden = client(dory_cmd, tmp_path, daemon_env(), *flags, "reindex")
    assert forbidden.returncode == 9 and json.loads(forbidden.stdout)["error"]["code"] == "forbidden"
    local_only = client(dory_cmd, tmp_path, daemon_env(), *flags, "sessions", "import-local")
    assert local_only.returncode == 2 and json.loads(local_only.stdout)["error"]["code"] == "usage_error"


def test_a_server_that_is_not_there_is_backend_unavailable(dory_cmd: list[str], tmp_path: Path) -> None:
    gone = client(dory_cmd, tmp_path, daemon_env(), "--server", "http://127.0.0.1:9", "search", "x")
    assert gone.returncode == 5 and json.loads(gone.stdout)["error"]["code"] == "backend_unavailable"
