"""The research answer: sentences and their lines, the extractive answer, citation checking, the artifact."""

from __future__ import annotations

from dory.context import research
from dory.context.research import Passage

POSTGRES = [
    "# Postgres upgrade",
    "",
    "We moved the billing database to Postgres 16",
    "in March. The upgrade took two hours of downtime.",
    "",
    "- Vacuum settings were tuned after the upgrade.",
    "> Rollback was never needed for billing.",
]
GARDEN = ["# Garden", "", "Tomatoes need full sun and deep watering."]


def passages() -> list[Passage]:
    return [
        Passage("notes/postgres.md", "Postgres upgrade", 4, 10, POSTGRES, 12, 0.9),
        Passage("notes/garden.md", "Garden", 1, 3, GARDEN, 3, 0.1),
    ]


def test_sentences_carry_the_lines_they_span_and_skip_headings() -> None:
    found = [(s.text, s.start_line, s.end_line) for s in research.sentences(passages()[0])]
    assert found == [
        ("We moved the billing database to Postgres 16 in March.", 6, 7),
        ("The upgrade took two hours of downtime.", 7, 7),
        ("Vacuum settings were tuned after the upgrade.", 9, 9),
        ("Rollback was never needed for billing.", 10, 10),
    ]


def test_the_extractive_answer_is_the_sentences_sharing_most_question_terms_each_cited() -> None:
    answer, cited = research.extractive_answer("When was the billing database moved to Postgres?", passages())
    assert answer == (
        "We moved the billing database to Postgres 16 in March. [notes/postgres.md:6-7] "
        "Rollback was never needed for billing. [notes/postgres.md:10-10]"
    )
    assert [c.text for c in cited] == ["[notes/postgres.md:6-7]", "[notes/postgres.md:10-10]"]


def test_no_evidence_and_no_shared_word_are_said_plainly() -> None:
    assert research.extractive_answer("billing", []) == (research.NO_EVIDENCE, [])
    assert research.extractive_answer("quantum chromodynamics", passages()) == (research.NO_OVERLAP, [])


def test_citations_resolve_to_an_evidence_path_and_lines_inside_the_file() -> None:
    answer = (
        "Moved in March [notes/postgres.md:6-7]. Made up [notes/nowhere.md:1-2]. "
        "Past the end [notes/postgres.md:11-40]. Two at once [notes/garden.md:3; notes/postgres.md:0-2]. "
        "A [markdown link](https://example.com) and a [ ] box stay."
    )
    text, kept, dropped = research.check_citations(answer, passages())
    assert text == (
        "Moved in March [notes/postgres.md:6-7]. Made up. Past the end. Two at once [notes/garden.md:3-3]. "
        "A [markdown link](https://example.com) and a [ ] box stay."
    )
    assert [c.text for c in kept] == ["[notes/postgres.md:6-7]", "[notes/garden.md:3-3]"]
    assert [(d.text, d.reason) for d in dropped] == [
        ("[notes/nowhere.md:1-2]", "notes/nowhere.md is not among the evidence"),
        ("[notes/postgres.md:11-40]", "lines 11-40 are not inside notes/postgres.md (lines 1-12)"),
        ("[notes/postgres.md:0-2]", "lines 0-2 are not inside notes/postgres.md (lines 1-12)"),
    ]


def test_a_citation_may_name_lines_of_the_file_outside_the_quoted_chunk() -> None:
    """The rule is the file's real lines, not the chunk: line 12 exists, line 13 does not."""
    _, kept, dropped = research.check_citations("x [./notes/postgres.md:12] y [notes/postgres.md:13]", passages())
    assert [c.text for c in kept] == ["[notes/postgres.md:12-12]"]
    assert [d.start_line for d in dropped] == [13]


def test_the_llm_sees_numbered_lines_under_each_citation() -> None:
    text = research.llm_input("Why?", passages())
    assert "[notes/postgres.md:4-10] Postgres upgrade\n4: # Postgres upgrade\n5: \n6: We moved" in text
    assert text.startswith("Question: Why?\n")


def test_the_artifact_has_the_four_sections_and_reports_dropped_citations() -> None:
    evidence = [p.evidence() for p in passages()]
    _, _, dropped = research.check_citations("[notes/nowhere.md:1]", passages())
    body = research.render("Why  Postgres?", "Because [notes/postgres.md:6-7]", evidence, dropped)
    heads = [line for line in body.splitlines() if line.startswith("## ")]
    assert heads == ["## Question", "## Answer", "## Evidence", "## Sources"]
    assert "- notes/postgres.md\n- notes/garden.md\n" in body
    assert "[notes/nowhere.md:1-1] (notes/nowhere.md is not among the evidence)" in body
    assert body.startswith("# Research: Why Postgres?\n")


def test_artifact_names_are_dated_slugs_with_a_suffix_after_the_first() -> None:
    assert research.artifact_name("2026-11-26", "Why did we move to Postgres?", 1) == (
        "references/research/2026-11-26-why-did-we-move-to-postgres.md"
    )
    assert research.artifact_name("2026-11-26", "Why?", 2) == "references/research/2026-11-26-why-2.md"
    assert research.artifact_name("2026-11-26", "???", 1) == "references/research/2026-11-26-question.md"


def test_a_lower_hit_needs_more_shared_terms_to_come_first() -> None:
    """RANK_PENALTY 0.5: one place lower costs half a term, two places a whole one (then the better hit wins)."""

    def passage(rank: int, text: str) -> Passage:
        return Passage(f"notes/{rank}.md", str(rank), 1, 1, [text], 1, 1.0)

    top = passage(0, "Alpha beta here.")
    second = passage(1, "Alpha beta gamma here.")
    third = passage(2, "Alpha beta gamma there.")
    answer, _ = research.extractive_answer("alpha beta gamma", [top, second])
    assert answer.startswith("Alpha beta gamma here. [notes/1.md:1-1]")
    answer, _ = research.extractive_answer("alpha beta gamma", [top, passage(1, "Unrelated words."), third])
    assert answer.startswith("Alpha beta here. [notes/0.md:1-1] Alpha beta gamma there.")
