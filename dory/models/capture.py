"""Automatic session capture: what `dory capture on|off|status` reports."""

from __future__ import annotations

from pydantic import Field

from dory.models.common import _Model
from dory.models.jobs import JobRun


class CaptureRoot(_Model):
    harness: str
    path: str
    exists: bool
    followed: int = Field(description="transcripts there that capture has read")


class CaptureStatus(_Model):
    enabled: bool = Field(
        description="in effect: the settings file, unless a DORY_CAPTURE_ENABLED variable says otherwise"
    )
    config_file: str = Field(description="where on/off is recorded: dory.toml, or corpora.toml for an added folder")
    changed: bool = Field(False, description="on/off: whether config_file was written")
    device: str
    roots: list[CaptureRoot]
    sweep_s: float
    server: str | None = Field(None, description="the remote Dory sessions are shipped to; None: this corpus")
    sessions_folder: str | None = Field(
        None, description="where captured sessions are saved here; None: nowhere (a corpus without output)"
    )
    token_set: bool = False
    spool_pending: int = 0
    spool_refused: int = Field(0, description="pieces the server refused for good (in the spool's dead/ folder)")
    shipping_error: str | None = None
    next_try: str | None = None
    daemon_running: bool = False
    last_run: JobRun | None = None
    warnings: list[str] = Field(default_factory=list)
