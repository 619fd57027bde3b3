"""`dory serve` (the HTTP surface beside the daemon) and `dory auth` (its bearer tokens)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from dory.errors import DoryError
from dory.surfaces import render
from dory.surfaces.clikit import Result, command, emit_error

if TYPE_CHECKING:
    from dory.config import Settings

SCOPES = ["read", "write", "sessions", "admin"]


def _settings(ctx: click.Context, **overrides: Any) -> Settings:
    from dory.service.settings import open_settings

    root = ctx.find_root().params
    return open_settings(root.get("corpus"), {"state_dir": root.get("state_dir"), **overrides})


@click.command()
@click.option("--host", help="address to listen on (default [http] host: 127.0.0.1)")
@click.option("--port", type=click.IntRange(0, 65535), help="port (default [http] port: 8765; 0 picks a free one)")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), help="default: daemon.log_level")
@click.option("--log-file", help="also append logs to this file")
@click.option(
    "--wait", "wait_s", default=60.0, show_default=True, type=float, help="seconds to wait for the index lock"
)
@click.pass_context
def serve(
    ctx: click.Context, host: str | None, port: int | None, log_level: str | None, log_file: str | None, wait_s: float
) -> None:
    """Serve HTTP (/v1, /healthz, /readyz, /metrics, /v1/stream, the /wiki for people) and run the daemon
    in the same process, until SIGTERM / Ctrl-C. Refuses a non-loopback address unless tokens exist
    (`dory auth new`)."""
    import faulthandler

    from dory.daemon.process import setup_logging
    from dory.surfaces.http.server import serve as run_server

    # A native crash of the long-running server (once seen as SIGSEGV at shutdown on a loaded CI
    # machine) leaves its Python stacks on stderr, for the service log, instead of nothing.
    faulthandler.enable()
    try:
        settings = _settings(ctx, **{"daemon.log_level": log_level, "daemon.log_file": log_file})
        setup_logging(settings.daemon.log_level, settings.daemon.log_file)
        code = run_server(settings, host or settings.http.host, settings.http.port if port is None else port, wait_s)
    except DoryError as exc:
        emit_error(exc, as_json=False)
        sys.exit(exc.exit_code)
    sys.exit(code)


@click.group()
def auth() -> None:
    """Bearer tokens for `dory serve`: shown once, kept only as salted hashes (state folder, mode 0600)."""


@auth.command(name="new")
@click.argument("name")
@click.option("--scope", "scopes", multiple=True, type=click.Choice(SCOPES), help="repeatable; default read")
@click.option("--expires", help="a lifetime (30d, 12h, 90m) or an ISO date; default never")
@click.pass_context
@command
def auth_new(ctx: click.Context, name: str, scopes: tuple[str, ...], expires: str | None) -> Result:
    """Create a token NAME (recorded as the agent of its writes); its secret is printed this once."""
    from dory.models import TokenCreateRequest  # pydantic models: loaded only when a command runs
    from dory.service.tokens import TokenStore

    req = TokenCreateRequest.model_validate({"name": name, "scopes": list(scopes) or ["read"], "expires": expires})
    created = TokenStore(_settings(ctx).tokens_path).create(req)
    return created.model_dump(mode="json"), lambda: render.token_created(created)


@auth.command(name="list")
@click.pass_context
@command
def auth_list(ctx: click.Context) -> Result:
    """Every token: name, scopes, created, expiry, revoked (never the secret)."""
    from dory.service.tokens import TokenStore

    tokens = TokenStore(_settings(ctx).tokens_path).list()
    return tokens.model_dump(mode="json"), lambda: render.tokens(tokens)


@auth.command(name="revoke")
@click.argument("name")
@click.pass_context
@command
def auth_revoke(ctx: click.Context, name: str) -> Result:
    """Revoke the token NAME; a running server refuses it from its next request."""
    from dory.service.tokens import TokenStore

    info = TokenStore(_settings(ctx).tokens_path).revoke(name)
    return info.model_dump(mode="json"), lambda: f"revoked {info.name} ({info.revoked_at})"


COMMANDS: list[click.Command] = [serve, auth]
