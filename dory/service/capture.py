"""Automatic session capture as the surfaces see it: switch it on or off, and say how it stands.

`set_capture` is the one place that writes `[capture]` into dory.toml (`dory capture on|off`, and
`dory connect` when it installs Dory into a harness), or, for a folder added with `dory add`, into
its entry in corpora.toml (never into the folder). It edits the file with tomlkit, so the user's
comments, order and other sections stay as they were, and replaces it atomically. A running daemon
notices the change at its next heartbeat and starts or stops capturing (dory/daemon/reload.py).
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from dory.config import CONFIG_FILE, Settings
from dory.corpus.atomic import write_atomic
from dory.corpus.paths import SESSIONS_ROOT
from dory.corpus.roots import read_root, settings_file
from dory.errors import ConfigError, NotFound
from dory.jobs.ledger import JobLedger
from dory.jobs.runner import job_run
from dory.models import CaptureRoot, CaptureStatus, JobRun
from dory.service.daemon_state import daemon_status
from dory.sessions.capture import roots
from dory.sessions.capture_ledger import CaptureLedger
from dory.sessions.harness import this_device
from dory.sessions.shipping import Spool

ENABLED_ENV = "DORY_CAPTURE_ENABLED"


def set_capture(corpus: Path, enabled: bool, server: str | None = None) -> bool:
    """Write `[capture] enabled` (and `server`, when given) into the corpus's dory.toml; True when
    the file changed. A file that is not valid TOML is refused, never rewritten."""
    return _set_in(corpus / CONFIG_FILE, (), enabled, server)


def set_capture_for(settings: Settings, enabled: bool, server: str | None = None) -> bool:
    """`set_capture` where this corpus keeps its settings: its dory.toml, or its entry in corpora.toml
    for a folder Dory must not write into (`[corpora.<name>.capture]`)."""
    path, keys = settings_file(settings)
    return _set_in(path, keys, enabled, server)


def _set_in(path: Path, keys: tuple[str, ...], enabled: bool, server: str | None) -> bool:
    try:
        before = path.read_text(encoding="utf-8") if path.is_file() else ""
        doc = tomlkit.parse(before)
    except (OSError, UnicodeDecodeError, TOMLKitError) as exc:
        raise ConfigError(f"{path}: {exc}; fix it, then run this again", path=str(path)) from exc
    table: Any = doc
    for key in (*keys, "capture"):
        if table.get(key) is None:
            table.add(key, tomlkit.table())
        table = table[key]
    table["enabled"] = enabled
    if server is not None:
        table["server"] = server
    after = tomlkit.dumps(doc)
    if after == before:
        return False
    write_atomic(path, after.encode("utf-8"))
    return True


def capture_status(settings: Settings, changed: bool = False) -> CaptureStatus:
    cfg = settings.capture
    ledger = CaptureLedger.open_existing(settings.capture_db_path)
    try:
        followed = ledger.counts() if ledger else {}
        shipping = ledger.shipping() if ledger else None
    finally:
        if ledger is not None:
            ledger.close()
    spool = Spool(settings.capture_spool_path)
    status = CaptureStatus(
        enabled=cfg.enabled,
        config_file=str(settings_file(settings)[0]),
        changed=changed,
        device=cfg.device or this_device(),
        roots=[
            CaptureRoot(harness=harness, path=str(root), exists=root.is_dir(), followed=followed.get(harness, 0))
            for harness, root in roots(settings).items()
        ],
        sweep_s=cfg.sweep_s,
        server=cfg.server,
        token_set=bool(cfg.token),
        spool_pending=len(spool.pending()),
        spool_refused=spool.dead(),
        daemon_running=daemon_status(settings).running,
        last_run=_last_run(settings),
    )
    if shipping is not None and shipping.failures:
        status.shipping_error = shipping.last_error
        status.next_try = dt.datetime.fromtimestamp(shipping.next_try, dt.UTC).isoformat(timespec="seconds")
    try:
        status.sessions_folder = str(read_root(settings, SESSIONS_ROOT) / SESSIONS_ROOT)
    except NotFound:
        if not cfg.server:
            status.warnings.append("this corpus has no output folder (--no-output): captured sessions cannot be saved")
    if os.environ.get(ENABLED_ENV):
        status.warnings.append(f"{ENABLED_ENV}={os.environ[ENABLED_ENV]} overrides {status.config_file}")
    if cfg.enabled and not status.daemon_running:
        status.warnings.append("capture runs in the daemon: start it with `dory ops watch` (or its systemd unit)")
    return status


def _last_run(settings: Settings) -> JobRun | None:
    ledger = JobLedger.open_existing(settings.ledger_path)
    if ledger is None:
        return None
    try:
        row = ledger.last_run("capture")
    finally:
        ledger.close()
    return job_run(row) if row else None
