"""Shared by the models: the strict base model, search modes and aliases, request size limits, the day validator."""

from __future__ import annotations

import datetime as dt
from typing import Literal

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
