"""JSON config files as people and harnesses write them: read strictly, written back in their style.

Harness configs are edited by hand and by the harness itself (Claude Code rewrites `~/.claude.json`
all the time), so a change by Dory keeps what it can see of the file's style: the indentation unit
(tabs, two or four spaces, or one line), the final newline, CRLF line ends, `\\u` escapes, and the
order of every key (dicts keep it). A file Dory cannot read exactly is refused, never rewritten:
invalid JSON, a duplicate key (rewriting would drop one of them), NaN or Infinity, a top level
that is not an object.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dory.errors import ConfigError

_FIRST_INDENT = re.compile(r"\n([ \t]+)\S")


@dataclass(frozen=True)
class JsonStyle:
    indent: str | None  # one level of indentation; None: the whole object on one line
    final_newline: bool
    crlf: bool
    ascii_only: bool  # non-ASCII text written as \u escapes


NEW_FILE = JsonStyle(indent="  ", final_newline=True, crlf=False, ascii_only=False)


def style_of(text: str | None) -> JsonStyle:
    if not text or not text.strip():
        return NEW_FILE
    body = text.strip()
    found = _FIRST_INDENT.search(body.replace("\r\n", "\n"))
    return JsonStyle(
        indent=found.group(1) if found else (NEW_FILE.indent if body == "{}" else None),  # "{}": no style yet
        final_newline=text.endswith("\n"),
        crlf="\r\n" in text,
        ascii_only=text.isascii() and "\\u" in text,
    )


def load_object(text: str | None, path: Path) -> dict[str, Any]:
    """The file's top-level object ({} for a missing or blank file); ConfigError if it is not one."""
    if text is None or not text.strip():
        return {}
    try:
        value = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constants)
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}); Dory changed nothing", path=str(path)) from exc
    if not isinstance(value, dict):
        raise ConfigError(f"{path} holds a JSON {type(value).__name__}, not an object; Dory changed nothing")
    return value


def child_object(parent: dict[str, Any], key: str, path: Path) -> dict[str, Any] | None:
    """parent[key] when it is an object, None when absent; ConfigError when it is something else."""
    value = parent.get(key)
    if value is not None and not isinstance(value, dict):
        raise ConfigError(f"{path}: {key!r} is a JSON {type(value).__name__}, not an object; Dory changed nothing")
    return value


def dump(value: dict[str, Any], style: JsonStyle) -> str:
    text = json.dumps(value, indent=style.indent, ensure_ascii=style.ascii_only)
    if style.final_newline:
        text += "\n"
    return text.replace("\n", "\r\n") if style.crlf else text


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
