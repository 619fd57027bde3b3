"""Entry points: `parse_source` and `detect_format`, JSON-lines splitting, and the reader for each format."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any, Literal, get_args

from dory.errors import UsageError
from dory.sessions.importers.build import _build
from dory.sessions.importers.claude_code import _read_claude
from dory.sessions.importers.codex import _CODEX_HANDLERS, _read_codex
from dory.sessions.importers.common import ImportResult, Problem, _Source
from dory.sessions.importers.jsonl import _read_jsonl
from dory.sessions.importers.markdown import _import_markdown

DetectedFormat = Literal["markdown", "jsonl", "claude-code", "codex"]
Format = Literal["auto", DetectedFormat]
FORMATS: tuple[str, ...] = get_args(Format)[1:]
DEFAULT_AGENTS = {"claude-code": "claude-code", "codex": "codex", "jsonl": "unknown", "markdown": "unknown"}

_SNIFF_LINES = 50


def parse_source(
    data: bytes,
    fmt: Format = "auto",
    source_path: str | None = None,
    agent: str | None = None,
    device: str = "unknown",
    *,
    now: dt.datetime | None = None,
) -> ImportResult:
    """The sessions in one harness file, with problems and the redaction count (see the package docstring)."""
    chosen = detect_format(data, source_path) if fmt == "auto" else fmt
    if chosen not in FORMATS:
        raise UsageError(f"unknown session format {fmt!r}; expected one of: auto, {', '.join(FORMATS)}")
    if chosen == "markdown":
        return _import_markdown(data, source_path, agent, device)
    records, problems, truncated = _json_records(data)
    source = _READERS[chosen](records)
    source.problems = sorted(problems + source.problems, key=lambda problem: problem.line)
    source.truncated = truncated
    result = _build(source, chosen, data, source_path, agent or DEFAULT_AGENTS[chosen], device, now)
    result.resume_line = source.drafts[-1].line if source.drafts else None
    return result


def detect_format(data: bytes, source_path: str | None = None) -> DetectedFormat:
    """ "markdown", "codex", "claude-code" or "jsonl", from the content first and the path second."""
    head = data[: 256 * 1024].decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    if not head.startswith("{"):
        return "markdown"
    for line in head.split("\n")[:_SNIFF_LINES]:
        try:
            record = json.loads(line, strict=False)
        except (ValueError, RecursionError):
            continue
        found = _sniff(record) if isinstance(record, dict) else None
        if found:
            return found
    path = (source_path or "").replace("\\", "/")
    if "/.codex/" in path or PurePosixPath(path).name.startswith("rollout-"):
        return "codex"
    return "claude-code" if "/.claude/" in path else "jsonl"


def _sniff(record: dict[str, Any]) -> Literal["codex", "claude-code"] | None:
    kind = record.get("type")
    if not isinstance(kind, str | None):
        return None
    if "payload" in record and kind in _CODEX_HANDLERS:
        return "codex"
    if "instructions" in record and "id" in record and "type" not in record:
        return "codex"  # the header line of a legacy rollout
    content = record.get("content")
    if isinstance(content, list) and any(
        isinstance(part, dict) and part.get("type") in ("input_text", "output_text") for part in content
    ):
        return "codex"
    if "sessionId" in record or (kind == "summary" and "leafUuid" in record):
        return "claude-code"
    if kind in ("user", "assistant") and isinstance(record.get("message"), dict):
        return "claude-code"
    return None


def _json_records(data: bytes) -> tuple[list[tuple[int, dict[str, Any]]], list[Problem], bool]:
    """(line number, object) per JSON line; problems for the others; whether the last line was cut."""
    lines = data.decode("utf-8", "replace").removeprefix("\ufeff").split("\n")
    records: list[tuple[int, dict[str, Any]]] = []
    problems: list[Problem] = []
    truncated = False
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            # strict=False: raw control characters inside strings are tolerated here and cleaned later.
            record = json.loads(line, strict=False)
        except (ValueError, RecursionError) as exc:
            if number == len(lines):  # only a last line without its newline can be cut mid-write
                truncated = True
                problems.append(Problem(number, "truncated last line: no newline and incomplete JSON"))
            else:
                problems.append(Problem(number, f"not valid JSON: {_reason(exc)}"))
            continue
        if isinstance(record, dict):
            records.append((number, record))
        else:
            problems.append(Problem(number, f"expected a JSON object, found {type(record).__name__}"))
    return records, problems, truncated


def _reason(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at column {exc.colno}"
    return "nested too deeply" if isinstance(exc, RecursionError) else str(exc)


_READERS: dict[str, Callable[[list[tuple[int, dict[str, Any]]]], _Source]] = {
    "jsonl": _read_jsonl,
    "claude-code": _read_claude,
    "codex": _read_codex,
}
