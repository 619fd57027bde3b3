"""Retrieval evaluation: metric arithmetic on a corpus whose ranks are known, and malformed query files.

Exact mode orders body matches by path, so twelve notes n01..n12 that all contain "needle" come back
in that order: the rank of nXX.md for the query "needle" is XX. That makes every metric computable by
hand.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pydantic
import pytest

from dory.errors import UsageError
from dory.models import EvalRequest, ReindexRequest
from dory.search.evaluate import checked_queries, load_queries, ndcg

NOTES = {f"n{i:02}.md": f"# Note {i}\nneedle number {i}\n" for i in range(1, 13)}
NOTES["other.md"] = "# Other\nhaystack only\n"
NOTES["sub/deep.md"] = "# Deep\nneedle in a subfolder\n"


def dcg(ranks: list[int]) -> float:
    return sum(1 / math.log2(r + 1) for r in ranks)


@pytest.fixture
def svc(lexical_service):
    service = lexical_service(NOTES)
    service.reindex(ReindexRequest())
    return service


def write_queries(tmp_path: Path, items: list[dict] | str, name: str = "q.jsonl") -> Path:
    path = tmp_path / name
    text = items if isinstance(items, str) else "".join(json.dumps(item) + "\n" for item in items)
    path.write_text(text, encoding="utf-8")
    return path


QUERIES = [
    {"id": "second", "query": "needle", "expected": ["n02.md"]},  # rank 2
    {"id": "half", "query": "needle", "expected": ["n01.md", "missing.md"]},  # ranks 1 and none
    {"id": "eleventh", "query": "needle", "expected": ["n11.md"]},  # rank 11: past MRR@10 and nDCG@10
    {"id": "first", "query": "haystack", "expected": ["other.md"]},  # rank 1
]


def evaluate(svc, path: Path, **kw):
    return svc.evaluate(EvalRequest(queries_file=str(path), modes=kw.pop("modes", ["exact"]), **kw))


def test_ranks_are_per_distinct_file_and_known(svc, tmp_path: Path) -> None:
    res = evaluate(svc, write_queries(tmp_path, QUERIES), k=20, per_query=True)
    [mode] = res.modes
    assert [(q.id, q.ranks) for q in mode.per_query] == [
        ("second", {"n02.md": 2}),
        ("half", {"n01.md": 1, "missing.md": None}),
        ("eleventh", {"n11.md": 11}),
        ("first", {"other.md": 1}),
    ]


@pytest.mark.parametrize(
    ("k", "recall"),
    [
        (1, (0 + 0.5 + 0 + 1) / 4),  # only rank-1 hits count
        (10, (1 + 0.5 + 0 + 1) / 4),  # rank 11 is outside the top 10 (and not even retrieved at depth 10)
        (20, (1 + 0.5 + 1 + 1) / 4),
    ],
)
def test_recall_mrr_and_ndcg_match_hand_computation(svc, tmp_path: Path, k: int, recall: float) -> None:
    res = evaluate(svc, write_queries(tmp_path, QUERIES), k=k)
    [mode] = res.modes
    assert (res.k, res.queries, mode.queries, mode.mode, res.warnings) == (k, 4, 4, "exact", [])
    assert mode.recall_at_k == round(recall, 4)
    # MRR@10 ignores k: 1/2, 1/1, 0 (rank 11 > 10), 1/1
    assert mode.mrr_at_10 == round((0.5 + 1 + 0 + 1) / 4, 4)
    # nDCG@10: gain over the ideal gain for as many relevant items as were expected
    per_query = [dcg([2]) / dcg([1]), dcg([1]) / dcg([1, 2]), 0.0, 1.0]
    assert mode.ndcg_at_10 == round(sum(per_query) / 4, 4)
    assert mode.per_query is None  # only on request


def test_turn_anchor_counts_as_its_file(svc, tmp_path: Path) -> None:
    path = write_queries(tmp_path, [{"query": "needle", "expected": ["n03.md#D1:4"]}])
    [mode] = evaluate(svc, path, per_query=True).modes
    assert mode.per_query[0].ranks == {"n03.md": 3}  # ranks are per file
    assert mode.per_query[0].id == "1"  # a query without an id is named by its line
    assert mode.mrr_at_10 == round(1 / 3, 4)


def test_ndcg_never_exceeds_one_when_two_anchors_name_the_same_file(svc, tmp_path: Path) -> None:
    path = write_queries(tmp_path, [{"query": "needle", "expected": ["n01.md#D1:1", "n01.md#D1:2"]}])
    [mode] = evaluate(svc, path).modes
    assert mode.ndcg_at_10 <= 1.0


def test_scope_field_limits_each_query_to_its_folder(svc, tmp_path: Path) -> None:
    items = [
        {"query": "needle", "expected": ["sub/deep.md"], "scope": "sub/"},
        {"query": "needle", "expected": ["sub/deep.md"]},
    ]
    path = write_queries(tmp_path, items)
    [scoped] = evaluate(svc, path, scope_field="scope", per_query=True).modes
    assert [q.ranks for q in scoped.per_query] == [{"sub/deep.md": 1}, {"sub/deep.md": None}]  # 13th unscoped
    [unscoped] = evaluate(svc, path, per_query=True).modes
    assert [q.ranks for q in unscoped.per_query] == [{"sub/deep.md": None}, {"sub/deep.md": None}]


def test_every_mode_runs_in_one_pass_and_unavailable_ones_are_skipped(svc, tmp_path: Path) -> None:
    path = write_queries(tmp_path, [{"query": "haystack", "expected": ["other.md"]}])
    res = evaluate(svc, path, modes=["bm25", "semantic", "hybrid", "exact"])
    assert [m.mode for m in res.modes] == ["bm25", "hybrid", "exact"]
    assert res.warnings == ["mode vector skipped: no embedder is configured (embedder.backend = none)"]
    assert all((m.recall_at_k, m.mrr_at_10, m.ndcg_at_10) == (1.0, 1.0, 1.0) for m in res.modes)


def test_expected_list_may_be_empty(svc, tmp_path: Path) -> None:
    path = write_queries(
        tmp_path, [{"query": "needle", "expected": []}, {"query": "haystack", "expected": ["other.md"]}]
    )
    [mode] = evaluate(svc, path).modes
    assert (mode.recall_at_k, mode.mrr_at_10, mode.ndcg_at_10) == (0.5, 0.5, 0.5)


def test_ndcg_helper_by_hand() -> None:
    assert ndcg([1]) == 1.0
    assert ndcg([None]) == 0.0
    assert ndcg([]) == 0.0
    assert ndcg([3, None]) == pytest.approx((1 / math.log2(4)) / (1 + 1 / math.log2(3)))
    assert ndcg([11]) == 0.0


# -- malformed query files -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"query": "a", "expected": []}\n{"query": "b", "expected": [}\n', ":2: not JSON (Expecting value)"),
        ("[" * 100_000 + "]" * 100_000 + "\n", ":1: not JSON (nested deeper than 32 levels)"),
        ('\n\n{"expected": ["a.md"]}\n', ':3: each line needs a non-empty "query" string'),
        ('{"query": "  ", "expected": ["a.md"]}\n', ':1: each line needs a non-empty "query" string'),
        ('{"query": 7, "expected": ["a.md"]}\n', ':1: each line needs a non-empty "query" string'),
        ('["query", "expected"]\n', ':1: each line needs a non-empty "query" string'),
        ('{"query": "a", "expected": "a.md"}\n', ':1: "expected" must be a list of paths'),
        ('{"query": "a"}\n', ':1: "expected" must be a list of paths'),
        ('{"query": "a", "expected": ["a.md", 3]}\n', ':1: "expected" must be a list of paths'),
        ("", ": no queries"),
        ("\n  \n\n", ": no queries"),
    ],
)
def test_malformed_queries_file_is_a_usage_error_naming_the_line(tmp_path: Path, text: str, message: str) -> None:
    path = write_queries(tmp_path, text)
    with pytest.raises(UsageError) as info:
        load_queries(path)
    assert type(info.value) is UsageError and info.value.exit_code == 2
    assert info.value.message.startswith(f"{path}{message}")


def test_unreadable_queries_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read queries file"):
        load_queries(tmp_path / "missing.jsonl")
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes('{"query": "caf\xe9", "expected": []}\n'.encode("latin-1"))
    with pytest.raises(UsageError, match="cannot read queries file"):
        load_queries(latin)


def test_malformed_file_fails_before_any_search(svc, tmp_path: Path) -> None:
    path = write_queries(tmp_path, '{"query": "needle", "expected": ["n01.md"]}\nnot json\n')
    with pytest.raises(UsageError, match=":2: not JSON"):
        evaluate(svc, path)


@pytest.mark.parametrize("query", ["nee\u0000dle", "x" * 4001])
def test_query_the_search_refuses_is_a_usage_error_naming_the_line(svc, tmp_path: Path, query: str) -> None:
    path = write_queries(tmp_path, [{"query": "needle", "expected": []}, {"query": query, "expected": []}])
    with pytest.raises(UsageError) as info:
        evaluate(svc, path)
    assert info.value.message.startswith(f"{path}:2:")


def test_queries_can_be_given_inline_and_are_checked_the_same_way() -> None:
    """HTTP and MCP callers send the queries themselves; a server never reads a caller's file path."""
    good = checked_queries([("queries[0]", {"query": "tea", "expected": ["a.md"]})], "the request")
    assert good == [{"query": "tea", "expected": ["a.md"], "id": "1"}]
    with pytest.raises(UsageError, match=r'queries\[0\]: "expected" must be a list of paths'):
        checked_queries([("queries[0]", {"query": "tea", "expected": "a.md"})], "the request")
    with pytest.raises(pydantic.ValidationError, match="give either queries or queries_file"):
        EvalRequest(queries=[{"query": "tea", "expected": []}], queries_file="/tmp/q.jsonl")
