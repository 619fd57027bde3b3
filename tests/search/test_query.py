import pytest

from dory.search.query import fts_match, parse_query


@pytest.mark.parametrize(
    "raw",
    [
        '"',
        '"""',
        "(((",
        "a AND",
        "NEAR(",
        "x:y",
        "*",
        "-",
        "^foo",
        "col:term",
        "AND OR NOT",
        '"unbalanced phrase',
        "\u202e\u200b",
        "🙂",
        "a' OR '1'='1",
    ],
)
def test_fts_syntax_is_neutralised(raw: str) -> None:
    match = fts_match(parse_query(raw))
    if match is not None:
        # every clause is a quoted string (optionally a prefix): nothing raw reaches FTS5
        for clause in match.split(" OR "):
            assert clause.startswith('"') and clause.rstrip("*").endswith('"')


def test_terms_phrases_prefixes_and_identifiers() -> None:
    parsed = parse_query('the "release notes" for GPT-5.4 index*')
    assert parsed.terms == ["release", "notes", "gpt", "5", "4"]
    assert ["release", "notes"] in parsed.phrases
    assert ["gpt", "5", "4"] in parsed.phrases
    assert parsed.prefixes == ["index"]


def test_stopword_only_query_still_searches() -> None:
    assert parse_query("what is it").terms == ["what", "is", "it"]
