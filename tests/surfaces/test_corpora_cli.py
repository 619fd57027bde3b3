"""`dory add`, `dory corpora`, `dory config show` and `dory capture on` for an added vault, through the
real command line in a user environment of its own."""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
from support.vault import build_fixture, fingerprint


class Cli:
    def __init__(self, cmd: list[str], tmp_path: Path) -> None:
        self.cmd, self.tmp = cmd, tmp_path
        home = tmp_path / "home"
        inherited = {k: v for k, v in os.environ.items() if not k.startswith(("DORY_", "XDG_"))}
        self.env = {
            **inherited,
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local/share"),
            "XDG_STATE_HOME": str(home / ".local/state"),
            "DORY_EMBEDDER_BACKEND": "none",
        }
        self.config = home / ".config/dory/corpora.toml"

    def run(self, *args: str, json_out: bool = True, cwd: Path | None = None) -> tuple[int, Any]:
        done = subprocess.run(
            [*self.cmd, *args, *(["--json"] if json_out else [])],
            env=self.env,
            cwd=cwd or self.tmp,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if not json_out:
            return done.returncode, done.stdout + done.stderr
        return done.returncode, json.loads(done.stdout) if done.stdout.strip() else done.stderr


@pytest.fixture
def cli(dory_cmd: list[str], tmp_path: Path) -> Cli:
    return Cli(dory_cmd, tmp_path)


def test_an_output_folder_inside_the_vault_is_refused_and_nothing_is_recorded(cli: Cli) -> None:
    vault = build_fixture(cli.tmp / "vault")
    (cli.tmp / "home").mkdir()
    before = fingerprint(vault)
    code, out = cli.run("add", str(vault), "--output", str(vault / "dory-output"))
    assert code == 2 and out["error"]["code"] == "usage_error", out
    assert "inside" in out["error"]["message"] and "choose one outside it" in out["error"]["message"]
    code, out = cli.run("add", str(vault), "--output", str(cli.tmp / "out"), "--no-output")
    assert code == 2 and "exclude each other" in out["error"]["message"]
    home = cli.tmp / "home"  # a vault that holds the platform folders (the home folder itself)
    code, out = cli.run("add", str(home), "--output", str(cli.tmp / "out"))
    assert code == 2 and "state folder" in out["error"]["message"] and str(home) in out["error"]["message"], out
    assert not cli.config.exists() and fingerprint(vault) == before


def test_names_are_unique_and_replace_keeps_the_entrys_own_sections(cli: Cli) -> None:
    first, second = build_fixture(cli.tmp / "first"), build_fixture(cli.tmp / "second")
    assert cli.run("add", str(first), "--name", "notes")[0] == 0
    code, out = cli.run("add", str(second), "--name", "notes")
    assert code == 2 and "is known already" in out["error"]["message"], out
    code, out = cli.run("add", str(first), "--name", "other")
    assert code == 2 and out["error"]["message"] == f"{first} is known already, as 'notes'"
    cli.config.write_text(
        "# my corpora\n" + cli.config.read_text() + '\n[corpora.notes.jobs]\ndream = "off"\n', encoding="utf-8"
    )
    code, out = cli.run("add", str(first), "--name", "notes", "--writable", "--replace")
    assert code == 0 and out["writable"] is True, out
    text = cli.config.read_text()
    data = tomllib.loads(text)
    assert text.startswith('# my corpora\ndefault = "notes"\n')  # the user's lines stay
    assert data["corpora"]["notes"] == {
        "path": str(first),
        "output": str(cli.tmp / "home/.local/share/dory/notes"),
        "writable": True,
        "jobs": {"dream": "off"},
    }
    code, jobs = cli.run("--corpus", "notes", "ops", "jobs")
    assert {j["name"]: j["schedule"] for j in jobs["jobs"]}["dream"] == "off"


def test_a_folder_dory_owns_is_listed_by_name_only(cli: Cli) -> None:
    root = build_fixture(cli.tmp / "owned")
    (root / ".dory").mkdir()
    code, out = cli.run("add", str(root), "--name", "mine")
    assert code == 0 and (out["owned"], out["state_dir"], out["output"]) == (True, str(root / ".dory"), str(root))
    code, status = cli.run("--corpus", "mine", "status")
    assert code == 0 and (status["read_only"], status["state_dir"]) == (False, str(root / ".dory")), status
    code, out = cli.run("add", str(cli.tmp / "owned"), "--name", "again", "--no-output")
    assert code == 2, out


def test_corpora_lists_them_and_the_default(cli: Cli) -> None:
    assert cli.run("corpora", json_out=False)[1].startswith("no corpora yet")
    cli.run("add", str(build_fixture(cli.tmp / "a")))
    cli.run("add", str(build_fixture(cli.tmp / "b")), "--no-output", "--default")
    code, out = cli.run("corpora")
    assert code == 0 and out["default"] == "b"
    assert [(c["name"], c["read_only"], c["output"], c["default"]) for c in out["corpora"]] == [
        ("a", True, str(cli.tmp / "home/.local/share/dory/a"), False),
        ("b", True, None, True),
    ]
    code, text = cli.run("corpora", json_out=False)
    assert "* b " in text and "  a " in text


def test_config_show_says_where_each_value_came_from(cli: Cli) -> None:
    vault = build_fixture(cli.tmp / "vault")
    cli.run("add", str(vault))
    code, text = cli.run("config", "show", json_out=False, cwd=vault / "Coffee")
    assert code == 0, text
    lines = {line.split()[0]: line for line in text.splitlines()}
    assert lines["corpus"].endswith(f"(the known corpus 'vault', found from {vault / 'Coffee'})")
    assert lines["read_only"].split()[1] == "True" and str(cli.config) in lines["read_only"]
    assert lines["embedder.backend"].endswith("(env DORY_EMBEDDER_BACKEND)")
    assert lines["search.rrf_k"].endswith("(default)")


def test_capture_on_for_an_added_vault_is_recorded_in_corpora_toml(cli: Cli) -> None:
    vault = build_fixture(cli.tmp / "vault")
    before = fingerprint(vault)
    cli.run("add", str(vault))
    code, out = cli.run("--corpus", "vault", "capture", "on")
    assert code == 0 and out["enabled"] is True and out["config_file"] == str(cli.config), out
    assert out["sessions_folder"] == str(cli.tmp / "home/.local/share/dory/vault/logs/sessions"), out
    code, text = cli.run("--corpus", "vault", "capture", "status", json_out=False)
    assert f"sessions are saved under {out['sessions_folder']}" in text, text
    assert tomllib.loads(cli.config.read_text())["corpora"]["vault"]["capture"] == {"enabled": True}
    assert fingerprint(vault) == before


def test_adding_a_vault_with_folders_named_like_dorys_output_warns(cli: Cli) -> None:
    vault = build_fixture(cli.tmp / "vault")
    (vault / "wiki").mkdir()
    code, out = cli.run("add", str(vault))
    assert code == 0 and len(out["warnings"]) == 1 and str(vault / "wiki") in out["warnings"][0], out


def test_remove_forgets_the_entry_and_leaves_the_notes_and_output(cli: Cli) -> None:
    vault = build_fixture(cli.tmp / "vault")
    before = fingerprint(vault)
    cli.run("add", str(vault), "--default")
    assert cli.run("--corpus", "vault", "reindex")[0] == 0
    state = cli.tmp / "home/.local/state/dory/vault"
    output = cli.tmp / "home/.local/share/dory/vault"
    assert (state / "index.sqlite").exists() or any(state.iterdir())
    code, out = cli.run("remove", "vault")
    assert code == 0 and out["state_deleted"] is None and out["default"] is True, out
    assert set(out["kept"]) == {str(output), str(state)}
    assert "vault" not in tomllib.loads(cli.config.read_text()).get("corpora", {})
    assert "default" not in tomllib.loads(cli.config.read_text())
    assert state.is_dir() and output.is_dir() and fingerprint(vault) == before
    code, out = cli.run("remove", "vault")
    assert code == 3 and out["error"]["code"] == "not_found", out


def test_remove_with_delete_state_deletes_only_the_index_and_never_one_in_use(cli: Cli) -> None:
    from dory.index.lock import WriterLock

    vault = build_fixture(cli.tmp / "vault")
    before = fingerprint(vault)
    cli.run("add", str(vault))
    cli.run("add", str(build_fixture(cli.tmp / "other")))
    assert cli.run("--corpus", "vault", "reindex")[0] == 0
    state = cli.tmp / "home/.local/state/dory/vault"
    with WriterLock(state / "writer.lock"):  # as a running daemon holds it
        code, out = cli.run("remove", "vault", "--delete-state")
    assert code == 6 and out["error"]["code"] == "index_locked", out
    assert "vault" in tomllib.loads(cli.config.read_text())["corpora"] and state.is_dir()
    code, out = cli.run("remove", "vault", "--delete-state")
    assert code == 0 and out["state_deleted"] == str(state) and not state.exists(), out
    assert list(tomllib.loads(cli.config.read_text())["corpora"]) == ["other"]
    assert fingerprint(vault) == before


def test_capture_status_of_a_vault_without_output_says_sessions_cannot_be_saved(cli: Cli) -> None:
    cli.run("add", str(build_fixture(cli.tmp / "vault")), "--no-output")
    code, out = cli.run("--corpus", "vault", "capture", "status")
    assert code == 0 and out["sessions_folder"] is None, out
    assert any("captured sessions cannot be saved" in w for w in out["warnings"]), out
