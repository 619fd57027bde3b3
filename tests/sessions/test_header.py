"""The header of a foreign-layout transcript (title, date line) is session metadata, never a turn."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dory.models import ReindexRequest, Scope, SearchRequest, SessionListRequest
from dory.service import DoryService
from dory.sessions.header import date_in, header_length, speaker
from dory.sessions.transcript import parse_session

REL = "logs/sessions/locomo/conv-9/session-01.md"
LOCOMO = """---
title: "locomo conv-9 session 1"
agent: "locomo"
session_id: "conv-9-s1"
---
# locomo conv-9 session 1

_1:56 pm on 8 May, 2023_ — Caroline & Melanie

**Caroline** (D1:1): Hey Mel! I went to a support group yesterday.

**Melanie** (D1:2): That's great! I painted a sunrise over the lake
with my kids.
"""


def test_the_header_is_metadata_and_the_turns_keep_their_lines() -> None:
    session = parse_session(REL, LOCOMO.encode())
    assert session.header == "# locomo conv-9 session 1\n\n_1:56 pm on 8 May, 2023_ — Caroline & Melanie"
    assert [(t.start_line, t.end_line) for t in session.turns()] == [(10, 10), (12, 13)]
    assert session.turns()[0].text.startswith("**Caroline** (D1:1)")
    assert session.date() == "2023-05-08T13:56:00Z"  # from the date line: the frontmatter has none
    assert session.started is None  # the transcript's own fields are not rewritten


def test_search_never_finds_a_header_word_and_lists_the_date(
    lexical_service: Callable[[dict[str, str | bytes]], DoryService],
) -> None:
    svc = lexical_service({REL: LOCOMO})
    assert svc.reindex(ReindexRequest()).sessions_indexed == 1
    for word in ("pm", "Caroline & Melanie", "locomo conv", "May 2023"):
        hits = svc.search(SearchRequest(query=word, mode="bm25", corpus="sessions")).hits
        assert all(hit.start_line >= 10 for hit in hits), (word, hits)  # never the header's lines
    for word in ("pm", "locomo", "conv"):  # words of the header line and the title only
        assert svc.search(SearchRequest(query=word, mode="bm25", corpus="sessions")).hits == [], word
    # The session's day is metadata every turn is matched by (turn_text.py), through the turns' own lines.
    dated = svc.search(SearchRequest(query="8 May 2023", mode="bm25", corpus="sessions")).hits
    assert sorted((h.start_line, h.end_line) for h in dated) == [(10, 10), (12, 13)]
    sunrise = svc.search(SearchRequest(query="sunrise", mode="bm25", corpus="sessions", scope=Scope(path=REL))).hits
    assert [(h.start_line, h.end_line) for h in sunrise] == [(12, 13)]
    listed = svc.sessions.list(SessionListRequest()).sessions
    assert [(s.path, s.date, s.messages) for s in listed] == [(REL, "2023-05-08T13:56:00Z", 2)]
    assert svc.sessions.show("conv-9-s1").session.date == "2023-05-08T13:56:00Z"


def test_dorys_own_layout_dates_a_session_by_its_start() -> None:
    text = (
        "---\nsession_id: s-1\nstarted: '2026-11-20T10:00:03Z'\n---\n"
        "Notes written by hand on 1 May 2020.\n\n## user · 2026-11-20T10:00:03Z · m-1a2b3c4d5e6f\n\nHello\n"
    )
    session = parse_session("logs/sessions/codex/laptop/2026-11-20-s-1.md", text.encode())
    assert session.date() == "2026-11-20T10:00:03Z" and session.header == ""
    assert [m.text for m in session.turns()] == ["Hello"]


@pytest.mark.parametrize(
    ("paragraphs", "header"),
    [
        (["# Title", "_8 May 2023_", "**A**: hi", "**B**: hello"], 2),
        (["# Title", "Preamble about the chat.", "A: hi", "B (10:02): hello", "A: bye"], 2),
        (["**A:** hi", "**B:** hello"], 0),
        # Prose with a stray label is no dialogue: only the heading and the date line are header.
        (["# Log", "2024-03-01", "We met today.", "Note: the room was cold.", "Then we left.", "It rained."], 2),
        (["First paragraph.", "8 May 2023"], 0),  # a date after a turn is a turn
        ([], 0),
    ],
)
def test_header_length(paragraphs: list[str], header: int) -> None:
    assert header_length(paragraphs) == header


def test_speaker_labels() -> None:
    assert speaker("**Caroline** (D1:1): Hey Mel!") is not None
    found = speaker("**Caroline** (D1:1): Hey Mel!")
    assert found is not None and (found.name, found.tag, found.body) == ("Caroline", "D1:1", "Hey Mel!")
    assert [(s.name, s.body) for s in map(speaker, ["**Bob:** hi", "Alice Smith: yo", "__Eve__: x"]) if s] == [
        ("Bob", "hi"),
        ("Alice Smith", "yo"),
        ("Eve", "x"),
    ]
    assert speaker("The reason is: x") is None and speaker("hello: there") is None


@pytest.mark.parametrize(
    ("text", "date"),
    [
        ("_1:56 pm on 8 May, 2023_", "2023-05-08T13:56:00"),
        ("12:09 am on 13 September, 2023", "2023-09-13T00:09:00"),
        ("March 3rd, 2024", "2024-03-03"),
        ("on 2023-02-03 at 14:05", "2023-02-03T14:05:00"),
        ("2023-02-30", None),  # no such day
        ("31 Smarch 2023", None),
        ("13:75 on 2023-02-03", "2023-02-03"),  # a clock that is no time is left out
        ("no date here", None),
    ],
)
def test_date_in(text: str, date: str | None) -> None:
    assert date_in(text) == date
