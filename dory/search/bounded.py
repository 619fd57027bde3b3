"""The bound on the ranking policy: it may reorder results, never past clear evidence.

The policy multiplies each fused score by its factor (×0.75 for `logs/`, ×1.006 for a canonical
page). With reciprocal rank fusion a factor of 0.75 is worth about ten ranks, so a note that both
retrievers put first by a wide margin used to sink below weak matches from promoted folders. Now a
result is never placed below one it *dominates*: a result that every retriever of the answer ranks
clearly lower (more than MARGIN times its rank, or not at all). Between results that no retriever
separates clearly the policy still decides, so it keeps breaking ties and demoting near-equals.

Dominance is a strict partial order (it implies better ranks in every list), so some remaining
result is always undominated and the order below always exists.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Protocol, TypeVar

MARGIN = 2  # rank 5 is clearly lower than rank 2; rank 3 is not clearly lower than rank 2

Ranks = Mapping[str, int]  # retriever name → 1-based rank of one result in that retriever's list


class Ranked(Protocol):
    chunk_id: int


R = TypeVar("R", bound=Ranked)


def dominates(a: Ranks, b: Ranks, lists: Iterable[str]) -> bool:
    """True when every list ranks `a` and ranks `b` clearly lower than `a`, or not at all."""
    names = list(lists)
    if not names:
        return False
    for name in names:
        rank_a = a.get(name)
        if rank_a is None:
            return False
        rank_b = b.get(name)
        if rank_b is not None and rank_b <= MARGIN * rank_a:
            return False
    return True


def rank_tables(lists: Mapping[str, list[tuple[int, float]]]) -> dict[int, dict[str, int]]:
    """Chunk id → {list name: rank} over the retrievers' lists (first occurrence wins)."""
    tables: dict[int, dict[str, int]] = {}
    for name, ranked in lists.items():
        for rank, (chunk_id, _) in enumerate(ranked, start=1):
            tables.setdefault(chunk_id, {}).setdefault(name, rank)
    return tables


def bounded_order(candidates: list[R], lists: Mapping[str, list[tuple[int, float]]]) -> Iterator[R]:
    """`candidates` (sorted best first by policy-adjusted score), reordered lazily so that no result
    comes after one it dominates. Lazy: callers take the first k and stop, so the quadratic check
    only ever runs over the head of the list."""
    names = [name for name, ranked in lists.items() if ranked]
    ranks = rank_tables(lists)
    remaining = list(candidates)
    while remaining:
        pick = next(
            i
            for i, cand in enumerate(remaining)
            if not any(
                other is not cand and dominates(ranks.get(other.chunk_id, {}), ranks.get(cand.chunk_id, {}), names)
                for other in remaining
            )
        )
        yield remaining.pop(pick)
