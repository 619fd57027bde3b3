"""Which sentences state a durable fact and which page it belongs on (dory/sessions/facts.py): decisions get
their own page named by a clause that stands alone; the user's statements about themselves need strong
evidence before core/user.md (an explicit "remember that I…", else `needs_repeat`); a repository's facts go
to the project's page or to the thing they name, never to core; named speakers are people, not the owner."""

from __future__ import annotations

import pytest

from dory.sessions.facts import Found, classify, project_of, stands_alone, thing_named
from dory.sessions.transcript import Session


@pytest.mark.parametrize(
    ("text", "role", "speaker", "project", "found"),
    [
        # decisions, by anyone in the conversation, named by their clause
        (
            "We decided to use SQLite FTS5 because it is fast.",
            "assistant",
            None,
            None,
            Found("decision", "Use SQLite FTS5", "decision"),
        ),
        (
            "Let's go with uv instead of pip.",
            "user",
            None,
            "pelican",
            Found("decision", "Go with uv instead of pip", "decision"),
        ),
        (
            "Last week, I decided to run for office again.",
            "user",
            "John",
            None,
            Found("decision", "Run for office again", "decision"),
        ),
        # the user about themselves: core only on strong evidence
        ("I prefer short answers.", "user", None, None, Found("preference", "user", None, needs_repeat=True)),
        (
            "I always write commit messages in English.",
            "user",
            None,
            None,
            Found("preference", "user", None, needs_repeat=True),
        ),
        ("My favourite editor is Helix.", "user", None, None, Found("preference", "user", None, needs_repeat=True)),
        ("Remember that I am allergic to peanuts.", "user", None, None, Found("fact", "user", None)),
        # a repository or a tool: the project's page, else the thing named, never core
        ("Remember that this repo uses pnpm, not npm.", "user", None, "pelican", Found("fact", "pelican", "project")),
        (
            "I always run the tests in this repo with -x.",
            "user",
            None,
            "pelican",
            Found("preference", "pelican", "project"),
        ),
        (
            "Remember that the staging cluster is called heron-7.",
            "user",
            None,
            None,
            Found("fact", "staging cluster", "concept"),
        ),
        ("Note that the `deploy.sh` script needs root.", "user", None, None, None),  # no thing named plainly
        ("I always run the tests in this repo with -x.", "user", None, None, None),  # no project known
        # people talking: each speaker's statements about themselves are theirs
        (
            "I like to take a look at the sunset after work.",
            "user",
            "John",
            None,
            Found("preference", "John", "person"),
        ),
        ("Just remember that every small step counts.", "user", "Gina", None, None),  # advice, about no one
    ],
)
def test_what_is_found_and_where_it_goes(
    text: str, role: str, speaker: str | None, project: str | None, found: Found | None
) -> None:
    assert classify(text, role, speaker, project) == found


@pytest.mark.parametrize(
    "text",
    [
        "Agreed, Caroline.",
        "It's a big decision, but I'm excited for what the future holds.",
        "What made you decide to transition?",
        "Do you prefer tea or coffee?",  # questions state nothing
        "I never knew turtles could be so interesting.",  # a memory, not a habit
        "I always wanted to see the northern lights.",
        "Seeing my characters come alive was my favorite part.",  # no "my favourite X is Y"
        "Let's keep going and chase our dreams!",
        "We decided to include this at the beginning.",  # a decision whose name points back ("this")
        "I chose them for their support.",  # only a verb and a pronoun
    ],
)
def test_talk_that_states_nothing_durable(text: str) -> None:
    assert classify(text, "user") is None
    assert classify(text, "user", "Nate") is None


def test_the_assistant_s_preferences_and_tool_output_are_nobody_s() -> None:
    assert classify("I prefer to answer briefly.", "assistant") is None
    assert classify("Remember that I am only a bot.", "assistant") is None
    assert classify("We decided to drop Python 3.9 support.", "tool") is None
    assert classify("We decided to drop Python 3.9 support.", "assistant") == Found(
        "decision", "Drop Python 3.9 support", "decision"
    )


def test_a_typographic_apostrophe_reads_like_a_plain_one() -> None:
    assert classify("Let\u2019s switch to ruff for linting.", "user") == Found(
        "decision", "Switch to ruff for linting", "decision"
    )
    assert classify("I don\u2019t like long meetings.", "user") == Found("preference", "user", None, needs_repeat=True)


@pytest.mark.parametrize(
    ("subject", "alone"),
    [
        ("Use SQLite FTS5", True),
        ("Chose them", False),
        ("Picked this color", False),
        ("Keep it simple", False),
        ("Chose furniture that looks great", True),
        ("Decided", False),
    ],
)
def test_a_decision_page_needs_a_name_that_stands_alone(subject: str, alone: bool) -> None:
    assert stands_alone(subject) is alone


@pytest.mark.parametrize(
    ("clause", "thing"),
    [
        ("the staging cluster is called heron-7.", "staging cluster"),
        ("our nightly backup runs at 3 am", "nightly backup"),
        ("it is read-only", None),
        ("this needs a restart", None),
        ("sometimes stumbling blocks can be opened doors", "stumbling blocks"),
    ],
)
def test_the_thing_a_fact_is_about(clause: str, thing: str | None) -> None:
    assert thing_named(clause) == thing


@pytest.mark.parametrize(
    ("extra", "project"),
    [
        ({"cwd": "/home/me/code/pelican"}, "pelican"),
        ({"cwd": "/home/me/code/pelican/"}, "pelican"),
        ({"cwd": "C:\\Users\\me\\src\\heron"}, "heron"),
        ({"project": "dory", "cwd": "/tmp/x"}, "dory"),
        ({"cwd": "  "}, None),
        ({}, None),
    ],
)
def test_the_project_of_a_session_is_its_working_folder(extra: dict[str, str], project: str | None) -> None:
    assert project_of(Session("s-1", "codex", "desk", extra=extra)) == project
