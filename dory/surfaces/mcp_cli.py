"""`dory mcp`: Dory's MCP server over stdio, for agent harnesses that start it themselves."""

from __future__ import annotations

import sys

import click

from dory.errors import DoryError
from dory.surfaces.clikit import emit_error


@click.command()
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="warning")
@click.pass_context
def mcp(ctx: click.Context, log_level: str) -> None:
    """Serve the MCP tools (search, get, write, memory_write, wake, recall, research, link, proposals, session_ingest)
    over stdio. stdout carries only the protocol; logs go to stderr. Writes go to the running daemon, or
    are made here under the index lock."""
    from dory.daemon.process import setup_logging
    from dory.service import DoryService
    from dory.service.settings import open_settings
    from dory.surfaces.mcp.server import DoryMCP

    root = ctx.find_root().params
    try:
        settings = open_settings(root.get("corpus"), {"state_dir": root.get("state_dir")})
    except DoryError as exc:
        emit_error(exc, as_json=False)
        sys.exit(exc.exit_code)
    setup_logging(log_level, None)  # stderr only
    service = DoryService(settings, surface="mcp")
    try:
        DoryMCP(service).run()
    finally:
        service.close()


COMMANDS: list[click.Command] = [mcp]
