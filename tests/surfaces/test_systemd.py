"""scripts/install-systemd.sh and the systemd/dory-watch.service template it renders.

Every run points HOME at a temporary folder and passes --no-enable, so nothing touches the real
user's systemd configuration and no systemctl is called.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "install-systemd.sh"
TEMPLATE = REPO / "systemd" / "dory-watch.service"
UNIT_NAME = "dory-watch.service"


def dory_path() -> str:
    """The real installed `dory` (ExecStart must name an existing executable for verify)."""
    beside = Path(sys.executable).with_name("dory")
    if beside.is_file():
        return str(beside)
    found = shutil.which("dory")
    if not found:
        pytest.skip("no installed `dory` console script (pip install -e .)")
    return found


def script_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DORY_")}
    env.pop("XDG_CONFIG_HOME", None)
    env["HOME"] = str(home)
    return env


def run_script(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        env=env if env is not None else script_env(home),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def install(
    tmp_path: Path, corpus_name: str = "corpus", unit_name: str = UNIT_NAME, *flags: str
) -> tuple[Path, Path, str]:
    """Run the installer into tmp_path; return (rendered unit, corpus, dory path)."""
    home = tmp_path / "home"
    home.mkdir()
    corpus = tmp_path / corpus_name
    corpus.mkdir()
    dory = dory_path()
    units = str(tmp_path / "units")
    done = run_script(home, str(corpus), *flags, "--dory", dory, "--unit-dir", units, "--no-enable")
    assert done.returncode == 0, done.stderr
    unit = tmp_path / "units" / unit_name
    assert unit.is_file(), done.stdout
    assert str(unit) in done.stdout  # it says where it installed things
    return unit, corpus, dory


def test_script_is_executable() -> None:
    assert os.access(SCRIPT, os.X_OK)
    assert "@DORY_BIN@" in TEMPLATE.read_text(encoding="utf-8")


@pytest.mark.parametrize("corpus_name", ["corpus", "my notes"])
def test_install_renders_unit_and_env_file(tmp_path: Path, corpus_name: str) -> None:
    unit, corpus, dory = install(tmp_path, corpus_name)
    text = unit.read_text(encoding="utf-8")
    assert "@DORY_BIN@" not in text
    exec_lines = [line for line in text.splitlines() if line.startswith("ExecStart=")]
    assert exec_lines == [f"ExecStart={dory} ops watch"]
    assert Path(dory).is_absolute()
    assert "EnvironmentFile=%h/.config/dory/watch.env" in text

    env_file = tmp_path / "home" / ".config" / "dory" / "watch.env"
    env_text = env_file.read_text(encoding="utf-8")
    corpus_lines = [line for line in env_text.splitlines() if line.startswith("DORY_CORPUS=")]
    assert len(corpus_lines) == 1
    assert str(corpus.resolve()) in corpus_lines[0]
    assert "%h" not in corpus_lines[0] and "~" not in corpus_lines[0]


def verify(unit: Path, home: Path) -> tuple[list[str], subprocess.CompletedProcess[str]]:
    """`systemd-analyze --user verify`, with a private runtime dir (it needs one to start its
    in-process user manager); falls back to plain `verify` when no user manager can be set up."""
    runtime = home / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = script_env(home)
    env["XDG_RUNTIME_DIR"] = str(runtime)
    attempts = [["systemd-analyze", "--user", "verify", str(unit)], ["systemd-analyze", "verify", str(unit)]]
    for command in attempts:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
        if "Failed to initialize manager" not in done.stderr:
            break
    return command, done


def test_the_http_unit_runs_dory_serve_and_conflicts_with_the_watch_unit(tmp_path: Path) -> None:
    unit, _, dory = install(tmp_path, "corpus", "dory-http.service", "--http")
    text = unit.read_text(encoding="utf-8")
    assert [line for line in text.splitlines() if line.startswith("ExecStart=")] == [f"ExecStart={dory} serve"]
    assert "Conflicts=dory-watch.service" in text
    assert not (tmp_path / "units" / UNIT_NAME).exists()


@pytest.mark.parametrize(("unit_name", "flags"), [(UNIT_NAME, ()), ("dory-http.service", ("--http",))])
def test_rendered_unit_passes_systemd_analyze_verify(tmp_path: Path, unit_name: str, flags: tuple[str, ...]) -> None:
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze not installed (apt-get install systemd)")
    unit, _, _ = install(tmp_path, "corpus", unit_name, *flags)
    command, done = verify(unit, tmp_path / "home")
    # verify only prints problems; other units on the machine may get warnings, ours may not.
    ours = [line for line in (done.stdout + done.stderr).splitlines() if unit_name in line]
    assert done.returncode == 0, f"{' '.join(command)}:\n{done.stderr}"
    assert ours == [], f"{' '.join(command)}:\n" + "\n".join(ours)


def test_missing_corpus_dir_exits_2(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    missing = tmp_path / "no-such-corpus"
    done = run_script(home, str(missing), "--dory", dory_path(), "--unit-dir", str(tmp_path / "units"), "--no-enable")
    assert done.returncode == 2
    assert "corpus directory does not exist" in done.stderr
    assert str(missing) in done.stderr
    assert not (tmp_path / "units").exists()
    assert not (home / ".config").exists()


def test_missing_dory_binary_fails(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    done = run_script(home, str(corpus), "--dory", "/nonexistent", "--unit-dir", str(tmp_path / "units"), "--no-enable")
    assert done.returncode != 0
    assert "/nonexistent" in done.stderr
    assert "not found" in done.stderr
    assert not (tmp_path / "units").exists()


def test_dory_not_on_path_fails(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    env = script_env(home)
    env["PATH"] = "/usr/bin:/bin"
    if shutil.which("dory", path=env["PATH"]):
        pytest.skip("a system-wide dory is installed in /usr/bin or /bin")
    done = run_script(home, str(corpus), "--unit-dir", str(tmp_path / "units"), "--no-enable", env=env)
    assert done.returncode != 0
    assert "dory not found on PATH" in done.stderr
    assert "--dory" in done.stderr
