"""Dory's table in Codex's `config.toml`: `[mcp_servers.dory]`, with the person's comments, order
and spacing kept byte for byte.

A table of Dory's own is appended at the end of the file, after a blank line, so no byte of what
was there moves; `remove` cuts exactly that text back out. Each cut or append is checked by parsing
the result (tomllib, the standard's strict reader): when the text route would change anything else
(the table was edited by hand, or `mcp_servers` is an inline table), tomlkit edits the document
instead, which keeps comments and order though not always the blank lines.
"""

from __future__ import annotations

import copy
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from dory.errors import ConfigError

TABLE = "mcp_servers"
NAME = "dory"


@dataclass(frozen=True)
class TomlServerEdit:
    path: Path
    entry: dict[str, Any]
    what: str = f"MCP server {NAME!r}"

    def add(self, text: str | None) -> str:
        plain = self._read(text or "")
        current = _entry(plain, self.path)
        if current == self.entry and text is not None:
            return text
        base = self.remove(text or "") if current is not None else (text or "")
        expected = _with_entry(self._read(base), self.entry)
        appended = base + _separator(base) + _block(self.entry)
        if _parses_to(appended, expected):
            return appended
        document = tomlkit.parse(base)
        document.setdefault(TABLE, tomlkit.table(is_super_table=True))[NAME] = self.entry
        return self._checked(tomlkit.dumps(document), expected)

    def remove(self, text: str) -> str:
        plain = self._read(text)
        current = _entry(plain, self.path)
        if current is None:
            return text
        expected = _without_entry(plain)
        block = _block(current)
        for piece in ("\n" + block, block):  # with the blank line Dory put before it, else alone
            cut = _cut(text, piece)
            if cut is not None and _parses_to(cut, expected):
                return cut
        document = tomlkit.parse(text)
        servers = document[TABLE]
        del servers[NAME]
        if not servers:
            del document[TABLE]
        return self._checked(tomlkit.dumps(document), expected)

    def _checked(self, text: str, expected: dict[str, Any]) -> str:
        if not _parses_to(text, expected):
            raise ConfigError(f"{self.path}: Dory cannot change its table without changing others; edit it by hand")
        return text

    def _read(self, text: str) -> dict[str, Any]:
        try:
            plain = tomllib.loads(text)
            tomlkit.parse(text)  # what edits the file must read it too
        except (tomllib.TOMLDecodeError, TOMLKitError) as exc:
            raise ConfigError(
                f"{self.path} is not valid TOML ({exc}); Dory changed nothing", path=str(self.path)
            ) from exc
        return plain


def _entry(plain: dict[str, Any], path: Path) -> Any:
    servers = plain.get(TABLE)
    if servers is not None and not isinstance(servers, dict):
        raise ConfigError(f"{path}: {TABLE} is not a table; Dory changed nothing", path=str(path))
    return servers.get(NAME) if servers else None


def _block(entry: dict[str, Any]) -> str:
    return tomlkit.dumps({TABLE: {NAME: entry}})


def _separator(base: str) -> str:
    if not base:
        return ""
    return "\n" if base.endswith("\n") else "\n\n"


def _cut(text: str, piece: str) -> str | None:
    start = text.find(piece)
    if start < 0 or (start > 0 and text[start - 1] != "\n"):
        return None
    return text[:start] + text[start + len(piece) :]


def _with_entry(plain: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    result = copy.deepcopy(plain)
    result.setdefault(TABLE, {})[NAME] = entry
    return result


def _without_entry(plain: dict[str, Any]) -> dict[str, Any]:
    result = copy.deepcopy(plain)
    del result[TABLE][NAME]
    if not result[TABLE]:
        del result[TABLE]
    return result


def _parses_to(text: str, expected: dict[str, Any]) -> bool:
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return False
    if parsed.get(TABLE) == {} and TABLE not in expected:
        del parsed[TABLE]  # an empty `[mcp_servers]` header left behind changes nothing
    return parsed == expected
