"""What active memory needs from the index besides search: the frontmatter facts its source policy reads."""

from __future__ import annotations

from dory.context.active import PageMeta
from dory.index.store import IndexStore

_BATCH = 500  # SQLite's default limit on bound parameters is far above this


def page_meta(store: IndexStore, paths: list[str]) -> dict[str, PageMeta]:
    """Type, visibility and sensitivity of each indexed path (a path not in the index is simply absent)."""
    out: dict[str, PageMeta] = {}
    for start in range(0, len(paths), _BATCH):
        batch = paths[start : start + _BATCH]
        rows = store.conn.execute(
            "SELECT path, doc_type, json_extract(frontmatter, '$.visibility'), "
            "json_extract(frontmatter, '$.sensitivity') FROM files "
            f"WHERE path IN ({','.join('?' * len(batch))})",
            batch,
        ).fetchall()
        for path, doc_type, visibility, sensitivity in rows:
            out[path] = PageMeta(_text(doc_type), _text(visibility), _text(sensitivity))
    return out


def _text(value: object) -> str | None:
    return None if value is None else str(value)
