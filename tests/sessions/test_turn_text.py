"""What the session index reads of a turn: the session's day for BM25, the previous turn as context
for the embedding, and a vector cache keyed by exactly what is embedded."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dory.sessions.store import SessionStore, text_hash
from dory.sessions.transcript import parse_session
from dory.sessions.turn_text import NEIGHBOUR_CHARS, turn_texts

REL = "logs/sessions/locomo/conv-9/session-02.md"
FP = "test-fingerprint"


def transcript(first: str) -> bytes:
    return (
        "---\nsession_id: conv-9-s2\n---\n# conv-9 session 2\n\n_3:00 pm on 1 February, 2023_\n\n"
        f"**Jon** (D2:1): {first}\n\n**Gina** (D2:2): Researching adoption agencies.\n"
    ).encode()


def test_bm25_reads_the_day_and_the_embedding_reads_the_previous_turn() -> None:
    session = parse_session(REL, transcript("What are you up to these days?"))
    texts = turn_texts(session)
    assert [t.lexical for t in texts] == [f"1 February 2023\n{turn.text}" for turn in session.turns()]
    assert texts[0].embedded == session.turns()[0].text  # no turn before the first
    assert texts[1].embedded == "Jon: What are you up to these days?\n" + session.turns()[1].text
    assert session.turns()[1].text == "**Gina** (D2:2): Researching adoption agencies."  # stored as said


def test_the_neighbour_context_is_cut_at_a_word() -> None:
    session = parse_session(REL, transcript("word " * 200))
    context = turn_texts(session)[1].embedded.split("\n")[0]
    assert context.startswith("Jon: word") and len(context) <= NEIGHBOUR_CHARS and not context.endswith(" ")


def test_an_edited_turn_re_embeds_the_turn_after_it(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions.sqlite", "porter unicode61 remove_diacritics 2")
    with store.conn:
        store.upsert(REL, parse_session(REL, transcript("What are you up to?")), 1, 1, "a")
    pending = store.pending_vectors(FP, 10)
    embedded = [t.embedded for t in turn_texts(parse_session(REL, transcript("What are you up to?")))]
    assert sorted(pending) == sorted((text_hash(text), text) for text in embedded)
    store.store_vectors(FP, [(digest, np.ones(4, dtype=np.float32)) for digest, _ in pending])
    assert store.pending_vectors(FP, 10) == []
    with store.conn:
        store.upsert(REL, parse_session(REL, transcript("Any news?")), 2, 2, "b")
    # Both turns changed what is embedded: the first its words, the second its context.
    assert sorted(text for _, text in store.pending_vectors(FP, 10)) == [
        "**Jon** (D2:1): Any news?",
        "Jon: Any news?\n**Gina** (D2:2): Researching adoption agencies.",
    ]
    assert store.prune_vectors() == 2  # the old vectors go, never mixed with the new ones
    store.close()
