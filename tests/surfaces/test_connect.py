"""`dory connect` / `dory disconnect` through the real console script, on config files modelled on
the harnesses' own (comments in TOML, other servers, other keys, tabs, four-space and one-line
JSON): connect merges, connect again changes nothing, disconnect gives the original back byte for
byte. HOME, the current folder and every config-locating variable point into tmp_path."""

from __future__ import annotations

import json
import stat
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "connect"
DORY = Path(sys.executable).with_name("dory")  # what the console script finds as itself (tests/conftest.py)

Run = Callable[..., Any]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "project").mkdir()
    return tmp_path / "project"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "my notes"  # a space: commands are quoted
    (root / "core").mkdir(parents=True)
    (root / "core" / "active.md").write_text("# Active\n\nShipping the login fix.\n", encoding="utf-8")
    return root


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    """HOME in tmp_path, and no variable that would move a harness's config elsewhere."""
    return {"HOME": str(home), "XDG_STATE_HOME": "", "XDG_CONFIG_HOME": "", "CLAUDE_CONFIG_DIR": "", "CODEX_HOME": ""}


@pytest.fixture
def run(dory: Run, env: dict[str, str], project: Path, corpus: Path) -> Run:
    """`dory --corpus CORPUS ARGS --json` from the project folder, answering JSON."""

    def call(*args: str, expect: int = 0) -> Any:
        result = dory("--corpus", str(corpus), *args, "--json", cwd=project, env=env)
        assert result.code == expect, str(result)
        return result.json()

    return call


def place(fixture: str, target: Path) -> bytes:
    target.parent.mkdir(parents=True, exist_ok=True)
    data = (FIXTURES / fixture).read_bytes()
    target.write_bytes(data)
    return data


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def configs(root: Path) -> dict[str, bytes]:
    """The tree without Dory's backups and its own record (what the person sees as their configs)."""
    return {
        name: data
        for name, data in tree(root).items()
        if ".dory-backup-" not in name and not name.startswith(".local/state/dory/")
    }


def backups(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".dory-backup-" in p.name)


def without_dory_server(config: dict[str, Any], key: str = "mcpServers") -> dict[str, Any]:
    servers = {name: value for name, value in config[key].items() if name != "dory"}
    return {**config, key: servers}


# -- round trips -------------------------------------------------------------------------------------
CASES = [
    # harness, scope, [(fixture, path under home or project)], the file holding the server entry
    ("claude-code", "user", [("claude.json", "~/.claude.json"), ("claude-settings.json", "~/.claude/settings.json")]),
    ("claude-code", "project", [("mcp.json", ".mcp.json")]),
    ("codex", "user", [("codex-config.toml", "~/.codex/config.toml")]),
    ("cursor", "user", [("cursor-mcp.json", "~/.cursor/mcp.json")]),
    ("cursor", "project", [("cursor-mcp.json", ".cursor/mcp.json")]),
    ("claude-desktop", "user", [("claude_desktop_config.json", "~/.config/Claude/claude_desktop_config.json")]),
]


def resolve(where: str, home: Path, project: Path) -> Path:
    return home / where[2:] if where.startswith("~/") else project / where


@pytest.mark.parametrize(("harness", "scope", "files"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_connect_twice_then_disconnect_is_byte_identical(
    run: Run, home: Path, project: Path, harness: str, scope: str, files: list[tuple[str, str]]
) -> None:
    originals = {resolve(where, home, project): place(name, resolve(where, home, project)) for name, where in files}
    before = {"home": configs(home), "project": configs(project)}

    first = run("connect", harness, "--scope", scope)
    assert {f["action"] for f in first["files"] if Path(f["path"]) in originals} == {"updated"}
    for path, original in originals.items():
        assert backups(path.parent) == [Path(f["backup"]).name for f in first["files"] if Path(f["path"]) == path]
        assert (path.parent / backups(path.parent)[0]).read_bytes() == original
    connected = {"home": tree(home), "project": tree(project)}

    second = run("connect", harness, "--scope", scope)
    assert {f["action"] for f in second["files"]} == {"unchanged"}
    assert all(f["backup"] is None for f in second["files"])
    assert {"home": tree(home), "project": tree(project)} == connected  # no write, no new backup

    gone = run("disconnect", harness, "--scope", scope)
    assert {f["action"] for f in gone["files"]} <= {"restored", "deleted"}
    for path, original in originals.items():
        assert path.read_bytes() == original
    assert {"home": configs(home), "project": configs(project)} == before  # files Dory created are gone


def test_claude_code_user_merges_without_dropping_anything(run: Run, home: Path, corpus: Path) -> None:
    original = json.loads(place("claude.json", home / ".claude.json"))
    settings = json.loads(place("claude-settings.json", home / ".claude" / "settings.json"))

    run("connect", "claude-code")

    config = json.loads((home / ".claude.json").read_text(encoding="utf-8"))
    assert list(config) == list(original)  # every key, in its order
    assert without_dory_server(config) == original
    assert list(config["mcpServers"]) == ["github", "sentry", "dory"]
    assert config["mcpServers"]["dory"] == {"command": str(DORY), "args": ["--corpus", str(corpus), "mcp"]}
    text = (home / ".claude.json").read_text(encoding="utf-8")
    assert text.startswith('{\n  "numStartups": 42,') and not text.endswith("\n")  # Claude Code's own style
    assert "café" in text  # not escaped

    hooks = json.loads((home / ".claude" / "settings.json").read_text(encoding="utf-8"))
    assert {k: v for k, v in hooks.items() if k != "hooks"} == {k: v for k, v in settings.items() if k != "hooks"}
    prefix = f"{DORY} --corpus '{corpus}'"
    assert hooks["hooks"]["PostToolUse"] == settings["hooks"]["PostToolUse"]
    assert hooks["hooks"]["SessionStart"] == [
        *settings["hooks"]["SessionStart"],  # the person's own hook stays first
        {
            "matcher": "startup|resume|clear|compact",
            "hooks": [{"type": "command", "command": f"{prefix} wake --hook", "timeout": 10}],
        },
    ]
    assert hooks["hooks"]["PreCompact"] == [
        {"hooks": [{"type": "command", "command": f"{prefix} sessions hook precompact", "timeout": 60}]}
    ]
    assert hooks["hooks"]["Stop"] == [
        {"hooks": [{"type": "command", "command": f"{prefix} sessions hook ingest", "timeout": 60, "async": True}]}
    ]
    assert hooks["hooks"]["SessionEnd"] == [
        {"hooks": [{"type": "command", "command": f"{prefix} sessions hook ingest", "timeout": 60}]}
    ]
    assert (home / ".claude" / "settings.json").read_text(encoding="utf-8").startswith('{\n\t"$schema"')  # tabs


def test_codex_keeps_every_byte_of_the_toml_and_appends_its_table(run: Run, home: Path, corpus: Path) -> None:
    original = place("codex-config.toml", home / ".codex" / "config.toml").decode()

    run("connect", "codex")

    text = (home / ".codex" / "config.toml").read_text(encoding="utf-8")
    assert text.startswith(original)  # comments, order, spacing: untouched
    assert text[len(original) :] == (
        f'\n[mcp_servers.dory]\ncommand = "{DORY}"\nargs = ["--corpus", "{corpus}", "mcp"]\n'
    )
    parsed = tomllib.loads(text)
    assert list(parsed["mcp_servers"]) == ["context7", "figma", "dory"]


def test_connect_creates_missing_files_and_disconnect_deletes_them(run: Run, home: Path, project: Path) -> None:
    run("connect", "claude-code", "--scope", "project")
    assert sorted(tree(project)) == [".claude/settings.json", ".mcp.json"]
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["dory"]["args"][-1] == "mcp"

    gone = run("disconnect", "claude-code", "--scope", "project")

    assert [f["action"] for f in gone["files"]] == ["deleted", "deleted"]
    assert list(project.iterdir()) == []  # .claude/ too: connect had created it
    assert run("disconnect", "claude-code", "--scope", "project")["files"][0]["action"] == "absent"


def test_dry_run_prints_the_diff_and_writes_nothing(
    dory: Run, env: dict[str, str], home: Path, project: Path, corpus: Path
) -> None:
    place("cursor-mcp.json", home / ".cursor" / "mcp.json")
    before = tree(home)

    shown = dory("--corpus", str(corpus), "connect", "cursor", "--dry-run", cwd=project, env=env)

    assert shown.code == 0, str(shown)
    assert f"--- {home}/.cursor/mcp.json\n+++ {home}/.cursor/mcp.json\n" in shown.stdout
    assert '+        "dory": {\n' in shown.stdout and "dry run: nothing was written" in shown.stdout
    assert tree(home) == before


def test_broken_json_is_refused_and_nothing_is_touched(run: Run, home: Path) -> None:
    good = place("claude.json", home / ".claude.json")
    broken = b'{\n  "hooks": {\n    "Stop": [\n'
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_bytes(broken)
    before = tree(home)

    error = run("connect", "claude-code", expect=2)["error"]

    assert error["code"] == "config_error"
    assert "settings.json is not valid JSON" in error["message"]
    assert tree(home) == before  # the good file was not changed either
    assert (home / ".claude.json").read_bytes() == good


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b'{"mcpServers": {}, "mcpServers": {"x": {}}}', "duplicate key 'mcpServers'"),
        (b'{"timeout": NaN}', "NaN is not JSON"),
        (b"[1, 2]", "holds a JSON list, not an object"),
        (b'{"mcpServers": ["x"]}', "'mcpServers' is a JSON list, not an object"),
        (b"\xff\xfe{}", "is not UTF-8 text"),
    ],
)
def test_json_dory_cannot_rewrite_exactly_is_refused(run: Run, home: Path, content: bytes, problem: str) -> None:
    (home / ".cursor").mkdir()
    (home / ".cursor" / "mcp.json").write_bytes(content)

    error = run("connect", "cursor", expect=2)["error"]

    assert error["code"] == "config_error" and problem in error["message"]
    assert tree(home) == {".cursor/mcp.json": content}


def test_broken_toml_is_refused(run: Run, home: Path) -> None:
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text('model = "x"\n[mcp_servers.a\n', encoding="utf-8")
    error = run("connect", "codex", expect=2)["error"]
    assert error["code"] == "config_error" and "is not valid TOML" in error["message"]
    assert backups(home / ".codex") == []


def test_disconnect_after_the_harness_rewrote_the_file_removes_only_dorys_part(run: Run, home: Path) -> None:
    original = json.loads(place("claude.json", home / ".claude.json"))
    run("connect", "claude-code", "--no-hooks")
    config = json.loads((home / ".claude.json").read_text(encoding="utf-8"))
    config["numStartups"] += 1  # Claude Code rewrites the file at every start
    (home / ".claude.json").write_text(json.dumps(config, indent=2, ensure_ascii=False), encoding="utf-8")

    gone = run("disconnect", "claude-code")

    assert gone["files"][0]["action"] == "removed"
    expected = {**original, "numStartups": 43}
    assert (home / ".claude.json").read_text(encoding="utf-8") == json.dumps(expected, indent=2, ensure_ascii=False)
    assert gone["files"][1]["action"] == "absent"  # --no-hooks: settings.json was never made


def test_toml_edited_since_connect_loses_only_the_dory_table(run: Run, home: Path) -> None:
    original = place("codex-config.toml", home / ".codex" / "config.toml").decode()
    run("connect", "codex")
    path = home / ".codex" / "config.toml"
    path.write_text(path.read_text(encoding="utf-8") + '\n# added by hand later\n[history]\npersistence = "none"\n')

    assert run("disconnect", "codex")["files"][0]["action"] == "removed"

    assert path.read_text(encoding="utf-8") == original + '\n# added by hand later\n[history]\npersistence = "none"\n'


def test_connecting_another_corpus_replaces_dorys_entries_in_place(
    run: Run, dory: Run, env: dict[str, str], home: Path, project: Path, tmp_path: Path
) -> None:
    original = place("claude-settings.json", home / ".claude" / "settings.json")
    place("claude.json", home / ".claude.json")
    run("connect", "claude-code")
    other = tmp_path / "other"
    (other / "core").mkdir(parents=True)

    moved = dory("--corpus", str(other), "connect", "claude-code", "--json", cwd=project, env=env)

    assert moved.code == 0, str(moved)
    hooks = json.loads((home / ".claude" / "settings.json").read_text(encoding="utf-8"))["hooks"]
    commands = [h["command"] for groups in hooks.values() for g in groups for h in g["hooks"]]
    assert sum("dory" in c for c in commands) == 4  # replaced, not added twice
    assert all(str(other) in c for c in commands if c.startswith(str(DORY)))
    run("disconnect", "claude-code")
    assert (home / ".claude" / "settings.json").read_bytes() == original  # the first original, still


def test_http_entries_name_the_token_variable_never_a_secret(run: Run, home: Path, project: Path) -> None:
    url = "http://127.0.0.1:8765"
    run("connect", "claude-code", "--http", url, "--token-env", "DORY_TOKEN")
    run("connect", "cursor", "--http", url + "/mcp", "--token-env", "DORY_TOKEN")
    run("connect", "codex", "--http", url, "--token-env", "DORY_TOKEN")

    claude = json.loads((home / ".claude.json").read_text())["mcpServers"]["dory"]
    assert claude == {"type": "http", "url": url + "/mcp", "headers": {"Authorization": "Bearer ${DORY_TOKEN}"}}
    cursor = json.loads((home / ".cursor" / "mcp.json").read_text())["mcpServers"]["dory"]
    assert cursor == {"url": url + "/mcp", "headers": {"Authorization": "Bearer ${env:DORY_TOKEN}"}}
    codex = tomllib.loads((home / ".codex" / "config.toml").read_text())["mcp_servers"]["dory"]
    assert codex == {"url": url + "/mcp", "bearer_token_env_var": "DORY_TOKEN"}
    hooks = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    assert hooks["SessionStart"][0]["hooks"][0]["command"] == f"{DORY} --server {url} wake --hook"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("connect", "claude-desktop", "--http", "http://127.0.0.1:8765"), "stdio only"),
        (("connect", "codex", "--scope", "project"), "codex has no project configuration"),
        (("connect", "cursor", "--token-env", "T"), "--token-env goes with --http"),
    ],
)
def test_impossible_requests_are_usage_errors(run: Run, home: Path, args: tuple[str, ...], message: str) -> None:
    error = run(*args, expect=2)["error"]
    assert error["code"] == "usage_error" and message in error["message"]
    assert tree(home) == {}


def test_no_corpus_is_refused(dory: Run, env: dict[str, str], home: Path, project: Path) -> None:
    missing = dory("--corpus", str(project / "nope"), "connect", "cursor", "--json", cwd=project, env=env)
    assert missing.code == 2 and missing.error()["code"] == "corpus_not_found"
    assert tree(home) == {}


def test_a_symlinked_config_is_edited_where_it_points(run: Run, home: Path) -> None:
    dotfiles = home / "dotfiles" / "claude-settings.json"
    original = place("claude-settings.json", dotfiles)
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").symlink_to(dotfiles)

    run("connect", "claude-code")
    assert (home / ".claude" / "settings.json").is_symlink()
    assert "wake --hook" in dotfiles.read_text(encoding="utf-8")

    run("disconnect", "claude-code")
    assert (home / ".claude" / "settings.json").is_symlink() and dotfiles.read_bytes() == original


def test_a_private_file_and_its_backup_stay_private(run: Run, home: Path) -> None:
    place("claude.json", home / ".claude.json")
    (home / ".claude.json").chmod(0o600)

    run("connect", "claude-code", "--no-hooks")

    assert stat.S_IMODE((home / ".claude.json").stat().st_mode) == 0o600
    assert stat.S_IMODE((home / backups(home)[0]).stat().st_mode) == 0o600


def test_the_manifest_records_what_to_undo(run: Run, home: Path, project: Path) -> None:
    original = place("mcp.json", project / ".mcp.json")
    run("connect", "claude-code", "--scope", "project")

    manifest = json.loads((home / ".local" / "state" / "dory" / "connect.json").read_text())

    mcp = manifest["files"][str(project / ".mcp.json")]
    assert mcp["created"] is False and mcp["folders"] == []
    assert Path(mcp["backup"]).read_bytes() == original
    settings = manifest["files"][str(project / ".claude" / "settings.json")]
    assert settings["created"] is True and settings["folders"] == [str(project / ".claude")]
    assert settings["backup"] is None and settings["original"] is None


def test_without_the_manifest_disconnect_still_removes_dorys_entries(run: Run, home: Path) -> None:
    original = json.loads(place("claude-settings.json", home / ".claude" / "settings.json"))
    run("connect", "claude-code")
    (home / ".local" / "state" / "dory" / "connect.json").unlink()

    gone = run("disconnect", "claude-code")

    assert [f["action"] for f in gone["files"]] == ["removed", "removed"]
    assert json.loads((home / ".claude" / "settings.json").read_text()) == original
    assert json.loads((home / ".claude.json").read_text()) == {}  # created by connect; emptied, kept


@pytest.mark.parametrize(
    ("original", "connected_start"),
    [
        (b"{}\n", b'{\n  "mcpServers": {\n    "dory": {\n'),  # a fresh, empty config: two spaces
        (b'{"mcpServers": {"a": {"command": "x"}}}', b'{"mcpServers": {"a": {"command": "x"}, "dory": {'),  # one line
        (b'{\r\n  "mcpServers": {}\r\n}\r\n', b'{\r\n  "mcpServers": {\r\n    "dory": {\r\n'),  # CRLF
    ],
)
def test_json_style_is_kept(run: Run, home: Path, original: bytes, connected_start: bytes) -> None:
    path = home / ".config" / "Claude" / "claude_desktop_config.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(original)

    run("connect", "claude-desktop")
    assert path.read_bytes().startswith(connected_start)

    run("disconnect", "claude-desktop")
    assert path.read_bytes() == original


@pytest.mark.parametrize("harness", ["claude-code", "codex"])
def test_connecting_a_harness_whose_transcripts_dory_reads_switches_capture_on(
    run: Run, corpus: Path, harness: str
) -> None:
    assert not (corpus / "dory.toml").exists()
    assert run("connect", harness, "--dry-run")["capture"] is False
    assert not (corpus / "dory.toml").exists()
    assert run("connect", harness)["capture"] is True
    assert tomllib.loads((corpus / "dory.toml").read_text(encoding="utf-8"))["capture"]["enabled"] is True


def test_cursor_and_no_capture_leave_capture_alone(run: Run, corpus: Path) -> None:
    assert run("connect", "cursor")["capture"] is False
    assert run("connect", "claude-code", "--no-capture")["capture"] is False
    assert not (corpus / "dory.toml").exists()
