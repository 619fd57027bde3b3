"""Scope filters (path glob, type, status, tags, since/until) as one SQL condition over `files f`."""

from __future__ import annotations

from typing import Any

from dory.models import Scope


def scope_sql(scope: Scope) -> tuple[str, list[Any]]:
    """A WHERE fragment (always valid, "1" when empty) and its parameters."""
    parts: list[str] = []
    params: list[Any] = []
    if scope.path:
        parts.append("f.path GLOB ?")
        params.append(_glob(scope.path))
    if scope.type:
        parts.append(f"f.doc_type IN ({','.join('?' * len(scope.type))})")
        params += scope.type
    if scope.status:
        parts.append(f"f.status IN ({','.join('?' * len(scope.status))})")
        params += scope.status
    for tag in scope.tags:
        parts.append("EXISTS (SELECT 1 FROM json_each(f.tags) WHERE json_each.value = ?)")
        params.append(tag.lstrip("#"))
    if scope.since:
        parts.append("f.doc_date >= ?")
        params.append(scope.since)
    if scope.until:
        parts.append("f.doc_date <= ?")
        params.append(scope.until)
    return (" AND ".join(parts) or "1"), params


def _glob(pattern: str) -> str:
    """SQLite GLOB: `*` already crosses folders, so `**` is `*`; a bare folder means everything in it."""
    pattern = pattern.replace("\\", "/").lstrip("./") or "*"
    while "**" in pattern:
        pattern = pattern.replace("**", "*")
    if pattern.endswith("/"):
        pattern += "*"
    elif not any(ch in pattern for ch in "*?[") and not pattern.endswith(".md"):
        pattern += "/*"
    return pattern
