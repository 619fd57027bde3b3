"""Which of a query's words are common in the index: the lexical retriever leaves them out of its MATCH.

A word found in a large share of the chunks ("use", "cmdlet" in PowerShell docs, "cells" in papers)
adds little to a bm25 score (FTS5's idf is log((N - n + 0.5) / (n + 0.5)), and zero past half the
rows), yet an OR with it makes FTS5 score nearly every row: the cost of a lexical search is about
the number of rows its MATCH admits. Counting a word's rows is cheap next to scoring them, and is
capped at the threshold, so deciding costs at most a short doclist walk per word; the answers are
kept per index state, keyed by FTS5's own totals record (it changes with every write).
"""

from __future__ import annotations

import sqlite3
import threading

# A word in more than this share of the chunks is common. Its idf at the threshold is about 2.2,
# against 5 to 9 for the words that find a note; see scripts/bench/bench_quality.py for its effect.
COMMON_SHARE = 0.10
_CACHE_SIZE = 50_000

_lock = threading.Lock()
_cache: dict[tuple[str, bytes], dict[str, bool]] = {}


def common_terms(conn: sqlite3.Connection, table: str, terms: list[str]) -> set[str]:
    """The terms (each matched on its own as a quoted string) found in more than COMMON_SHARE of the rows."""
    if not terms:
        return set()
    totals = conn.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
    if totals is None:
        return set()
    rows = _first_varint(bytes(totals[0]))
    cap = int(rows * COMMON_SHARE)
    with _lock:
        known = _cache.setdefault((table, bytes(totals[0])), {})
        if len(_cache) > 4 or len(known) > _CACHE_SIZE:  # an old index state, or too many words
            _cache.clear()
            known = _cache.setdefault((table, bytes(totals[0])), {})
        missing = [term for term in terms if term not in known]
    found = {term: _count(conn, table, term, cap + 1) > cap for term in missing}
    with _lock:
        known.update(found)
        return {term for term in terms if known.get(term, found.get(term, False))}


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
