"""The relevance floor: a hit needs real evidence, or it is weak.

Hybrid search used to return ten results for a word that appears nowhere ("zebra" in a corpus
without zebras): the vector side always has nearest chunks, however far. Agents read a hit list
literally, and the recall log that dreaming reads turned that noise into "frequently recalled". A
hit is *evidence* when the lexical retriever matched it (its MATCH holds only the query's content
words: stopwords are dropped unless the query has nothing else) or when its cosine similarity to
the query reaches the vector floor (`search.vector_floor`, calibrated on the shared sets by
scripts/bench/bench_floor.py). Anything else is weak: left out unless the caller asks for it, and
never logged as recalled.
"""

from __future__ import annotations

from collections.abc import Mapping


def with_evidence(lists: Mapping[str, list[tuple[int, float]]], vector_floor: float) -> set[int]:
    """Ids the lexical list matched, plus ids the vector list scored at or above the floor."""
    found = {chunk_id for chunk_id, _ in lists.get("bm25", [])}
    found |= {chunk_id for chunk_id, cosine in lists.get("vector", []) if cosine >= vector_floor}
    return found


def nothing_found_warning(dropped: int, vector_floor: float) -> str:
    return (
        f"no result has real evidence (no keyword match, no cosine ≥ {vector_floor}): {dropped} weak "
        "results were left out; --include-weak shows them"
    )
