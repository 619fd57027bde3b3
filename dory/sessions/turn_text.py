"""What the session index reads of each turn: the words BM25 matches and the text that is embedded.

A turn alone often lacks what a question names, so the index reads a little more than the turn:
- BM25 also matches the session's day ("8 May 2023"): "What did Jon find on 1 February, 2023?"
  names the session's date, never said in any turn.
- The embedded text starts with the turn before it (cut to NEIGHBOUR_CHARS): an answer such as
  "Researching adoption agencies" means little without the question it answers.
The stored turn text (snippets, context packing) stays the turn's own words, and a hit still points
at the turn's own lines. Measured on LoCoMo (scripts/bench/bench_recall.py); tried and dropped
there: the speaker label rewritten as "Name: words" (worse for both sides), the speaker left out of
the embedded text (much worse: questions name people), the date in the embedded text (worse).

The embedded text is also the vector cache's key (its hash, `store.text_hash`), so a change here or
an edit of a neighbour re-embeds exactly the turns whose embedded text changed; old vectors are
never mixed with new ones.
"""

from __future__ import annotations

from dataclasses import dataclass

from dory.sessions.header import speaker
from dory.sessions.transcript import Message, Session, time_key

# How much of the previous turn is kept as context (characters, cut at a word).
NEIGHBOUR_CHARS = 300


@dataclass(frozen=True)
class TurnText:
    lexical: str
    embedded: str


def turn_texts(session: Session) -> list[TurnText]:
    """The indexed texts of each of `session.turns()`, in order."""
    day = _day(session.date())
    turns = session.turns()
    out: list[TurnText] = []
    for index, turn in enumerate(turns):
        lexical = f"{day}\n{turn.text}" if day else turn.text
        embedded = f"{_clip(_labelled(turns[index - 1]))}\n{turn.text}" if index > 0 else turn.text
        out.append(TurnText(lexical, embedded))
    return out


def _labelled(turn: Message) -> str:
    """The turn as `Name: words`: a paragraph's speaker label without its markup and tag."""
    found = speaker(turn.text)
    return f"{found.name}: {found.body}" if found is not None else turn.text


def _day(moment: str | None) -> str | None:
    when = time_key(moment) if moment else None
    return f"{when.day} {when:%B %Y}" if when else None


def _clip(text: str) -> str:
    if len(text) <= NEIGHBOUR_CHARS:
        return text
    cut = text[:NEIGHBOUR_CHARS]
    return cut[: cut.rfind(" ")] if " " in cut else cut
