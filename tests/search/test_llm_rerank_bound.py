"""The rerank's bound as a pure function: every permutation a model may answer, checked exhaustively."""

from __future__ import annotations

import itertools

import pytest

from dory.search.hits import Candidate
from dory.search.llm_assist.call import AssistFailed
from dory.search.llm_assist.rerank import bounded, clear_top, model_order
from dory.search.query import parse_query


@pytest.mark.parametrize("keep_first", [False, True])
def test_no_result_ends_below_twice_its_position_plus_two(keep_first: bool) -> None:
    for order in itertools.permutations(range(7)):
        final = bounded(list(order), keep_first)
        assert sorted(final) == list(range(7))
        for slot, p in enumerate(final, start=1):
            assert slot <= 2 * (p + 1) + 2, (order, final)
        assert not keep_first or final[0] == 0


def test_within_the_bound_the_model_decides() -> None:
    assert bounded([2, 1, 0], keep_first=False) == [2, 1, 0]
    assert bounded([9, 8, 7, 6, 5, 4, 3, 2, 1, 0], keep_first=False) == [9, 8, 7, 0, 6, 1, 5, 2, 4, 3]
    assert bounded([3, 2, 1, 0], keep_first=True) == [0, 3, 2, 1]


def test_the_model_order_is_checked() -> None:
    assert model_order({"order": ["3", "[1]", 2]}, 4) == [2, 0, 1, 3]
    with pytest.raises(AssistFailed) as unknown:
        model_order({"order": [1, True, 2.5, "5"]}, 4)
    assert (unknown.value.code, unknown.value.detail) == (
        "bad-output",
        "the model ranked results it was not shown: True, 2.5, '5'",
    )


def candidate(chunk_id: int, title: str, text: str) -> Candidate:
    return Candidate(chunk_id, f"n/{chunk_id}.md", title, 0, 1, 1, [], text, {}, 0, 0, None)


def test_a_clear_top_hit() -> None:
    top = candidate(1, "Postgres upgrade", "We moved the billing database to Postgres 16.")
    both_first = {"bm25": [(1, -2.0), (2, -1.0)], "vector": [(1, 0.8), (2, 0.7)]}
    assert clear_top(parse_query("database move"), top, both_first)
    assert not clear_top(parse_query("database move"), top, {"bm25": [(1, -2.0)]})  # one list alone
    assert not clear_top(parse_query("database move"), top, {"bm25": [(1, -2.0)], "vector": [(2, 0.9), (1, 0.8)]})
    assert clear_top(parse_query("postgres upgrade"), top, {"bm25": [(1, -2.0)]})  # the title
    assert clear_top(parse_query('"billing database"'), top, {})  # a phrase of the text
    assert not clear_top(parse_query("billing"), top, {})  # one word is no phrase
