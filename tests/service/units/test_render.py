"""The text of the systemd units and their environment files: names, quoting, the marker, and the
templates as package data (what `dory ops install-units` writes is tested end to end in
tests/surfaces/test_units_cli.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from importlib.resources import files
from pathlib import Path

import pytest

from dory.errors import InvalidUnitName, UnitPathUnsupported
from dory.service.units.render import (
    HTTP_TEMPLATE,
    TEMPLATES,
    WATCH_TEMPLATE,
    check_name,
    env_value,
    exec_path,
    instance_unit,
    is_ours_unedited,
    parse_env_value,
    render_unit,
    slug,
)

REPO = Path(__file__).resolve().parents[3]

HOSTILE_NAMES = [
    "",
    "../etc",
    "a/b",
    "my notes",
    "a@b",
    "-rf",
    ".hidden",
    "_x",
    "x\ny",
    "tab\there",
    "%i",
    "$HOME",
    "a\\x2db",
    "notes;rm",
    "ü",
    "n" * 65,
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_names_are_refused_with_a_valid_suggestion(name: str) -> None:
    with pytest.raises(InvalidUnitName) as caught:
        check_name(name)
    assert caught.value.code == "invalid_unit_name"
    suggestion = caught.value.details["suggestion"]
    assert check_name(suggestion) == suggestion


@pytest.mark.parametrize("name", ["notes", "Notes-2", "a", "work.notes", "x_y", "n" * 64])
def test_plain_names_are_kept(name: str) -> None:
    assert check_name(name) == name


@pytest.mark.parametrize(
    ("folder", "expected"),
    [
        ("My Notes", "my-notes"),
        ("Notizen-Über", "notizen-uber"),
        ("..", "corpus"),
        ("日本語", "corpus"),
        ("a" * 80, "a" * 64),
    ],
)
def test_the_default_name_is_a_slug_of_the_folder(folder: str, expected: str) -> None:
    assert slug(folder) == expected
    assert check_name(slug(folder)) == expected


def test_systemd_escape_agrees_that_slugs_need_no_escaping() -> None:
    """A slug without `-` is left as it is by systemd-escape (which escapes `-` by convention only:
    `systemctl` accepts it in an instance name as it is)."""
    if shutil.which("systemd-escape") is None:
        pytest.skip("systemd-escape not installed (apt-get install systemd)")
    for name in ("notes", "work.notes", "x_y", "Notes2"):
        done = subprocess.run(
            ["systemd-escape", f"--template={WATCH_TEMPLATE}", name], capture_output=True, text=True, check=True
        )
        assert done.stdout.strip() == instance_unit(WATCH_TEMPLATE, name) == f"dory-watch@{name}.service"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/opt/venv/bin/dory", "/opt/venv/bin/dory"),
        ("/home/me/my venv/bin/dory", '"/home/me/my venv/bin/dory"'),
        ("/x/100%/dory", '"/x/100%%/dory"'),
        ("/x/$HOME/dory", '"/x/$HOME/dory"'),
        ('/x/a"b\\c/dory', '"/x/a\\"b\\\\c/dory"'),
    ],
)
def test_exec_path_escapes_specifiers_and_quotes(path: str, expected: str) -> None:
    assert exec_path(Path(path)) == expected


@pytest.mark.parametrize("path", ["/x/a\nb", "/x/a\tb", "/x/\x7f", "/x/" + "\udcff"])
def test_paths_a_unit_cannot_hold_are_refused(path: str) -> None:
    for render in (exec_path, lambda p: env_value(p, "the corpus path")):
        with pytest.raises(UnitPathUnsupported) as caught:
            render(Path(path))
        assert caught.value.code == "unit_path_unsupported"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/home/me/notes", "/home/me/notes"),
        ("/home/me/My Notes", "'/home/me/My Notes'"),
        ("/x/%h $HOME \\n", "'/x/%h $HOME \\n'"),
    ],
)
def test_env_values_are_plain_or_single_quoted_and_read_back(path: str, expected: str) -> None:
    value = env_value(Path(path), "the corpus path")
    assert value == expected
    assert parse_env_value(value) == path


def test_a_single_quote_cannot_be_written_in_an_env_file() -> None:
    with pytest.raises(UnitPathUnsupported):
        env_value(Path("/home/me/Bob's notes"), "the corpus path")


@pytest.mark.parametrize("template", TEMPLATES)
def test_rendered_units_carry_a_marker_that_an_edit_breaks(template: str) -> None:
    text = render_unit(template, Path("/opt/venv/bin/dory"))
    assert is_ours_unedited(text)
    assert "@DORY_EXEC@" not in text
    assert is_ours_unedited(text.replace("Nice=5", "Nice=10")) is False
    assert is_ours_unedited(text.split("\n", 1)[1]) is False  # no marker: not ours
    assert is_ours_unedited("") is False


def test_the_templates_conflict_with_each_other_per_instance_and_read_the_instance_env_file() -> None:
    watch = render_unit(WATCH_TEMPLATE, Path("/opt/dory"))
    http = render_unit(HTTP_TEMPLATE, Path("/opt/dory"))
    assert "Conflicts=dory-http@%i.service" in watch.splitlines()
    assert "Conflicts=dory-watch@%i.service" in http.splitlines()
    for text in (watch, http):
        assert "EnvironmentFile=%h/.config/dory/units/%i.env" in text.splitlines()
    assert "ExecStart=/opt/dory ops watch" in watch.splitlines()
    assert "ExecStart=/opt/dory serve" in http.splitlines()


# -- package data ---------------------------------------------------------------------------------
def test_the_templates_are_package_data_of_dory_service_units() -> None:
    package = files("dory.service.units")
    for template in TEMPLATES:
        assert "@DORY_EXEC@" in package.joinpath(template).read_text(encoding="utf-8")
    # They live inside the package folder, so the wheel's `packages = ["dory"]` carries them.
    wheel = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["hatch"]["build"]["targets"]
    config = wheel["wheel"]
    assert "dory" in config["packages"]
    assert not config.get("exclude") and not config.get("only-include")
    assert (REPO / "dory" / "service" / "units" / WATCH_TEMPLATE).is_file()
    gitignore = (REPO / ".gitignore").read_text(encoding="utf-8")
    assert ".service" not in gitignore and "units" not in gitignore


def test_the_templates_are_read_from_the_package_not_the_repository(tmp_path: Path) -> None:
    """A copy of the package alone (as a wheel installs it, no repository around it) renders both units."""
    shutil.copytree(REPO / "dory", tmp_path / "site" / "dory", ignore=shutil.ignore_patterns("__pycache__"))
    code = (
        "import dory.service.units.render as r, pathlib, json\n"
        "print(json.dumps([r.__file__] + [r.render_unit(t, pathlib.Path('/opt/dory')) for t in r.TEMPLATES]))\n"
    )
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(tmp_path / "site")}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    module, watch, http = json.loads(done.stdout)
    assert module.startswith(str(tmp_path / "site"))
    assert "ExecStart=/opt/dory ops watch" in watch and "ExecStart=/opt/dory serve" in http
