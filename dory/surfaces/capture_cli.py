"""`dory capture on|off|status`: automatic capture of agent sessions by the daemon."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from dory.surfaces import render
from dory.surfaces.clikit import Result, command

if TYPE_CHECKING:
    from dory.config import Settings


def _settings(ctx: click.Context) -> Settings:
    from dory.service.settings import open_settings

    root = ctx.find_root().params
    return open_settings(root.get("corpus"), {"state_dir": root.get("state_dir")})


@click.group()
def capture() -> None:
    """Automatic capture: the daemon reads new Claude Code and Codex transcripts as they grow."""


def _switch(ctx: click.Context, enabled: bool, server: str | None) -> Result:
    from dory.service.capture import capture_status, set_capture_for

    changed = set_capture_for(_settings(ctx), enabled, server)
    status = capture_status(_settings(ctx), changed)
    return status.model_dump(mode="json"), lambda: render.capture_status(status)


@capture.command(name="on")
@click.option("--server", help="ship sessions to this remote `dory serve` instead (token: DORY_CAPTURE_TOKEN)")
@click.pass_context
@command
def capture_on(ctx: click.Context, server: str | None) -> Result:
    """Switch capture on in dory.toml (corpora.toml for a folder added with `dory add`); a running daemon
    picks it up at its next heartbeat."""
    return _switch(ctx, True, server)


@capture.command(name="off")
@click.pass_context
@command
def capture_off(ctx: click.Context) -> Result:
    """Switch capture off (in the same file as `on`); what was captured stays."""
    return _switch(ctx, False, None)


@capture.command(name="status")
@click.pass_context
@command
def capture_status_cmd(ctx: click.Context) -> Result:
    """Whether capture is on, where it reads, what it has followed, and what waits to be shipped."""
    from dory.service.capture import capture_status

    status = capture_status(_settings(ctx))
    return status.model_dump(mode="json"), lambda: render.capture_status(status)


COMMANDS: list[click.Command] = [capture]
