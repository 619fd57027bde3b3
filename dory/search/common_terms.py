"""How common each of a query's words is in the index: the lexical retriever splits the common ones off.

A word found in a large share of the chunks ("use", "cmdlet" in PowerShell docs, "cells" in papers)
adds little to a bm25 score (FTS5's idf is log((N - n + 0.5) / (n + 0.5)), and zero past half the
rows), yet an OR with it makes FTS5 score nearly every row: the cost of a lexical search is about
the number of rows its MATCH admits. Counting a word's rows is cheap next to scoring them, and the
count stops at the largest share that matters, so it costs at most a short doclist walk per word;
the counts are kept per index state, keyed by FTS5's own totals record (it changes with every write).
"""

from __future__ import annotations

import sqlite3
import threading

# The shares of the chunks above which a word counts as common, tried in turn (lexical.py). The idf
# of a word in 1% of the rows is about 4.6, at 10% about 2.2, against 5 to 9 for the words that find
# a note. Measured with scripts/bench/bench_search.py and bench_quality.py (issue 19).
COMMON_SHARES = (0.01, 0.10)
# Below this many chunks the lexical retriever does not split: the plain OR is fast there (about 2 ms
# CPU at 10k chunks), and on SciFact (9.5k chunks) the split cost 0.002 of bm25 nDCG@10.
MIN_ROWS = 20_000
_CACHE_SIZE = 50_000

_lock = threading.Lock()
_cache: dict[tuple[str, bytes], dict[str, int]] = {}


def term_rows(conn: sqlite3.Connection, table: str, terms: list[str], min_rows: int = 0) -> tuple[int, dict[str, int]]:
    """(rows in the table, {term: rows holding it}); a count above the largest share stops just past it.
    A table of fewer than `min_rows` rows counts nothing (the retriever does not split there)."""
    totals = conn.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
    if totals is None or not terms:
        return 0, {}
    key = (table, bytes(totals[0]))
    rows = _first_varint(key[1])
    if rows < min_rows:
        return rows, {}
    cap = int(rows * max(COMMON_SHARES)) + 1
    with _lock:
        if key not in _cache and (len(_cache) >= 4 or sum(len(v) for v in _cache.values()) > _CACHE_SIZE):
            _cache.clear()  # older index states, or too many words
        known = _cache.setdefault(key, {})
        missing = [term for term in terms if term not in known]
    found = {term: _count(conn, table, term, cap) for term in missing}
    with _lock:
        known.update(found)
        return rows, {term: known.get(term, found.get(term, 0)) for term in terms}


def _count(conn: sqlite3.Connection, table: str, term: str, cap: int) -> int:
    quoted = '"' + term.replace('"', '""') + '"'
    sql = f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?)"
    return int(conn.execute(sql, (quoted, cap)).fetchone()[0])


def _first_varint(data: bytes) -> int:
    """The row count that opens FTS5's totals record: an SQLite varint (big-endian, 7 bits a byte)."""
    value = 0
    for i, byte in enumerate(data[:9]):
        if i == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value
    return value
