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
    enabled: bool = Field(description="in effect: dory.toml, unless a DORY_CAPTURE_ENABLED variable says otherwise")
    config_file: str
    changed: bool = Field(False, description="on/off: whether dory.toml was written")
    device: str
    roots: list[CaptureRoot]
    sweep_s: float
    server: str | None = Field(None, description="the remote Dory sessions are shipped to; None: this corpus")
    token_set: bool = False
    spool_pending: int = 0
    spool_refused: int = Field(0, description="pieces the server refused for good (in the spool's dead/ folder)")
    shipping_error: str | None = None
    next_try: str | None = None
    daemon_running: bool = False
    last_run: JobRun | None = None
    warnings: list[str] = Field(default_factory=list)
