"""Literal search: a case-insensitive substring of chunk text, title or path (no stemming, no ranking
model). Matches in a path or title come first, then body matches in path and line order."""

from __future__ import annotations

from dory.index.store import IndexStore
from dory.models import Scope
from dory.search.scope import scope_sql

_LIKE = "LIKE ? ESCAPE '\\'"


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def exact_candidates(store: IndexStore, needle: str, scope: Scope, limit: int) -> list[tuple[int, float]]:
    needle = needle.strip()
    if needle.startswith('"') and needle.endswith('"') and len(needle) > 2:
        needle = needle[1:-1]
    pattern = f"%{_like_escape(needle)}%"
    where, params = scope_sql(scope)
    sql = (
        f"SELECT c.id, CASE WHEN f.path {_LIKE} OR f.title {_LIKE} THEN 2 ELSE 1 END AS hit "
        "FROM chunks c JOIN files f ON f.id = c.file_id "
        f"WHERE (c.text {_LIKE} OR f.path {_LIKE} OR f.title {_LIKE}) AND {where} "
        "ORDER BY hit DESC, f.path, c.ordinal LIMIT ?"
    )
    rows = store.conn.execute(sql, [pattern] * 5 + params + [limit]).fetchall()
    return [(int(row[0]), float(row[1])) for row in rows]
