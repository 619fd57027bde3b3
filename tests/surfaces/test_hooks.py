"""The Claude Code hooks `dory connect` installs, fed real-format hook events on stdin:
`dory wake --hook` (SessionStart), `dory sessions hook ingest` (Stop, SessionEnd) and
`dory sessions hook precompact` (PreCompact), in-process, through a running daemon and through a
running server; and failing open (exit 0, a reason on stderr, nothing on stdout) whenever Dory
cannot answer. `wake --hook` runs through both entry points: the light launcher that pyproject
installs as `dory`, and the full CLI."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.daemon import DaemonProcess, daemon_env
from support.server import ServerProcess

from dory.surfaces.hooks.profile import choose
from dory.surfaces.launch import wake_hook_options

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "sessions" / "fixtures" / "5b6f9a1e-2c3d-4e5f-8a9b-0c1d2e3f4a5b.jsonl"
LAUNCHER = [sys.executable, "-c", "from dory.surfaces.launch import main; main()"]
CORE = {
    "core/active.md": "# Active focus\n\nShipping the login fix for acme this week.\n",
    "core/env.md": "# Environment\n\nDebian 13, Python 3.11, zsh.\n",
    "core/defaults.md": "# Defaults\n\nAsk before deleting files.\n",
    # The entity `user` that preferences are proposed to (once the corpus is indexed).
    "core/user.md": "---\ntitle: User\ntype: core\ncanonical: true\n---\n# User\n\nDana, a developer in Lisbon.\n",
    "projects/acme/state.md": "# Acme\n\nThe login redirect bug is the top priority.\n",
}


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    for rel, text in CORE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A code repository named acme, where the agent works."""
    (tmp_path / "acme" / ".git").mkdir(parents=True)
    (tmp_path / "acme" / "src").mkdir()
    return tmp_path / "acme"


Hook = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(params=["launcher", "cli"])
def entry(request: pytest.FixtureRequest, dory_cmd: list[str]) -> list[str]:
    return LAUNCHER if request.param == "launcher" else dory_cmd


def run_hook(command: list[str], *args: str, event: dict[str, Any] | str | None, **env: str) -> Any:
    """One hook process, as Claude Code runs it: the event on stdin, from the project folder."""
    stdin = event if isinstance(event, str) else json.dumps(event) if event is not None else ""
    return subprocess.run(
        [*command, *args], input=stdin, env=daemon_env(**env), capture_output=True, text=True, timeout=120
    )


def session_start(cwd: Path) -> dict[str, Any]:
    return {
        "session_id": "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
        "transcript_path": str(cwd / "0199a1b2.jsonl"),
        "cwd": str(cwd),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }


def context_of(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0 and done.stderr == "", (done.returncode, done.stderr)
    output = json.loads(done.stdout)
    assert list(output) == ["hookSpecificOutput"]
    assert output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    block: str = output["hookSpecificOutput"]["additionalContext"]
    return block


def wake_block(dory_cmd: list[str], corpus: Path, *args: str) -> str:
    done = run_hook(dory_cmd, "--corpus", str(corpus), "wake", *args, "--json", event=None)
    assert done.returncode == 0, done.stderr
    block: str = json.loads(done.stdout)["block"]
    return block


def assert_skipped(done: subprocess.CompletedProcess[str], name: str, code: str, words: str = "") -> None:
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert done.stderr.startswith(f"dory {name} hook skipped ({code}: "), done.stderr
    assert words in done.stderr and done.stderr.endswith("the session goes on without it\n")


# -- wake --hook ---------------------------------------------------------------------------------
def test_wake_hook_in_a_code_repository_uses_the_coding_profile_and_the_project(
    entry: list[str], dory_cmd: list[str], corpus: Path, repo: Path
) -> None:
    done = run_hook(entry, "--corpus", str(corpus), "wake", "--hook", event=session_start(repo / "src"))

    block = context_of(done)
    assert block == wake_block(dory_cmd, corpus, "--profile", "coding", "--project", "acme")
    assert "Shipping the login fix" in block and "The login redirect bug" in block
    assert "Dana" not in block  # core/user.md is not in the coding profile


def test_wake_hook_elsewhere_uses_the_default_profile(
    entry: list[str], dory_cmd: list[str], corpus: Path, tmp_path: Path
) -> None:
    (tmp_path / "letters").mkdir()
    done = run_hook(entry, "--corpus", str(corpus), "wake", "--hook", event=session_start(tmp_path / "letters"))

    block = context_of(done)
    assert block == wake_block(dory_cmd, corpus, "--profile", "default")
    assert "Dana" in block


def test_wake_hook_takes_an_explicit_profile_and_a_character_cap(
    entry: list[str], dory_cmd: list[str], corpus: Path, repo: Path
) -> None:
    args = ("--profile", "casual", "--max-chars", "600")
    done = run_hook(entry, "--corpus", str(corpus), "wake", "--hook", *args, event=session_start(repo))

    block = context_of(done)
    assert block == wake_block(dory_cmd, corpus, *args) and len(block) <= 600


def test_wake_hook_answers_from_a_running_daemon_without_loading_pydantic_or_numpy(
    dory_cmd: list[str], corpus: Path, repo: Path, daemon_factory: Callable[..., DaemonProcess]
) -> None:
    expected = wake_block(dory_cmd, corpus, "--profile", "coding", "--project", "acme")
    daemon_factory(corpus).start()
    importtime = [sys.executable, "-X", "importtime", *LAUNCHER[1:]]

    done = run_hook(importtime, "--corpus", str(corpus), "wake", "--hook", event=session_start(repo))

    assert done.returncode == 0
    output = json.loads(done.stdout)
    assert output["hookSpecificOutput"]["additionalContext"] == expected
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "dory.surfaces.hooks.wake" in imported
    assert not {"pydantic", "numpy", "click", "dory.service", "dory.models"} & imported


@pytest.fixture
def server(tmp_path: Path, corpus: Path, dory_cmd: list[str]) -> Iterator[ServerProcess]:
    running = ServerProcess(dory_cmd, corpus).start()
    yield running
    running.stop()


def test_wake_hook_uses_the_server_named_by_dory_url(
    entry: list[str], dory_cmd: list[str], corpus: Path, repo: Path, server: ServerProcess
) -> None:
    expected = wake_block(dory_cmd, corpus, "--profile", "coding", "--project", "acme")

    done = run_hook(entry, "wake", "--hook", event=session_start(repo), DORY_URL=server.url)

    assert context_of(done) == expected


# -- failing open --------------------------------------------------------------------------------
def test_wake_hook_without_a_corpus_fails_open(entry: list[str], tmp_path: Path, repo: Path) -> None:
    done = run_hook(entry, "--corpus", str(tmp_path / "gone"), "wake", "--hook", event=session_start(repo))
    assert_skipped(done, "wake", "corpus_not_found", str(tmp_path / "gone"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_wake_hook_with_an_unreachable_server_fails_open(entry: list[str], repo: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    done = run_hook(entry, "wake", "--hook", event=session_start(repo), DORY_URL=url)
    assert_skipped(done, "wake", "backend_unavailable", f"cannot reach the Dory server at {url}")


def test_wake_hook_with_a_server_that_never_answers_fails_open(entry: list[str], repo: Path) -> None:
    with socket.socket() as listener:  # accepts connections (the backlog) and never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        done = run_hook(entry, "wake", "--hook", "--deadline", "4", event=session_start(repo), DORY_URL=url)
    # Which gives up first, the network wait or the hook's own deadline, depends on how busy the
    # machine is; either way the hook must fail open.
    code = "deadline_exceeded" if "(deadline_exceeded:" in done.stderr else "backend_unavailable"
    assert_skipped(done, "wake", code)


def test_a_hook_whose_event_never_ends_gives_up_at_its_deadline(corpus: Path) -> None:
    with subprocess.Popen(
        [*LAUNCHER, "--corpus", str(corpus), "wake", "--hook", "--deadline", "1"],
        stdin=subprocess.PIPE,  # left open: the event never finishes arriving
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=daemon_env(),
        text=True,
    ) as proc:
        assert proc.stdin is not None
        proc.stdin.write('{"session_id": "s", ')
        proc.stdin.flush()
        out, err = proc.stdout.read() if proc.stdout else "", proc.stderr.read() if proc.stderr else ""
        assert proc.wait(60) == 0
    assert out == ""
    assert err.startswith("dory wake hook skipped (deadline_exceeded: no answer within 1 s)"), err


@pytest.mark.parametrize(
    ("stdin", "words"),
    [("not json", "the hook event on stdin is not JSON"), ("[1, 2]", "the hook event on stdin is not a JSON object")],
)
def test_a_broken_event_fails_open(entry: list[str], corpus: Path, stdin: str, words: str) -> None:
    done = run_hook(entry, "--corpus", str(corpus), "wake", "--hook", event=stdin)
    assert_skipped(done, "wake", "usage_error", words)


def test_a_bad_option_value_in_the_hook_command_still_exits_zero(entry: list[str], corpus: Path, repo: Path) -> None:
    done = run_hook(entry, "--corpus", str(corpus), "wake", "--hook", "--budget", "5", event=session_start(repo))
    assert_skipped(done, "wake", "usage_error", "budget: Input should be greater than or equal to 50")


# -- sessions hook ingest / precompact ------------------------------------------------------------
def claude_line(number: int, role: str, content: Any, **extra: Any) -> str:
    record = {
        "parentUuid": f"u-{number - 1:04d}" if number > 1 else None,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/dev/acme",
        "sessionId": "7c1d2e3f-aaaa-4bbb-8ccc-0d1e2f3a4b5c",
        "version": "2.0.14",
        "gitBranch": "main",
        "type": role,
        "message": {"role": role, "content": content},
        "uuid": f"u-{number:04d}",
        "timestamp": f"2026-11-25T09:{number:02d}:00.000Z",
        **extra,
    }
    return json.dumps(record) + "\n"


TRANSCRIPT = [
    claude_line(1, "user", "Set up the release checklist for acme."),
    claude_line(2, "assistant", [{"type": "text", "text": "I will draft it in docs/release.md."}]),
    claude_line(
        3, "user", "Caveat: The messages below were generated by the user while running local commands.", isMeta=True
    ),
    claude_line(4, "user", "I prefer squash merges for every release branch."),
    claude_line(5, "assistant", [{"type": "text", "text": "Noted: squash merges for release branches."}]),
]


def stop_event(transcript: Path, name: str = "Stop") -> dict[str, Any]:
    return {
        "session_id": "7c1d2e3f-aaaa-4bbb-8ccc-0d1e2f3a4b5c",
        "transcript_path": str(transcript),
        "cwd": "/home/dev/acme",
        "hook_event_name": name,
        "stop_hook_active": False,
    }


def sessions(dory_cmd: list[str], corpus: Path) -> list[dict[str, Any]]:
    done = run_hook(dory_cmd, "--corpus", str(corpus), "sessions", "list", "--json", event=None)
    assert done.returncode == 0, done.stderr
    found: list[dict[str, Any]] = json.loads(done.stdout)["sessions"]
    return found


def test_ingest_hook_imports_a_real_transcript_then_only_new_turns(
    dory_cmd: list[str], corpus: Path, tmp_path: Path
) -> None:
    transcript = tmp_path / "5b6f9a1e-2c3d-4e5f-8a9b-0c1d2e3f4a5b.jsonl"
    shutil.copy(FIXTURE, transcript)
    hook = (*dory_cmd, "--corpus", str(corpus), "sessions", "hook", "ingest")

    first = run_hook(list(hook), event=stop_event(transcript))
    assert first.returncode == 0 and first.stdout == ""
    assert first.stderr == "dory ingest hook: session 5b6f9a1e-2c3d-4e5f-8a9b-0c1d2e3f4a5b: created, 9 new turn(s)\n"
    [listed] = sessions(dory_cmd, corpus)
    assert listed["agent"] == "claude-code" and listed["messages"] == 9

    again = run_hook(list(hook), event=stop_event(transcript, "SessionEnd"))
    assert again.stderr.endswith(": unchanged, 0 new turn(s)\n")

    with transcript.open("a", encoding="utf-8") as handle:  # Claude Code finishes the line it was writing
        handle.write(
            ' "cwd": "/home/dev/acme", "sessionId": "5b6f9a1e-2c3d-4e5f-8a9b-0c1d2e3f4a5b", "type": "user", '
            '"message": {"role": "user", "content": "One more thing: run the linter."}, "uuid": "u-0014", '
            '"timestamp": "2026-11-20T10:04:00.000Z"}\n'
        )
    grown = run_hook(list(hook), event=stop_event(transcript))
    assert grown.stderr.endswith(": appended, 1 new turn(s)\n")
    assert sessions(dory_cmd, corpus)[0]["messages"] == 10


def test_precompact_hook_ingests_and_proposes_durable_facts_once(
    dory_cmd: list[str], corpus: Path, tmp_path: Path
) -> None:
    assert run_hook(dory_cmd, "--corpus", str(corpus), "reindex", "--no-vectors", event=None).returncode == 0
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("".join(TRANSCRIPT), encoding="utf-8")
    event = {**stop_event(transcript, "PreCompact"), "trigger": "auto", "custom_instructions": ""}
    hook = [*dory_cmd, "--corpus", str(corpus), "sessions", "hook", "precompact"]

    first = run_hook(hook, event=event)
    assert first.returncode == 0 and first.stdout == ""
    assert first.stderr == (
        "dory precompact hook: session 7c1d2e3f-aaaa-4bbb-8ccc-0d1e2f3a4b5c: created, 4 new turn(s); "
        "1 fact(s) proposed, 0 already\n"
    )
    listed = run_hook(dory_cmd, "--corpus", str(corpus), "proposals", "list", "--json", event=None)
    [proposal] = json.loads(listed.stdout)["proposals"]
    assert "squash merges" in json.dumps(proposal)

    again = run_hook(hook, event=event)
    assert again.stderr.endswith(": unchanged, 0 new turn(s); 0 fact(s) proposed, 1 already\n")


def test_capture_hooks_through_a_server(
    dory_cmd: list[str], corpus: Path, tmp_path: Path, server: ServerProcess
) -> None:
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("".join(TRANSCRIPT), encoding="utf-8")
    event = {**stop_event(transcript, "PreCompact"), "trigger": "manual"}

    done = run_hook(dory_cmd, "sessions", "hook", "precompact", event=event, DORY_URL=server.url)

    assert done.returncode == 0 and done.stderr.endswith("created, 4 new turn(s); 1 fact(s) proposed, 0 already\n")
    assert [s["session_id"] for s in sessions(dory_cmd, corpus)] == ["7c1d2e3f-aaaa-4bbb-8ccc-0d1e2f3a4b5c"]


@pytest.mark.parametrize("kind", ["ingest", "precompact"])
def test_capture_hooks_fail_open(dory_cmd: list[str], corpus: Path, tmp_path: Path, kind: str) -> None:
    hook = [*dory_cmd, "--corpus", str(corpus), "sessions", "hook", kind]
    missing = tmp_path / "deleted.jsonl"

    assert_skipped(run_hook(hook, event=stop_event(missing)), kind, "not_found", f"transcript {missing} does not exist")
    assert_skipped(run_hook(hook, event={"session_id": "x"}), kind, "usage_error", "names no transcript_path")
    (tmp_path / "folder.jsonl").mkdir()
    assert_skipped(run_hook(hook, event=stop_event(tmp_path / "folder.jsonl")), kind, "unreadable_file")

    transcript = tmp_path / "session.jsonl"
    transcript.write_text("".join(TRANSCRIPT), encoding="utf-8")
    no_corpus = [*dory_cmd, "--corpus", str(tmp_path / "gone"), "sessions", "hook", kind]
    assert_skipped(run_hook(no_corpus, event=stop_event(transcript)), kind, "corpus_not_found")
    url = f"http://127.0.0.1:{free_port()}"
    unreachable = run_hook([*dory_cmd, "sessions", "hook", kind], event=stop_event(transcript), DORY_URL=url)
    assert_skipped(unreachable, kind, "backend_unavailable", url)
    assert sessions(dory_cmd, corpus) == []


# -- the pieces ----------------------------------------------------------------------------------
def test_the_installed_dory_is_the_launcher() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["scripts"]["dory"] == "dory.surfaces.launch:main"


@pytest.mark.parametrize(
    ("argv", "parsed"),
    [
        (["wake", "--hook"], ({}, {})),
        (["--corpus", "/c", "wake", "--hook"], ({"corpus": "/c"}, {})),
        (
            ["--corpus=/c", "--server", "http://h", "wake", "--profile", "coding", "--hook", "--deadline=2"],
            ({"corpus": "/c", "server": "http://h"}, {"profile": "coding", "deadline_s": "2"}),
        ),
        (["wake"], None),  # not a hook: the CLI prints the block
        (["wake", "--hook", "--json"], None),  # an option the launcher leaves to the CLI
        (["--corpus", "wake", "--hook"], None),
        (["search", "wake", "--hook"], None),
        (["sessions", "hook", "ingest"], None),
        (["wake", "--hook", "--profile"], None),
    ],
)
def test_the_launcher_answers_only_a_wake_hook_command_line(
    argv: list[str], parsed: tuple[dict[str, str], dict[str, str]] | None
) -> None:
    assert wake_hook_options(argv) == parsed


def test_the_profile_follows_the_folder(tmp_path: Path, repo: Path) -> None:
    assert choose(str(repo / "src")) == ("coding", "acme")
    (tmp_path / "rusty").mkdir()
    (tmp_path / "rusty" / "Cargo.toml").write_text("[package]\n", encoding="utf-8")
    assert choose(str(tmp_path / "rusty")) == ("coding", "rusty")
    assert choose(str(tmp_path)) == ("default", None)
    assert choose(None) == ("default", None)
