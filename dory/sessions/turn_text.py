"""What the session index reads of each turn: the words BM25 matches and the text that is embedded.

A turn alone often lacks what a question names: "What did Caroline research?" is answered by a
turn that says "Researching adoption agencies". So the indexed texts can carry the turn's speaker,
the session's date and the turn before it. The stored turn text (snippets, context packing) stays
the turn's own words; only the index sees these additions.

The embedded text is also the vector cache's key (its hash), so changing what is embedded here
re-embeds exactly the turns whose text changed and never mixes old vectors with new ones.
"""

from __future__ import annotations

from dataclasses import dataclass

from dory.sessions.header import speaker
from dory.sessions.transcript import Message, Session, time_key

# Which additions are made (measured on LoCoMo with scripts/bench/bench_recall.py).
SPEAKER_LEXICAL = False  # "Name: body" instead of the raw label, for BM25
SPEAKER_EMBED = False  # the same for the embedded text
DATE_LEXICAL = False  # the session's day ("8 May 2023") added to the BM25 text
DATE_EMBED = False  # the same for the embedded text
NEIGHBOUR_EMBED = False  # the previous turn, as context, in the embedded text
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
        plain = _labelled(turn)
        lexical = plain if SPEAKER_LEXICAL else turn.text
        embedded = plain if SPEAKER_EMBED else turn.text
        if DATE_LEXICAL and day:
            lexical = f"{day}\n{lexical}"
        if NEIGHBOUR_EMBED and index > 0:
            embedded = f"{_clip(_labelled(turns[index - 1]))}\n{embedded}"
        if DATE_EMBED and day:
            embedded = f"{day}\n{embedded}"
        out.append(TurnText(lexical, embedded))
    return out


def _labelled(turn: Message) -> str:
    """The turn as `Name: words`: a paragraph's speaker label without its markup and tag."""
    found = speaker(turn.text)
    return f"{found.name}: {found.body}" if found is not None else turn.text


def _day(moment: str | None) -> str | None:
    when = time_key(moment.replace("Z", "+00:00")) if moment else None
    return f"{when.day} {when:%B %Y}" if when else None


def _clip(text: str) -> str:
    if len(text) <= NEIGHBOUR_CHARS:
        return text
    cut = text[:NEIGHBOUR_CHARS]
    return cut[: cut.rfind(" ")] if " " in cut else cut
