"""Where each agent harness keeps its MCP configuration (and Claude Code its hooks), and the entry
that makes it start or reach Dory.

| harness | user scope | project scope (the current folder) |
|---|---|---|
| claude-code | `~/.claude.json` + `~/.claude/settings.json` | `.mcp.json` + `.claude/settings.json` |
| codex | `~/.codex/config.toml` | — |
| cursor | `~/.cursor/mcp.json` | `.cursor/mcp.json` |
| claude-desktop | `~/.config/Claude/claude_desktop_config.json` (macOS: `~/Library/Application Support/Claude/`) | — |

`CLAUDE_CONFIG_DIR`, `CODEX_HOME` and `XDG_CONFIG_HOME` move those folders as they do for the
harnesses themselves.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dory.errors import UsageError
from dory.surfaces.connect.hooks import HooksEdit
from dory.surfaces.connect.servers import JsonServerEdit
from dory.surfaces.connect.tomlfile import TomlServerEdit

HARNESSES = ("claude-code", "codex", "cursor", "claude-desktop")
SCOPES = ("user", "project")
ConfigEdit = JsonServerEdit | TomlServerEdit | HooksEdit


@dataclass(frozen=True)
class Launch:
    """How the harness reaches Dory: `command` (the dory executable and its global options) runs
    the stdio server and the hooks; with `url` the harness talks MCP over HTTP to a running server."""

    command: tuple[str, ...]
    url: str | None = None
    token_env: str | None = None  # the environment variable holding the bearer token


@dataclass(frozen=True)
class Places:
    home: Path
    cwd: Path
    env: Mapping[str, str]


def edits(harness: str, scope: str, launch: Launch, hooks: bool, places: Places) -> list[ConfigEdit]:
    """The config files `dory connect HARNESS` changes, each with what it adds."""
    if harness == "claude-code":
        mcp_file, settings = _claude_code(scope, places)
        found: list[ConfigEdit] = [JsonServerEdit(mcp_file, _json_entry(harness, launch))]
        return found + ([HooksEdit(settings, launch.command)] if hooks else [])
    if harness == "cursor":
        folder = places.cwd if scope == "project" else places.home
        return [JsonServerEdit(folder / ".cursor" / "mcp.json", _json_entry(harness, launch))]
    if scope == "project":
        raise UsageError(f"{harness} has no project configuration; use --scope user", harness=harness)
    if harness == "codex":
        codex_home = _env_path(places.env, "CODEX_HOME") or places.home / ".codex"
        return [TomlServerEdit(codex_home / "config.toml", _codex_entry(launch))]
    if harness == "claude-desktop":
        if launch.url:
            raise UsageError("Claude Desktop starts MCP servers over stdio only: connect it without --http")
        return [JsonServerEdit(_claude_desktop_file(places), _json_entry(harness, launch))]
    raise UsageError(f"unknown harness {harness!r}; one of {', '.join(HARNESSES)}", harness=harness)


def _claude_code(scope: str, places: Places) -> tuple[Path, Path]:
    if scope == "project":
        return places.cwd / ".mcp.json", places.cwd / ".claude" / "settings.json"
    config_dir = _env_path(places.env, "CLAUDE_CONFIG_DIR")
    if config_dir:  # the user-scope servers then live inside it too
        return config_dir / ".claude.json", config_dir / "settings.json"
    return places.home / ".claude.json", places.home / ".claude" / "settings.json"


def _claude_desktop_file(places: Places) -> Path:
    if sys.platform == "darwin":
        folder = places.home / "Library" / "Application Support" / "Claude"
    else:
        folder = (_env_path(places.env, "XDG_CONFIG_HOME") or places.home / ".config") / "Claude"
    return folder / "claude_desktop_config.json"


def _env_path(env: Mapping[str, str], name: str) -> Path | None:
    value = env.get(name)
    return Path(value).expanduser() if value else None


def _stdio(launch: Launch) -> dict[str, Any]:
    return {"command": launch.command[0], "args": [*launch.command[1:], "mcp"]}


def _json_entry(harness: str, launch: Launch) -> dict[str, Any]:
    if not launch.url:
        return _stdio(launch)
    # Each harness expands its own syntax for an environment variable: no secret lands in the file.
    reference = {"claude-code": "${%s}", "cursor": "${env:%s}"}[harness]
    entry: dict[str, Any] = {"type": "http", "url": launch.url} if harness == "claude-code" else {"url": launch.url}
    if launch.token_env:
        entry["headers"] = {"Authorization": "Bearer " + reference % launch.token_env}
    return entry


def _codex_entry(launch: Launch) -> dict[str, Any]:
    if not launch.url:
        return _stdio(launch)
    entry: dict[str, Any] = {"url": launch.url}
    if launch.token_env:
        entry["bearer_token_env_var"] = launch.token_env
    return entry
