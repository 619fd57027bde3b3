"""[daemon] and [jobs] settings: defaults, dory.toml, DORY_* environment, validation messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from dory.config import DaemonSettings
from dory.errors import ConfigError
from dory.jobs.registry import JOBS, schedule_spec
from dory.service import DoryService
from dory.service.settings import open_settings


def corpus(tmp_path: Path, toml: str = "") -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "dory.toml").write_text(toml, encoding="utf-8")
    return root


def test_defaults(tmp_path: Path) -> None:
    settings = open_settings(corpus(tmp_path), env={})
    assert settings.daemon == DaemonSettings()
    assert (settings.daemon.debounce_ms, settings.daemon.max_delay_ms, settings.daemon.catch_up_days) == (300, 2000, 7)
    assert settings.jobs.schedules() == {}
    assert schedule_spec(settings, "reconcile") == JOBS["reconcile"].default_schedule == "*/10 * * * *"
    assert settings.ledger_path == settings.state_dir / "jobs.sqlite"
    assert settings.daemon_state_path == settings.state_dir / "daemon.json"


def test_toml_sections(tmp_path: Path) -> None:
    root = corpus(
        tmp_path,
        '[daemon]\ndebounce_ms = 500\ncatch_up_days = 0\nlog_level = "debug"\n\n[jobs]\nreconcile = "0 */2 * * *"\n',
    )
    settings = open_settings(root, env={})
    assert (settings.daemon.debounce_ms, settings.daemon.catch_up_days, settings.daemon.log_level) == (500, 0, "debug")
    assert schedule_spec(settings, "reconcile") == "0 */2 * * *"


def test_unknown_job_lists_the_jobs(tmp_path: Path) -> None:
    root = corpus(tmp_path, '[jobs]\ndigest_weekly = "0 3 * * 1"\n')
    with pytest.raises(ConfigError) as info:
        open_settings(root, env={})
    assert info.value.message == f"[jobs] names an unknown job 'digest_weekly'; jobs: {', '.join(sorted(JOBS))}"
    assert "reconcile" in info.value.message
    assert info.value.details == {"job": "digest_weekly"}


def test_unknown_job_from_the_environment(tmp_path: Path) -> None:
    jobs = "capture, daily-digest, dream, maintain, migrate-inbox, reconcile, weekly-digest, wiki-refresh"
    with pytest.raises(ConfigError, match=f"unknown job 'nope'; jobs: {jobs}"):
        open_settings(corpus(tmp_path), env={"DORY_JOBS_NOPE": "off"})


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("61 * * * *", "jobs.reconcile: invalid cron schedule '61 * * * *': "),
        ("0 3 * * 9", "jobs.reconcile: invalid cron schedule '0 3 * * 9': weekday 9 is out of range 0-7"),
        ("hourly", "jobs.reconcile: 'hourly' is not a cron schedule (five fields, six with seconds first, or \"off\")"),
    ],
)
def test_bad_cron_is_a_config_error(tmp_path: Path, spec: str, message: str) -> None:
    root = corpus(tmp_path, f'[jobs]\nreconcile = "{spec}"\n')
    with pytest.raises(ConfigError) as info:
        open_settings(root, env={})
    assert info.value.message.startswith(message)
    assert info.value.details == {"job": "reconcile", "schedule": spec}


def test_schedule_must_be_a_string(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r'jobs\.reconcile must be a cron string or "off"'):
        open_settings(corpus(tmp_path, "[jobs]\nreconcile = 10\n"), env={})


def test_off_is_accepted(tmp_path: Path) -> None:
    settings = open_settings(corpus(tmp_path, '[jobs]\nreconcile = "off"\n'), env={})
    assert schedule_spec(settings, "reconcile") == "off"


def test_environment_schedule_is_picked_up(tmp_path: Path) -> None:
    root = corpus(tmp_path, '[jobs]\nreconcile = "0 * * * *"\n')
    settings = open_settings(root, env={"DORY_JOBS_RECONCILE": "*/5 * * * *"})
    assert settings.jobs.schedules() == {"reconcile": "*/5 * * * *"}
    assert schedule_spec(settings, "reconcile") == "*/5 * * * *"
    # an empty variable does not count
    assert schedule_spec(open_settings(root, env={"DORY_JOBS_RECONCILE": ""}), "reconcile") == "0 * * * *"


def test_flag_override_beats_the_environment(tmp_path: Path) -> None:
    settings = open_settings(corpus(tmp_path), {"jobs.reconcile": "off"}, env={"DORY_JOBS_RECONCILE": "*/5 * * * *"})
    assert schedule_spec(settings, "reconcile") == "off"


def test_bad_cron_from_the_environment(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"jobs\.reconcile: 'every minute' is not a cron schedule"):
        open_settings(corpus(tmp_path), env={"DORY_JOBS_RECONCILE": "every minute"})


def test_daemon_environment_values_are_coerced(tmp_path: Path) -> None:
    settings = open_settings(
        corpus(tmp_path),
        env={
            "DORY_DAEMON_DEBOUNCE_MS": "450",
            "DORY_DAEMON_HEARTBEAT_S": "2.5",
            "DORY_DAEMON_CATCH_UP_DAYS": "3",
            "DORY_DAEMON_LOG_LEVEL": "warning",
            "DORY_DAEMON_LOG_FILE": "/tmp/dory.log",
        },
    )
    daemon = settings.daemon
    assert daemon.debounce_ms == 450 and isinstance(daemon.debounce_ms, int)
    assert daemon.heartbeat_s == 2.5 and daemon.catch_up_days == 3
    assert (daemon.log_level, daemon.log_file) == ("warning", "/tmp/dory.log")


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        ({"DORY_DAEMON_DEBOUNCE_MS": "fast"}, "daemon.debounce_ms"),
        ({"DORY_DAEMON_DEBOUNCE_MS": "5"}, "daemon.debounce_ms"),
        ({"DORY_DAEMON_CATCH_UP_DAYS": "400"}, "daemon.catch_up_days"),
        ({"DORY_DAEMON_HEARTBEAT_S": "0.1"}, "daemon.heartbeat_s"),
        ({"DORY_DAEMON_LOG_LEVEL": "loud"}, "daemon.log_level"),
        ({"DORY_DAEMON_BOGUS": "1"}, "daemon.bogus"),
    ],
)
def test_invalid_daemon_settings(tmp_path: Path, env: dict[str, str], fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        open_settings(corpus(tmp_path), env=env)
    assert info.value.message.startswith("invalid settings: ")
    assert fragment in info.value.message


def test_a_schedule_set_in_code_is_checked_when_a_service_opens(tmp_path: Path) -> None:
    """Settings know nothing about jobs; the job registry checks them when a service opens."""
    settings = open_settings(corpus(tmp_path), env={})
    settings.jobs.reconcile = "nope"
    with pytest.raises(ConfigError, match="not a cron schedule"):
        DoryService(settings)
