"""Dory's entry among a JSON config's MCP servers (`{"mcpServers": {"dory": {...}}}`): Claude Code,
Cursor and Claude Desktop share this shape."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dory.surfaces.connect.jsonfile import child_object, dump, load_object, style_of

SERVERS_KEY = "mcpServers"
SERVER_NAME = "dory"


@dataclass(frozen=True)
class JsonServerEdit:
    path: Path
    entry: dict[str, Any]
    what: str = f"MCP server {SERVER_NAME!r}"

    def add(self, text: str | None) -> str:
        """The file with Dory's entry set (an entry of another shape is replaced where it stands)."""
        config = load_object(text, self.path)
        servers = child_object(config, SERVERS_KEY, self.path)
        if servers is not None and servers.get(SERVER_NAME) == self.entry and text is not None:
            return text
        config.setdefault(SERVERS_KEY, {})[SERVER_NAME] = self.entry
        return dump(config, style_of(text))

    def remove(self, text: str) -> str:
        """The file without Dory's entry, and without `mcpServers` if that leaves it empty."""
        config = load_object(text, self.path)
        servers = child_object(config, SERVERS_KEY, self.path)
        if servers is None or SERVER_NAME not in servers:
            return text
        del servers[SERVER_NAME]
        if not servers:
            del config[SERVERS_KEY]
        return dump(config, style_of(text))
