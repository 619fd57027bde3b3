"""The request models every surface shares: what they accept and the exact message when they refuse.

A NUL byte cannot travel through argv, so the CLI never sees one; HTTP and MCP bodies can carry it, and
the model is where it is stopped.
"""

from __future__ import annotations

import pydantic
import pytest

from dory.models import EvalRequest, GetRequest, Scope, SearchRequest


def refusal(model: type[pydantic.BaseModel], **fields: object) -> str:
    with pytest.raises(pydantic.ValidationError) as info:
        model(**fields)
    [error] = info.value.errors()
    return f"{'.'.join(map(str, error['loc']))}: {error['msg']}"


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("needle\x00", "query: Value error, query contains a NUL byte"),
        ("\x00", "query: Value error, query contains a NUL byte"),
        (" \t\n ", "query: Value error, query is blank"),
        ("", "query: String should have at least 1 character"),
        ("x" * 4001, "query: String should have at most 4000 characters"),
    ],
)
def test_search_request_refuses_nul_blank_and_oversized_queries(query: str, message: str) -> None:
    assert refusal(SearchRequest, query=query) == message


def test_search_request_keeps_unicode_and_fts_syntax_as_typed() -> None:
    query = 'NEAR("a" b) AND -c* 🙂 \u202e'
    assert SearchRequest(query=query).query == query


@pytest.mark.parametrize(
    ("alias", "mode"),
    [
        ("bm25", "bm25"),
        ("TEXT", "bm25"),
        ("keyword", "bm25"),
        ("lexical", "bm25"),
        ("vector", "vector"),
        ("Semantic", "vector"),
        ("hybrid", "hybrid"),
        ("exact", "exact"),
    ],
)
def test_mode_aliases(alias: str, mode: str) -> None:
    assert SearchRequest(query="q", mode=alias).mode == mode


def test_recall_reads_the_session_plane_and_exact_refuses_it() -> None:
    assert SearchRequest(query="q", mode="recall").corpus == "sessions"
    assert SearchRequest(query="q", mode="recall", corpus="all").corpus == "all"
    assert refusal(SearchRequest, query="q", mode="exact", corpus="sessions") == (
        ": Value error, exact mode searches durable memory only; use bm25 or recall for sessions"
    )
    assert refusal(SearchRequest, query="q", corpus="logs") == (
        "corpus: Input should be 'durable', 'sessions' or 'all'"
    )


def test_unknown_mode_and_bad_k() -> None:
    assert refusal(SearchRequest, query="q", mode="fuzzy") == (
        "mode: Value error, unknown mode 'fuzzy'; use one of bm25, vector, hybrid, exact, recall"
    )
    assert refusal(SearchRequest, query="q", k=201) == "k: Input should be less than or equal to 200"
    assert refusal(SearchRequest, query="q", surprise=1) == "surprise: Extra inputs are not permitted"


def test_scope_dates_are_normalised_or_refused() -> None:
    assert Scope(since="2024-03-01T10:00:00Z").since == "2024-03-01"
    assert refusal(Scope, until="yesterday") == "until: Value error, not a YYYY-MM-DD date: 'yesterday'"
    assert Scope().is_empty() and not Scope(tags=["x"]).is_empty()


def test_get_request_bounds() -> None:
    assert refusal(GetRequest, path="") == "path: String should have at least 1 character"
    assert refusal(GetRequest, path="a.md", lines=0) == "lines: Input should be greater than or equal to 1"
    assert refusal(GetRequest, path="x" * 4097) == "path: String should have at most 4096 characters"


def test_eval_request_modes() -> None:
    assert EvalRequest(queries_file="q", modes=[" Keyword", "semantic"]).modes == ["bm25", "vector"]
    assert refusal(EvalRequest, queries_file="q", modes=["bm25", "nope"]) == "modes: Value error, unknown mode 'nope'"
