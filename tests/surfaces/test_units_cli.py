"""`dory ops install-units`, run as the real `dory` in a subprocess.

Every run has HOME in a temporary folder, no XDG_* or DBUS_* variables of the machine, and either
--no-enable / --dry-run, a PATH without systemctl, a private empty XDG_RUNTIME_DIR (so the real
systemctl finds no user manager), or a stand-in `systemctl` script that records its arguments: the
real user's systemd is never touched.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from dory.service.units.render import MARKER

WATCH = "dory-watch@.service"
HTTP = "dory-http@.service"


@pytest.fixture
def dory_exe(dory_cmd: list[str]) -> Path:
    """The installed console script (the units must name an executable file)."""
    if len(dory_cmd) != 1:
        pytest.skip("no installed `dory` console script (pip install -e .)")
    return Path(dory_cmd[0])


class Setup:
    def __init__(self, tmp_path: Path, dory: Path) -> None:
        self.tmp = tmp_path
        self.dory = dory
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.units = self.home / ".config" / "systemd" / "user"
        self.envs = self.home / ".config" / "dory" / "units"
        self.bin = tmp_path / "bin"  # a PATH folder without systemctl unless a test puts one there
        self.bin.mkdir()
        self.runtime = tmp_path / "run"
        self.runtime.mkdir(mode=0o700)

    def corpus(self, name: str = "notes") -> Path:
        folder = self.tmp / name
        folder.mkdir(exist_ok=True)
        return folder

    def env(self, path: str | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DORY_", "XDG_", "DBUS_"))}
        env["HOME"] = str(self.home)
        env["PATH"] = path if path is not None else f"{self.bin}:/usr/bin:/bin"
        env["XDG_RUNTIME_DIR"] = str(self.runtime)
        return env

    def run(
        self, corpus: Path | None, *args: str, dory: Path | None = None, path: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        prefix = ["--corpus", str(corpus)] if corpus is not None else []
        argv = [str(dory or self.dory), *prefix, "ops", "install-units", *args]
        return subprocess.run(argv, env=self.env(path), capture_output=True, text=True, timeout=120, check=False)

    def json_run(self, corpus: Path | None, *args: str, **kw: Any) -> tuple[int, dict[str, Any]]:
        done = self.run(corpus, *args, "--json", **kw)
        assert done.stdout.strip(), done.stderr
        return done.returncode, json.loads(done.stdout)

    def snapshot(self) -> dict[str, bytes]:
        return {str(p.relative_to(self.home)): p.read_bytes() for p in sorted(self.home.rglob("*")) if p.is_file()}

    def fake_systemctl(self, fail_on: str = "") -> Path:
        """A `systemctl` that appends its arguments to a log and fails on the subcommand `fail_on`."""
        log = self.tmp / "systemctl.log"
        script = self.bin / "systemctl"
        script.write_text(
            "#!/bin/sh\n"
            f'echo "$*" >> "{log}"\n'
            f'if [ "$2" = "{fail_on}" ]; then echo "Failed to {fail_on}: refused" >&2; exit 1; fi\n'
            "exit 0\n",
            encoding="utf-8",
        )
        script.chmod(0o755)
        return log


@pytest.fixture
def setup(tmp_path: Path, dory_exe: Path) -> Setup:
    return Setup(tmp_path, dory_exe)


def actions(payload: dict[str, Any]) -> dict[str, str]:
    return {Path(f["path"]).name: f["action"] for f in payload["files"]}


# -- dry run, files, idempotence ------------------------------------------------------------------
def test_dry_run_writes_nothing_and_shows_the_files_and_commands(setup: Setup) -> None:
    code, payload = setup.json_run(setup.corpus(), "--dry-run")
    assert code == 0, payload
    assert setup.snapshot() == {}
    assert actions(payload) == {WATCH: "created", HTTP: "created", "notes.env": "created"}
    assert payload["unit"] == "dory-watch@notes.service" and payload["dry_run"] is True
    assert [c["argv"] for c in payload["commands"]] == [
        ["systemctl", "--user", "daemon-reload"],
        ["systemctl", "--user", "disable", "--now", "dory-http@notes.service"],
        ["systemctl", "--user", "enable", "--now", "dory-watch@notes.service"],
    ]
    assert all(c["returncode"] is None for c in payload["commands"])
    watch = next(f for f in payload["files"] if f["path"].endswith(WATCH))
    assert f"ExecStart={setup.dory} ops watch" in watch["content"].splitlines()


def test_files_are_written_with_the_running_dory_and_the_absolute_corpus(setup: Setup) -> None:
    corpus = setup.corpus("My Notes")
    done = setup.run(corpus, "--no-enable")
    assert done.returncode == 0, done.stderr
    assert "Not enabled (--no-enable)" in done.stdout and "dory-watch@my-notes.service" in done.stdout
    watch = (setup.units / WATCH).read_text(encoding="utf-8")
    http = (setup.units / HTTP).read_text(encoding="utf-8")
    assert watch.startswith(MARKER) and http.startswith(MARKER)
    assert f"ExecStart={setup.dory} ops watch" in watch.splitlines()
    assert f"ExecStart={setup.dory} serve" in http.splitlines()
    env_file = setup.envs / "my-notes.env"
    assert f"DORY_CORPUS='{corpus.resolve()}'" in env_file.read_text(encoding="utf-8").splitlines()
    assert env_file.stat().st_mode & 0o777 == 0o600
    assert (setup.units / WATCH).stat().st_mode & 0o777 == 0o644


def test_a_rerun_changes_nothing_and_keeps_the_users_own_settings(setup: Setup) -> None:
    corpus = setup.corpus()
    assert setup.run(corpus, "--no-enable").returncode == 0
    env_file = setup.envs / "notes.env"
    env_file.write_text(env_file.read_text(encoding="utf-8") + "DORY_CAPTURE_ENABLED=true\n", encoding="utf-8")
    before = setup.snapshot()
    code, payload = setup.json_run(corpus, "--no-enable")
    assert code == 0
    assert set(actions(payload).values()) == {"unchanged"}
    assert payload["commands"] == [] and payload["enabled"] is False
    assert setup.snapshot() == before


def test_a_new_dory_path_updates_the_templates_shows_the_diff_and_restarts(setup: Setup) -> None:
    corpus = setup.corpus()
    assert setup.run(corpus, "--no-enable").returncode == 0
    moved = setup.tmp / "other bin"
    moved.mkdir()
    (moved / "dory").symlink_to(setup.dory)
    log = setup.fake_systemctl()
    code, payload = setup.json_run(corpus, dory=moved / "dory")
    assert code == 0, payload
    assert actions(payload) == {WATCH: "updated", HTTP: "updated", "notes.env": "unchanged"}
    watch = next(f for f in payload["files"] if f["path"].endswith(WATCH))
    assert f"-ExecStart={setup.dory} ops watch" in watch["diff"]
    assert f'+ExecStart="{moved}/dory" ops watch' in watch["diff"]
    assert log.read_text(encoding="utf-8").splitlines() == [
        "--user daemon-reload",
        "--user disable --now dory-http@notes.service",
        "--user enable --now dory-watch@notes.service",
        "--user restart dory-watch@notes.service",
    ]
    assert payload["enabled"] is True


# -- files Dory did not write ----------------------------------------------------------------------
@pytest.mark.parametrize("edit", ["someone else's", "edited"])
def test_a_unit_file_dory_did_not_write_is_kept_unless_forced(setup: Setup, edit: str) -> None:
    corpus = setup.corpus()
    setup.units.mkdir(parents=True)
    if edit == "edited":
        assert setup.run(corpus, "--no-enable").returncode == 0
        (setup.envs / "notes.env").unlink()
        text = (setup.units / WATCH).read_text(encoding="utf-8").replace("Nice=5", "Nice=10")
    else:
        text = "[Service]\nExecStart=/usr/bin/true\n"
    (setup.units / WATCH).write_text(text, encoding="utf-8")
    before = setup.snapshot()
    code, payload = setup.json_run(corpus, "--no-enable")
    assert code == 7
    assert payload["error"]["code"] == "unit_file_not_ours"
    assert payload["error"]["details"]["path"] == str(setup.units / WATCH)
    assert setup.snapshot() == before  # nothing else was written either

    code, payload = setup.json_run(corpus, "--no-enable", "--force")
    assert code == 0, payload
    assert actions(payload)[WATCH] == "replaced"
    assert (setup.units / WATCH).read_text(encoding="utf-8").startswith(MARKER)


def test_a_name_serving_another_corpus_is_refused_unless_forced(setup: Setup) -> None:
    first, second = setup.corpus("a"), setup.corpus("b")
    assert setup.run(first, "--no-enable", "--name", "notes").returncode == 0
    env_file = setup.envs / "notes.env"
    env_file.write_text(env_file.read_text(encoding="utf-8") + "DORY_HTTP_PORT=9000\n", encoding="utf-8")
    before = setup.snapshot()
    code, payload = setup.json_run(second, "--no-enable", "--name", "notes")
    assert code == 7
    assert payload["error"]["code"] == "unit_name_taken"
    assert payload["error"]["details"]["corpus"] == str(first.resolve())
    assert setup.snapshot() == before

    code, payload = setup.json_run(second, "--no-enable", "--name", "notes", "--force")
    assert code == 0
    assert actions(payload)["notes.env"] == "replaced"
    lines = env_file.read_text(encoding="utf-8").splitlines()
    assert f"DORY_CORPUS={second.resolve()}" in lines and "DORY_HTTP_PORT=9000" in lines
    assert not any(line == f"DORY_CORPUS={first.resolve()}" for line in lines)


# -- hostile input -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["../../etc/x", "a b", "a@b", "-rf", ".x", "x\ny", "%i", "ü", "n" * 65, ""])
def test_hostile_names_are_refused_and_nothing_is_written(setup: Setup, name: str) -> None:
    code, payload = setup.json_run(setup.corpus(), "--no-enable", "--name", name)
    assert code == 4
    assert payload["error"]["code"] == "invalid_unit_name"
    assert setup.snapshot() == {}
    assert not (setup.tmp / "etc").exists()


@pytest.mark.parametrize("folder", ["new\nline", "Bob's notes"])
def test_a_corpus_path_an_env_file_cannot_hold_is_refused(setup: Setup, folder: str) -> None:
    code, payload = setup.json_run(setup.corpus(folder), "--no-enable", "--name", "notes")
    assert code == 4
    assert payload["error"]["code"] == "unit_path_unsupported"
    assert setup.snapshot() == {}


def test_a_missing_corpus_is_corpus_not_found(setup: Setup) -> None:
    code, payload = setup.json_run(setup.tmp / "nowhere", "--no-enable")
    assert code == 2
    assert payload["error"]["code"] == "corpus_not_found"
    assert setup.snapshot() == {}


# -- systemctl ---------------------------------------------------------------------------------------
def test_without_systemctl_the_files_are_written_and_the_problem_has_its_code(setup: Setup) -> None:
    corpus = setup.corpus()
    code, payload = setup.json_run(corpus, path=str(setup.bin))  # no systemctl there
    assert code == 5
    assert payload["error"]["code"] == "systemd_unavailable"
    assert "systemctl not found" in payload["error"]["message"]
    assert "systemctl --user enable --now dory-watch@notes.service" in payload["error"]["message"]
    assert payload["enabled"] is False
    assert actions(payload) == {WATCH: "created", HTTP: "created", "notes.env": "created"}
    assert (setup.units / WATCH).is_file() and (setup.envs / "notes.env").is_file()


def test_without_a_user_manager_the_real_systemctl_is_reported_as_unavailable(setup: Setup) -> None:
    if shutil.which("systemctl", path="/usr/bin:/bin") is None:
        pytest.skip("systemctl not installed (apt-get install systemd)")
    done = setup.run(setup.corpus(), path="/usr/bin:/bin")  # XDG_RUNTIME_DIR is an empty private folder
    assert done.returncode == 5, done.stderr
    assert "error [systemd_unavailable]: no systemd user manager answers" in done.stderr
    assert "failed (1)" in done.stdout and "systemctl --user daemon-reload" in done.stdout
    assert (setup.units / WATCH).is_file() and (setup.envs / "notes.env").is_file()


def test_http_enables_the_http_instance_and_disables_the_watch_one(setup: Setup) -> None:
    log = setup.fake_systemctl()
    done = setup.run(setup.corpus(), "--http")
    assert done.returncode == 0, done.stderr
    assert "Enabled and started dory-http@notes.service." in done.stdout
    assert log.read_text(encoding="utf-8").splitlines() == [
        "--user daemon-reload",
        "--user disable --now dory-watch@notes.service",
        "--user enable --now dory-http@notes.service",
    ]


def test_a_refused_enable_is_systemctl_failed_and_a_refused_disable_is_a_note(setup: Setup) -> None:
    setup.fake_systemctl(fail_on="disable")
    code, payload = setup.json_run(setup.corpus())
    assert code == 0, payload
    assert any("disable --now dory-http@notes.service failed" in note for note in payload["notes"])

    setup.fake_systemctl(fail_on="enable")
    code, payload = setup.json_run(setup.corpus())
    assert code == 1
    assert payload["error"]["code"] == "systemctl_failed"
    assert "Failed to enable: refused" in payload["error"]["message"]


def test_an_old_single_unit_is_pointed_out(setup: Setup) -> None:
    setup.units.mkdir(parents=True)
    (setup.units / "dory-watch.service").write_text("[Service]\nExecStart=/usr/bin/true\n", encoding="utf-8")
    code, payload = setup.json_run(setup.corpus(), "--no-enable")
    assert code == 0
    assert any("dory-watch.service" in note and "disable --now" in note for note in payload["notes"])
    assert (setup.units / "dory-watch.service").read_text(encoding="utf-8").startswith("[Service]")  # untouched


# -- systemd-analyze verify ----------------------------------------------------------------------------
def verify(setup: Setup, unit: Path) -> subprocess.CompletedProcess[str]:
    """`systemd-analyze --user verify` of an instance (its template is found in the same folder), with
    the private runtime folder (it starts an in-process user manager); plain `verify` when no user
    manager can be set up here."""
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze not installed (apt-get install systemd; .ci/run does)")
    env = setup.env()
    for command in (["systemd-analyze", "--user", "verify", str(unit)], ["systemd-analyze", "verify", str(unit)]):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
        if "Failed to initialize manager" not in done.stderr:
            break
    return done


@pytest.mark.parametrize("bin_folder", ["bin", "my bin 100% $HOME"])
@pytest.mark.parametrize("template", [WATCH, HTTP])
def test_both_templates_pass_systemd_analyze_verify_for_a_real_instance(
    setup: Setup, template: str, bin_folder: str
) -> None:
    """Also with a `dory` under a path with a space, `%` and `$`: verify checks that ExecStart names
    an executable file, so a quoting or escaping mistake fails here."""
    folder = setup.tmp / bin_folder / "venv"
    folder.mkdir(parents=True)
    (folder / "dory").symlink_to(setup.dory)
    done = setup.run(setup.corpus("My Notes"), "--no-enable", dory=folder / "dory")
    assert done.returncode == 0, done.stderr
    unit = setup.units / template.replace("@.", "@my-notes.")
    result = verify(setup, unit)
    ours = [line for line in (result.stdout + result.stderr).splitlines() if "dory-" in line]
    assert result.returncode == 0, result.stderr
    assert ours == []


def test_verify_does_catch_a_broken_unit(setup: Setup) -> None:
    """The check above is not vacuous: a unit whose ExecStart names no file fails verify."""
    assert setup.run(setup.corpus(), "--no-enable").returncode == 0
    path = setup.units / WATCH
    path.write_text(path.read_text(encoding="utf-8").replace(str(setup.dory), "/nonexistent/dory"), encoding="utf-8")
    result = verify(setup, setup.units / "dory-watch@notes.service")
    assert result.returncode != 0
    assert "/nonexistent/dory" in result.stderr
