"""Shared by the models: the strict base model, search modes and aliases, request size and nesting
limits, the day validator, the JSON reader for payloads from outside."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

SearchMode = Literal["bm25", "vector", "hybrid", "exact", "recall"]
MODE_ALIASES: dict[str, SearchMode] = {
    "bm25": "bm25",
    "text": "bm25",
    "keyword": "bm25",
    "lexical": "bm25",
    "vector": "vector",
    "semantic": "vector",
    "hybrid": "hybrid",
    "exact": "exact",
    "recall": "recall",
}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


def iso_day(value: str | None) -> str | None:
    """A YYYY-MM-DD day (a longer ISO time is cut to its day), for since/until fields."""
    if value is None:
        return None
    try:
        return dt.date.fromisoformat(value[:10]).isoformat()
    except ValueError as exc:
        raise ValueError(f"not a YYYY-MM-DD date: {value!r}") from exc


# Content is checked against `[write] max_bytes` by the safety scan (a specific error); this
# bound only stops a request from exhausting memory before that.
MAX_REQUEST_CHARS = 4_000_000

# A harness file this large is refused before parsing (Claude Code transcripts reach ~15 MB).
MAX_INGEST_BYTES = 64 * 1024 * 1024

# How deep a JSON or YAML value from outside may nest (frontmatter, messages). A note's metadata
# needs a few levels; hundreds break every serialiser on the way (recursion limits) with a traceback.
MAX_NESTING = 32


def check_nesting(value: Any, limit: int = MAX_NESTING) -> Any:
    """`value` unchanged, or ValueError when its lists and mappings nest deeper than `limit`.
    Iterative: the value being checked may be deeper than the interpreter's recursion limit."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list | tuple) else ()
        if children and depth >= limit:
            raise ValueError(f"nested deeper than {limit} levels")
        stack.extend((child, depth + 1) for child in children)
    return value


def loads_json(text: str | bytes, limit: int | None = MAX_NESTING) -> Any:
    """json.loads for payloads from outside: every failure is a ValueError (a JSONDecodeError, or
    nesting deeper than `limit`, or than the parser's own recursion limit when `limit` is None)."""
    try:
        value = json.loads(text)
    except RecursionError as exc:
        raise ValueError(f"nested deeper than {limit} levels" if limit else "nested too deeply to parse") from exc
    return value if limit is None else check_nesting(value, limit)
