"""The lexical retriever on small real indexes: rows with a distinctive word first, else the OR list."""

from __future__ import annotations

import pytest

from dory.models import ReindexRequest, Scope
from dory.search.common_terms import term_rows
from dory.search.lexical import _BM25, lexical_candidates
from dory.search.query import fts_match, parse_query

# "alpha" is common (in more than 10% of the chunks); "beta" is not. The alpha-only notes carry alpha in
# their title (weighted 4x), so an OR of the two words ranks some of them above notes with both words.
NOTES = {
    **{f"solo/alpha-{n}.md": f"---\ntitle: Alpha {n}\n---\nAlpha alpha alpha, nothing else {n}.\n" for n in range(6)},
    "both/one.md": "---\ntitle: One\n---\nA long body about many things where alpha meets beta once, "
    "and then it goes on and on about unrelated matters for a good while longer.\n",
    "both/two.md": "---\ntitle: Two\n---\nAnother long body in which beta and alpha both appear, followed by "
    "plenty of filler words so that the body is long and its bm25 weight is small.\n",
    "beta/only.md": "---\ntitle: Beta\n---\nBeta on its own.\n",
    "kept/gamma.md": "---\ntitle: Gamma\ntype: project\n---\nGamma alpha beta.\n",
    # notes with neither word, so that both words are rare enough for bm25 to weigh them
    **{f"filler/{n}.md": f"---\ntitle: Filler {n}\n---\nSomething else entirely, number {n}.\n" for n in range(30)},
}


@pytest.fixture
def svc(lexical_service):
    service = lexical_service(NOTES)
    service.reindex(ReindexRequest())
    return service


def paths(svc, ids: list[int]) -> list[str]:
    out = []
    for chunk_id in ids:
        row = svc.store.conn.execute(
            "SELECT f.path FROM chunks c JOIN files f ON f.id = c.file_id WHERE c.id = ?", (chunk_id,)
        ).fetchone()
        out.append(row[0])
    return out


def or_only(svc, query: str, limit: int) -> list[tuple[int, float]]:
    """What the retriever returned before AND-first: the OR expression alone."""
    match = fts_match(parse_query(query))
    if match is None:
        return []
    sql = f"SELECT rowid, {_BM25} AS score FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY score LIMIT ?"
    return [(int(r[0]), float(r[1])) for r in svc.store.conn.execute(sql, (match, limit))]


def lexical(svc, query: str, limit: int, scope: Scope | None = None) -> list[tuple[int, float]]:
    # split_from=0: these small indexes take the path that indexes of MIN_ROWS chunks and more take
    return lexical_candidates(svc.store, parse_query(query), scope or Scope(), limit, split_from=0)


def common(svc, terms: list[str], share: float) -> set[str]:
    rows, counts = term_rows(svc.store.conn, "chunks_fts", terms)
    return {term for term, n in counts.items() if n > rows * share}


BETA = ["beta/only.md", "both/one.md", "both/two.md", "kept/gamma.md"]


def test_rows_with_a_distinctive_word_come_first_scored_over_every_word(svc) -> None:
    assert common(svc, ["alpha", "beta"], 0.10) == {"alpha"}
    found = lexical(svc, "alpha beta", limit=4)
    assert sorted(paths(svc, [i for i, _ in found])) == BETA
    # the OR list's own order and scores, restricted to the rows holding the distinctive word
    either = or_only(svc, "alpha beta", limit=100)
    expected = [(i, score) for i, score in either if paths(svc, [i])[0] in BETA]
    assert [i for i, _ in found] == [i for i, _ in expected]
    assert [score for _, score in found] == pytest.approx([score for _, score in expected])
    # the OR list alone would have let rows holding only the common word in: the test is not vacuous
    assert any(p.startswith("solo/") for p in paths(svc, [i for i, _ in either[:4]]))


def test_too_few_distinctive_rows_give_exactly_the_or_list(svc) -> None:
    assert lexical(svc, "alpha beta", limit=50) == or_only(svc, "alpha beta", limit=50)
    assert len(lexical(svc, "alpha beta", limit=50)) == 10  # every note with alpha or beta


def test_a_query_without_a_distinctive_match_still_finds_the_common_word(svc) -> None:
    found = paths(svc, [i for i, _ in lexical(svc, "alpha zebra", limit=2)])
    assert len(found) == 2 and all("alpha" in NOTES[p].lower() for p in found)


def test_one_term_query_equals_or(svc) -> None:
    assert lexical(svc, "alpha", limit=2) == or_only(svc, "alpha", limit=2)
    assert lexical(svc, "beta", limit=2) == or_only(svc, "beta", limit=2)


def test_scope_filters_apply_on_the_split_path(svc) -> None:
    scoped = lexical(svc, "alpha beta", limit=1, scope=Scope(type=["project"]))
    assert paths(svc, [i for i, _ in scoped]) == ["kept/gamma.md"]
    in_both = paths(svc, [i for i, _ in lexical(svc, "alpha beta", limit=2, scope=Scope(path="both/*"))])
    assert sorted(in_both) == ["both/one.md", "both/two.md"]


def test_scope_with_too_few_distinctive_rows_falls_back_to_or(svc) -> None:
    found = paths(svc, [i for i, _ in lexical(svc, "alpha beta", limit=5, scope=Scope(path="solo/*"))])
    assert len(found) == 5 and all(p.startswith("solo/") for p in found)


def test_common_words_follow_the_index(svc, write_corpus) -> None:
    assert common(svc, ["beta", "filler"], 0.10) == {"filler"}
    root = svc.settings.corpus
    for n in range(40):
        (root / "more").mkdir(exist_ok=True)
        (root / "more" / f"b{n}.md").write_text(f"Beta again {n}.\n")
    svc.reindex(ReindexRequest())
    assert common(svc, ["beta", "filler"], 0.10) == {"beta", "filler"}


HOSTILE = [
    '"',
    '"""',
    "(((",
    "a AND",
    "alpha AND beta",
    "alpha OR beta",
    "alpha NOT beta",
    "NEAR(alpha beta)",
    "NEAR(alpha beta, 2)",
    "alpha* beta*",
    "*",
    "-alpha",
    "^alpha",
    "title:alpha",
    "{title body}:alpha beta",
    "body: beta",
    "'alpha' \"beta",
    '"alpha beta" gamma',
    "AND OR NOT",
    "what is it",
    "the and of to",
    "a' OR '1'='1",
    "\u202e\u200b",
    "🙂 alpha",
    " ".join(f"w{n}" for n in range(1000)),
    " ".join(["alpha", "beta"] * 500),
    " ".join(f"alpha{n}" for n in range(999)) + " beta",
]


@pytest.mark.parametrize("raw", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_queries_give_no_error_and_the_existing_answer(svc, raw: str) -> None:
    # On this small corpus no query has 50 rows with a distinctive word: the answer is the OR list.
    assert lexical(svc, raw, limit=50) == or_only(svc, raw, limit=50)
    # With a limit of one the split answers whenever it can: still no error, still term matches.
    found = lexical(svc, raw, limit=1)
    either = {i for i, _ in or_only(svc, raw, limit=100)}
    assert all(chunk_id in either for chunk_id, _ in found)  # every lexical hit is a real term match


def test_only_stopwords_still_search(svc) -> None:
    assert lexical(svc, "what is it", limit=50) == or_only(svc, "what is it", limit=50) != []


def test_small_indexes_run_the_plain_or(svc) -> None:
    parsed = parse_query("alpha beta")
    assert lexical_candidates(svc.store, parsed, Scope(), 3) == or_only(svc, "alpha beta", limit=3)
    # and they count no word: the counts would only serve a split that does not happen
    rows, counts = term_rows(svc.store.conn, "chunks_fts", ["alpha", "beta"], min_rows=rows_plus_one(svc))
    assert rows > 0 and counts == {}


def rows_plus_one(svc) -> int:
    return term_rows(svc.store.conn, "chunks_fts", ["alpha"])[0] + 1
