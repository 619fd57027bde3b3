"""The ranking policy's bound: reorder near-equals, never bury a result both retrievers put clearly first."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from dory.models import ReindexRequest, SearchRequest
from dory.search.bounded import bounded_order, dominates


@dataclass
class Cand:
    chunk_id: int
    score: float


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ({"bm25": 1, "vector": 1}, {"bm25": 3, "vector": 3}, True),  # clearly lower in both
        ({"bm25": 1, "vector": 1}, {"bm25": 3}, True),  # not found by one retriever at all
        ({"bm25": 1, "vector": 1}, {"bm25": 2, "vector": 9}, False),  # close in one list
        ({"bm25": 1}, {"bm25": 9, "vector": 9}, False),  # `a` unseen by the vector side
        ({"bm25": 4, "vector": 4}, {"bm25": 9, "vector": 9}, True),
        ({"bm25": 4, "vector": 4}, {"bm25": 8, "vector": 9}, False),  # 8 is not more than twice 4
    ],
)
def test_dominance_needs_every_retriever_to_rank_clearly_lower(a, b, expected) -> None:
    assert dominates(a, b, ["bm25", "vector"]) is expected


def test_dominance_is_never_mutual_nor_reflexive() -> None:
    a = {"bm25": 1, "vector": 2}
    assert not dominates(a, a, ["bm25", "vector"])
    assert not dominates({"bm25": 1}, {"bm25": 1}, ["bm25"])
    assert not dominates({}, {}, [])


def test_a_demoted_clear_winner_stays_above_what_it_dominates_but_yields_to_near_equals() -> None:
    """Chunk 1 is first in both lists; the policy demoted it below 2..5 (as ×0.75 on `logs/` did).
    It may fall below 2 (rank 2 is close) but never below 3, 4 or 5."""
    lists = {
        "bm25": [(1, 0.0), (2, 0.0), (3, 0.0), (4, 0.0), (5, 0.0)],
        "vector": [(1, 0.0), (2, 0.0), (4, 0.0), (3, 0.0), (5, 0.0)],
    }
    by_policy = [Cand(3, 0.9), Cand(2, 0.8), Cand(4, 0.7), Cand(5, 0.6), Cand(1, 0.5)]
    assert [c.chunk_id for c in bounded_order(by_policy, lists)] == [2, 1, 3, 4, 5]


def test_without_a_dominance_the_policy_order_is_kept() -> None:
    lists = {"bm25": [(1, 0.0), (2, 0.0)], "vector": [(2, 0.0), (1, 0.0)]}
    by_policy = [Cand(2, 0.9), Cand(1, 0.8), Cand(7, 0.1)]
    assert [c.chunk_id for c in bounded_order(by_policy, lists)] == [2, 1, 7]


def test_the_order_is_lazy_and_complete() -> None:
    lists = {"bm25": [(i, 0.0) for i in range(1, 200)]}
    by_policy = [Cand(i, -i) for i in range(199, 0, -1)]  # the policy reversed everything
    order = bounded_order(by_policy, lists)
    first = [next(order).chunk_id for _ in range(3)]
    # 2 is not clearly below 1, so the policy puts it first; 6 is the worst result 3 does not dominate.
    assert first == [2, 1, 6]
    assert sorted([*first, *(c.chunk_id for c in order)]) == list(range(1, 200))


@pytest.mark.parametrize("seed", range(20))
def test_without_a_policy_factor_the_fused_order_already_keeps_the_bound(seed: int) -> None:
    """Why the engine skips the check when every candidate has the same factor: reciprocal rank
    fusion gives a result that dominates another a higher score in every list, so it is already
    ahead. Random lists, RRF with unequal weights; the bound must not move anything."""
    rng = random.Random(seed)
    ids = list(range(1, 41))
    lists = {name: [(i, 0.0) for i in rng.sample(ids, rng.randint(5, 40))] for name in ("bm25", "vector")}
    weights, k = {"bm25": 1.0, "vector": 0.5}, 20
    fused: dict[int, float] = {}
    for name, ranked in lists.items():
        for rank, (chunk_id, _) in enumerate(ranked, start=1):
            fused[chunk_id] = fused.get(chunk_id, 0.0) + weights[name] / (k + rank)
    by_score = sorted((Cand(i, s) for i, s in fused.items()), key=lambda c: (-c.score, c.chunk_id))
    assert [c.chunk_id for c in bounded_order(by_score, lists)] == [c.chunk_id for c in by_score]


def test_a_log_that_matches_best_is_not_buried_by_the_logs_demotion(lexical_service) -> None:
    """Issue 19, the demotion bug: a note under `logs/` that the lexical retriever ranks first by a
    wide margin sank below weak matches elsewhere (×0.75 moved it about ten places down)."""
    weak = {f"notes/n{i}.md": f"# Note {i}\n\nThe certificate of attendance number {i}.\n" for i in range(8)}
    strong = (
        "# Ingress outage\n\nThe ingress certificate renewal failed; renewing the ingress certificate by hand "
        "with certbot fixed the ingress.\n"
    )
    svc = lexical_service({**weak, "logs/2025-06-01-outage.md": strong})
    svc.reindex(ReindexRequest())
    res = svc.search(SearchRequest(query="ingress certificate renewal certbot", mode="bm25", debug=True))
    paths = [h.path for h in res.hits]
    log_at = paths.index("logs/2025-06-01-outage.md")
    explain = res.hits[log_at].explain
    assert explain is not None and explain.bm25_rank == 1 and "logs" in explain.policy_rules
    above = [h.explain.bm25_rank for h in res.hits[:log_at] if h.explain]
    assert all(rank is not None and rank <= 2 for rank in above)  # only a near-equal may pass it
    below = [h.explain.final for h in res.hits[log_at + 1 :] if h.explain]
    assert explain.final < max(below)  # the policy alone would have put it lower
