"""BM25 over FTS5: title, aliases/tags, headings and path weighted above the body."""

from __future__ import annotations

from dory.index.store import IndexStore
from dory.models import Scope
from dory.search.query import ParsedQuery, fts_match, trigram_match
from dory.search.scope import scope_sql

# Column weights in chunks_fts order: title, aliases, headings, path, body.
BM25_WEIGHTS = (4.0, 3.0, 2.0, 1.5, 1.0)
_BM25 = "bm25(chunks_fts, {})".format(", ".join(str(w) for w in BM25_WEIGHTS))


def lexical_candidates(store: IndexStore, parsed: ParsedQuery, scope: Scope, limit: int) -> list[tuple[int, float]]:
    """(chunk id, bm25 score) best first; bm25 scores are negative, lower is better."""
    match = fts_match(parsed)
    results: list[tuple[int, float]] = []
    if match is not None:
        results = _run(store, "chunks_fts", _BM25, match, scope, limit)
    tri = trigram_match(parsed) if store.has_trigram else None
    if tri is not None:
        seen = {chunk_id for chunk_id, _ in results}
        extra = _run(store, "chunks_tri", "bm25(chunks_tri)", tri, scope, limit)
        results += [(chunk_id, score) for chunk_id, score in extra if chunk_id not in seen]
        results.sort(key=lambda item: item[1])
    return results[:limit]


def _run(store: IndexStore, table: str, rank: str, match: str, scope: Scope, limit: int) -> list[tuple[int, float]]:
    if scope.is_empty():
        # Without filters FTS5 can rank and cut on its own, which is much faster than a join.
        sql = f"SELECT rowid, {rank} AS score FROM {table} WHERE {table} MATCH ? ORDER BY score LIMIT ?"
        rows = store.conn.execute(sql, (match, limit)).fetchall()
    else:
        where, params = scope_sql(scope)
        sql = (
            f"SELECT {table}.rowid, {rank} AS score FROM {table} "
            f"JOIN chunks c ON c.id = {table}.rowid JOIN files f ON f.id = c.file_id "
            f"WHERE {table} MATCH ? AND {where} ORDER BY score LIMIT ?"
        )
        rows = store.conn.execute(sql, (match, *params, limit)).fetchall()
    return [(int(row[0]), float(row[1])) for row in rows]
