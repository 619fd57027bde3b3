"""BM25 over FTS5: title, aliases/tags, headings and path weighted above the body.

The cost of an FTS5 search is about the number of rows its MATCH admits, each scored by bm25. An OR
of every query word admits every row holding any of them, and one common word ("use", "cells") can
make that most of the index. So candidates are first drawn only from the rows that hold a word that
is not common in the index (in at most 1% of the chunks, then 10%: common_terms.py), still scored
over every word of the query. Only when that leaves fewer than `limit` rows does the OR of every
word run, and its list is the answer, as before. Indexes under MIN_ROWS chunks skip the split. Every
row either way holds at least one of the query's own words: a lexical hit stays a real term match
(floor.py relies on that).
"""

from __future__ import annotations

from dataclasses import replace

from dory.index.store import IndexStore
from dory.models import Scope
from dory.search.common_terms import COMMON_SHARES, MIN_ROWS, term_rows
from dory.search.query import ParsedQuery, fts_match, trigram_match
from dory.search.scope import scope_sql

# Column weights in chunks_fts order: title, aliases, headings, path, body.
BM25_WEIGHTS = (4.0, 3.0, 2.0, 1.5, 1.0)
_BM25 = "bm25(chunks_fts, {})".format(", ".join(str(w) for w in BM25_WEIGHTS))


def lexical_candidates(
    store: IndexStore, parsed: ParsedQuery, scope: Scope, limit: int, split_from: int = MIN_ROWS
) -> list[tuple[int, float]]:
    """(chunk id, bm25 score) best first; bm25 scores are negative, lower is better. Indexes with
    fewer than `split_from` chunks always run the plain OR."""
    results = _words(store, parsed, scope, limit, split_from)
    tri = trigram_match(parsed) if store.has_trigram else None
    if tri is not None:
        seen = {chunk_id for chunk_id, _ in results}
        extra = _run(store, "chunks_tri", "bm25(chunks_tri)", tri, scope, limit)
        results += [(chunk_id, score) for chunk_id, score in extra if chunk_id not in seen]
        results.sort(key=lambda item: item[1])
    return results[:limit]


def _words(
    store: IndexStore, parsed: ParsedQuery, scope: Scope, limit: int, split_from: int
) -> list[tuple[int, float]]:
    """The FTS5 list: rows with a distinctive word when they fill `limit`, else the OR of every word."""
    for distinctive, common in _splits(store, parsed, split_from):
        # Two disjoint sets, each scored by bm25 over every word (a phrase of NOT's right side has no
        # hit in a row it admits, so it adds nothing): their merged top `limit` is the OR list's top
        # `limit` among the rows that hold a distinctive word, with the very same scores.
        both = _run(store, "chunks_fts", _BM25, f"({distinctive}) AND ({common})", scope, limit)
        only = _run(store, "chunks_fts", _BM25, f"({distinctive}) NOT ({common})", scope, limit)
        results = sorted(both + only, key=lambda item: item[1])[:limit]
        if len(results) >= limit:
            return results
    match = fts_match(parsed)
    return _run(store, "chunks_fts", _BM25, match, scope, limit) if match is not None else []


def _splits(store: IndexStore, parsed: ParsedQuery, min_rows: int) -> list[tuple[str, str]]:
    """(MATCH of the distinctive clauses, MATCH of the common words), strictest share first, no repeats."""
    if len(parsed.terms) < 2:
        return []
    rows, counts = term_rows(store.conn, "chunks_fts", parsed.terms, min_rows)
    if rows < min_rows:  # small index: the plain OR is fast, and nothing was counted
        return []
    out: list[tuple[str, str]] = []
    for share in COMMON_SHARES:
        common = [term for term in parsed.terms if counts[term] > rows * share]
        distinctive = fts_match(replace(parsed, terms=[term for term in parsed.terms if term not in common]))
        frequent = fts_match(ParsedQuery(raw=parsed.raw, terms=common))
        if distinctive is not None and frequent is not None and (distinctive, frequent) not in out:
            out.append((distinctive, frequent))
    return out


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
