"""`set_capture`, the one writer of `[capture]` in dory.toml (`dory capture on|off`, `dory connect`):
the user's file keeps every comment and section, a second call changes nothing, and a file that is
not valid TOML is refused and left exactly as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from dory.config import load_settings
from dory.corpus.template import copy_template
from dory.errors import ConfigError
from dory.service.capture import capture_status, set_capture

MINE = "# my settings\n[digest]\nquiet_minutes = 5  # short days\n\n[capture]\n# my capture notes\nsweep_s = 30.0\n"


def test_switching_capture_keeps_the_users_file(tmp_path: Path) -> None:
    (tmp_path / "dory.toml").write_text(MINE)
    assert set_capture(tmp_path, True) is True
    on = (tmp_path / "dory.toml").read_text()
    assert on == MINE + "enabled = true\n"
    assert set_capture(tmp_path, True) is False  # idempotent
    assert set_capture(tmp_path, False) is True
    assert (tmp_path / "dory.toml").read_text() == MINE + "enabled = false\n"
    settings = load_settings(tmp_path, env={})
    assert (settings.capture.enabled, settings.capture.sweep_s, settings.digest.quiet_minutes) == (False, 30.0, 5)


def test_the_template_and_a_missing_file_get_a_capture_section(tmp_path: Path) -> None:
    copy_template(tmp_path / "t")
    assert set_capture(tmp_path / "t", True, server="http://home:8765")
    settings = load_settings(tmp_path / "t", env={})
    assert (settings.capture.enabled, settings.capture.server) == (True, "http://home:8765")
    (tmp_path / "bare").mkdir()
    assert set_capture(tmp_path / "bare", True)
    assert (tmp_path / "bare" / "dory.toml").read_text() == "[capture]\nenabled = true\n"
    away = {"capture.claude_root": str(tmp_path / "claude"), "capture.codex_root": str(tmp_path / "codex")}
    status = capture_status(load_settings(tmp_path / "bare", away, env={}))
    assert status.enabled and not status.daemon_running and status.server is None


def test_a_broken_dory_toml_is_refused_and_never_rewritten(tmp_path: Path) -> None:
    (tmp_path / "dory.toml").write_bytes(b"[capture\nenabled = tru\n")
    with pytest.raises(ConfigError):
        set_capture(tmp_path, True)
    assert (tmp_path / "dory.toml").read_bytes() == b"[capture\nenabled = tru\n"
