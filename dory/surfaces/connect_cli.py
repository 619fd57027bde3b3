"""`dory connect HARNESS` and `dory disconnect HARNESS`: add Dory to an agent harness (Claude Code,
Codex, Cursor, Claude Desktop) and take it out again, exactly."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import click

from dory.corpora import locate
from dory.errors import UsageError
from dory.surfaces.clikit import Result, command
from dory.surfaces.connect import apply, harnesses
from dory.surfaces.connect.apply import FileChange
from dory.surfaces.connect.manifest import Manifest, manifest_path

SCOPE = click.option(
    "--scope",
    type=click.Choice(harnesses.SCOPES),
    default="user",
    show_default=True,
    help="user: your config, every session; project: this folder's (to commit with the repository)",
)
DRY_RUN = click.option("--dry-run", is_flag=True, help="print the diff of each file; change nothing")

# Harnesses whose transcripts the daemon's capture reads (dory/sessions/harness.py).
CAPTURED = ("claude-code", "codex")
CONNECTED = {"created": "created with {what}", "updated": "{what} added", "unchanged": "already connected ({what})"}
DISCONNECTED = {
    "restored": "put back byte for byte as it was before connect",
    "deleted": "deleted (connect had created it)",
    "removed": "{what} removed, the rest kept",
    "unchanged": "nothing of Dory's in it",
    "absent": "does not exist",
}


@click.command()
@click.argument("harness", type=click.Choice(harnesses.HARNESSES))
@SCOPE
@DRY_RUN
@click.option("--no-hooks", is_flag=True, help="claude-code: the MCP server only, no session hooks")
@click.option(
    "--no-capture", is_flag=True, help="claude-code, codex: leave the daemon's automatic session capture as it is"
)
@click.option("--http", "url", metavar="URL", help="reach a running `dory serve` at URL (its /mcp) instead of stdio")
@click.option("--token-env", metavar="VAR", help="with --http: the environment variable holding the bearer token")
@click.pass_context
@command
def connect(
    ctx: click.Context,
    harness: str,
    scope: str,
    dry_run: bool,
    no_hooks: bool,
    no_capture: bool,
    url: str | None,
    token_env: str | None,
) -> Result:
    """Add Dory's MCP server (and, for claude-code, its session hooks) to an agent harness's config;
    for claude-code and codex also switch on the daemon's capture of their transcripts."""
    places = _places()
    edits = harnesses.edits(harness, scope, _launch(ctx, url, token_env), not no_hooks, places)
    changes = apply.connect(edits, Manifest(manifest_path(places.home, places.env)), dry_run)
    captured = harness in CAPTURED and not (no_capture or dry_run or url)
    if captured:
        from dory.config import load_settings  # pydantic: loaded only when this command needs settings
        from dory.service.capture import set_capture_for

        root = ctx.find_root().params
        set_capture_for(load_settings(root.get("corpus"), {"state_dir": root.get("state_dir")}), True)
    payload, human = _result(harness, scope, changes, dry_run, CONNECTED)
    payload["capture"] = captured
    note = "\nsession capture: on ([capture] enabled in dory.toml; the daemon picks up new transcripts)"
    return payload, (lambda: human() + note) if captured else human


@click.command()
@click.argument("harness", type=click.Choice(harnesses.HARNESSES))
@SCOPE
@DRY_RUN
@command
def disconnect(harness: str, scope: str, dry_run: bool) -> Result:
    """Take out what `dory connect` added: each file back as it was if nothing else changed it since."""
    places = _places()
    # Removing needs only where the files are: any launch finds Dory's entries by name and command.
    edits = harnesses.edits(harness, scope, harnesses.Launch(("dory",)), True, places)
    changes = apply.disconnect(edits, Manifest(manifest_path(places.home, places.env)), dry_run)
    return _result(harness, scope, changes, dry_run, DISCONNECTED)


def _places() -> harnesses.Places:
    return harnesses.Places(home=Path.home(), cwd=Path.cwd(), env=os.environ)


def _launch(ctx: click.Context, url: str | None, token_env: str | None) -> harnesses.Launch:
    dory = _executable()
    if url:
        server = url.rstrip("/").removesuffix("/mcp")
        return harnesses.Launch((dory, "--server", server), url=server + "/mcp", token_env=token_env)
    if token_env:
        raise UsageError("--token-env goes with --http")
    root = ctx.find_root().params
    command: tuple[str, ...] = (dory, "--corpus", str(locate(root.get("corpus"), os.environ).root))
    if root.get("state_dir"):
        command += ("--state-dir", str(Path(root["state_dir"]).expanduser().resolve()))
    return harnesses.Launch(command)


def _executable() -> str:
    """The absolute path of this installation's `dory`, so the harness runs the same one."""
    beside = Path(sys.executable).parent / "dory"
    if beside.is_file():
        return str(beside)
    found = shutil.which("dory")
    if found:
        return str(Path(found).absolute())
    raise UsageError("cannot find the `dory` executable next to this Python or on PATH; install Dory first")


def _result(harness: str, scope: str, changes: list[FileChange], dry_run: bool, words: dict[str, str]) -> Result:
    payload: dict[str, Any] = {
        "harness": harness,
        "scope": scope,
        "dry_run": dry_run,
        "files": [change.payload(dry_run) for change in changes],
    }

    def human() -> str:
        lines = [change.diff() for change in changes if dry_run and change.diff()]
        for change in changes:
            line = f"{change.path}: " + words[change.action].format(what=change.what)
            lines.append(line + (f" (backup: {change.backup})" if change.backup else ""))
        if dry_run:
            lines.append("dry run: nothing was written")
        elif any(change.action not in ("unchanged", "absent") for change in changes):
            lines.append(f"restart {harness} (or start a new session) to pick this up")
        return "\n".join(line.rstrip("\n") for line in lines)

    return payload, human


COMMANDS: list[click.Command] = [connect, disconnect]
