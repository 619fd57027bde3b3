"""Shortening text (dory/corpus/shorten.py): one-line bullets and slugs are cut after a whole word, never
inside one, with `…` on cut text; only a single word longer than the limit is cut where it must be."""

from __future__ import annotations

import pytest

from dory.corpus.shorten import ELLIPSIS, shorten, shorten_slug

SENTENCE = "I'm thinking of joining a new gaming team after this next tourney"


@pytest.mark.parametrize("limit", range(12, len(SENTENCE) + 5))
def test_a_cut_sentence_ends_on_a_whole_word_and_fits(limit: int) -> None:
    got = shorten(SENTENCE, limit)
    assert len(got) <= limit
    if len(SENTENCE) <= limit:
        assert got == SENTENCE
        return
    assert got.endswith(ELLIPSIS)
    kept = got.removesuffix(ELLIPSIS).split()
    assert kept == SENTENCE.split()[: len(kept)]  # whole words, in order, the last one complete


def test_the_cut_falls_between_words() -> None:
    assert shorten(SENTENCE, 42) == "I'm thinking of joining a new gaming team…"
    assert shorten(SENTENCE, 41) == "I'm thinking of joining a new gaming…"  # not "gaming tea…"


def test_whitespace_collapses_and_trailing_punctuation_goes_before_the_ellipsis() -> None:
    assert shorten("  one\n two\t three  ", 40) == "one two three"
    assert shorten("first clause, second clause goes on", 20) == "first clause…"


def test_one_word_longer_than_the_limit_is_cut_where_it_must_be() -> None:
    url = "https://example.com/" + "a" * 50
    got = shorten(url, 30)
    assert got == url[:29] + ELLIPSIS and len(got) == 30


@pytest.mark.parametrize(
    ("slug", "limit", "expected"),
    [
        ("i-m-thinking-of-joining-a-new-gaming-team-after-this", 40, "i-m-thinking-of-joining-a-new-gaming"),
        ("agreed-those-little-things-sure-do-make-life-better", 40, "agreed-those-little-things-sure-do-make"),
        ("short-slug", 40, "short-slug"),
        ("exactly-ten", 11, "exactly-ten"),
        ("averyveryverylongsingleword", 10, "averyveryv"),
    ],
)
def test_slugs_are_cut_at_a_dash(slug: str, limit: int, expected: str) -> None:
    assert shorten_slug(slug, limit) == expected
    assert not expected.endswith("-") and len(expected) <= limit
