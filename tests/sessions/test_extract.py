"""Deterministic extraction (dory/sessions/extract.py): sentences with their speakers, the most central
sentences under a word budget, cue-based decisions and open tasks, and exact values copied verbatim."""

from __future__ import annotations

import pytest

from dory.sessions import extract
from dory.sessions.extract import Sentence

TOPIC = [
    ("user", "The pelican deploy uses token auth on the staging cluster."),
    ("assistant", "Token auth for the pelican deploy was configured on staging."),  # near-duplicate of turn 0
    ("user", "My cat enjoys sunny windowsills in the afternoon."),  # off topic
    ("assistant", "The staging cluster now rejects the old pelican deploy keys."),
    ("user", "Rotate the pelican deploy keys on the staging cluster tonight."),  # near-duplicate of turn 3
]


# -- sentences and words --------------------------------------------------------------------------
def test_sentences_split_on_punctuation_and_newlines_and_skip_fences_and_fragments() -> None:
    text = (
        "First we read the config file. Then we ran it again!\n"
        "```python\nprint('Inside the fence. Never a sentence.')\n```\n"
        "Short one.\n1234567890123\nDid the second run work as expected?"
    )
    got = extract.sentences([("assistant", text)])
    assert [s.text for s in got] == [
        "First we read the config file.",
        "Then we ran it again!",
        "Did the second run work as expected?",
    ]
    assert {(s.turn, s.role, s.speaker) for s in got} == {(0, "assistant", None)}


def test_an_unclosed_fence_hides_the_rest_of_the_turn() -> None:
    got = extract.sentences([("user", "Look at this output below.\n```\nTraceback: something broke badly here")])
    assert [s.text for s in got] == ["Look at this output below."]


def test_sentences_keep_their_turn_index_and_collapse_whitespace() -> None:
    got = extract.sentences(
        [("user", "one  two\tthree  four five."), ("tool", "x"), ("assistant", "  padded   sentence   with spaces  ")]
    )
    assert [(s.turn, s.role, s.text) for s in got] == [
        (0, "user", "one two three four five."),
        (2, "assistant", "padded sentence with spaces"),
    ]


@pytest.mark.parametrize(
    ("text", "speaker", "first"),
    [
        ("**Alice** (10:02): We should ship the release on Monday.", "Alice", "We should ship the release on Monday."),
        ("Bob: I will review the migration tomorrow.", "Bob", "I will review the migration tomorrow."),
        (
            "**Dr. Grace Hopper**: Compilers are worth the effort.",
            "Dr. Grace Hopper",
            "Compilers are worth the effort.",
        ),
        ("We should ship the release on Monday.", None, "We should ship the release on Monday."),
        ("the lowercase: line is not a speaker tag.", None, "the lowercase: line is not a speaker tag."),
    ],
)
def test_a_turn_that_names_its_speaker_attributes_every_sentence(text: str, speaker: str | None, first: str) -> None:
    got = extract.sentences([("user", text + " A second sentence follows here.")])
    assert [s.speaker for s in got] == [speaker, speaker]
    assert got[0].text == first
    assert got[0].attributed() == (f"{speaker}: {first}" if speaker else first)


def test_words_drop_stop_words_single_letters_and_case() -> None:
    assert extract.words("The Pelican's deploy isn't a b c Running-FAST 42, yeah okay") == [
        "pelican's",
        "deploy",
        "isn't",
        "running",
        "fast",
        "42",
    ]
    assert extract.words("it is what it is") == []


# -- central ----------------------------------------------------------------------------------------
def test_central_picks_representative_sentences_drops_near_duplicates_and_keeps_order() -> None:
    items = extract.sentences(TOPIC)
    assert [s.turn for s in extract.central(items, 1)] == [0]
    assert [s.turn for s in extract.central(items, 2)] == [0, 3]
    # Turns 1 and 4 overlap turns 0 and 3 too much: the off-topic sentence is all that is left.
    assert [s.turn for s in extract.central(items, 10)] == [0, 2, 3]


def test_central_respects_exclusions_and_the_word_budget() -> None:
    items = extract.sentences(TOPIC)
    assert [s.turn for s in extract.central(items, 10, exclude={items[0].text})] == [1, 2, 3]
    picked = extract.central(items, 10, max_words=10)
    assert [s.turn for s in picked] == [0]  # 10 words; the next one would overflow the budget
    assert sum(len(s.text.split()) for s in picked) <= 10
    assert extract.central(items, 10, max_words=0) == []
    assert extract.central(items, 10, max_words=-5) == []
    assert extract.central([], 5) == []


def test_central_never_picks_a_sentence_without_content_words() -> None:
    items = [Sentence("it is what it is, yeah", 0, "user"), Sentence("The harbor crane lifts containers.", 1, "user")]
    assert [s.turn for s in extract.central(items, 5)] == [1]


# -- cues ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        "We decided to keep SQLite for the index.",
        "Let's go with the blue theme for now.",
        "Let\u2019s switch to uv for installs.",  # a typographic apostrophe
        "We'll use Postgres for the event store.",
        "I'll use ruff instead of black.",
        "I settled on weekly releases after the retro.",
        "Switched to ruff instead of flake8 last week.",
        "From now on every change needs a changelog entry.",
        "The plan is to merge on Friday morning.",
        "Decision: keep the index in SQLite.",
        "We agreed on a two week sprint.",
        "We've decided against the rewrite.",
        "Last week, I decided to run for office again - even though it failed before.",
    ],
)
def test_a_decision_states_a_choice_made(text: str) -> None:
    assert extract.is_decision(text)


@pytest.mark.parametrize(
    "text",
    [
        "Agreed, Caroline.",  # agreement with a remark
        "Agreed!",
        "It's a big decision, but I'm excited for what the future holds.",  # talk about deciding
        "The decision log lives in the decisions folder.",
        "What made you decide to switch?",  # questions
        "Tough decision for you?",
        "Should we decide on a database today?",
        "Let's keep going!",  # encouragement
        "We'll keep pushing each other and staying motivated.",
        "I'll start thinking about what we can do.",
        "I haven't decided yet.",  # not decided, or not by the speaker
        "We never agreed to that.",
        "I can't decide between the two.",
        "Maybe we'll use Redis.",
        "If we decide to switch, tell me first.",
        "I'm not sure we'll use Redis.",
        "I love that you chose pottery.",
        "You can use margarine instead of butter.",  # advice to someone else
        "I'll use grep to find it.",  # a tool for a step, no choice between options
        "Instead of giving up, I turned it into a lesson.",
        "I picked up a few new recipes.",
    ],
)
def test_talk_about_deciding_is_no_decision(text: str) -> None:
    assert not extract.is_decision(text)


@pytest.mark.parametrize(
    ("text", "subject"),
    [
        ("We decided to use SQLite FTS5 because it is fast.", "Use SQLite FTS5"),
        ("Let's go with the blue theme for now.", "Go with the blue theme for now"),
        ("I'll use ruff instead of black.", "Use ruff instead of black"),
        ("Decision: keep the index in SQLite.", "Keep the index in SQLite"),
        ("The plan is to merge on Friday morning.", "Merge on Friday morning"),
        ("From now on, we review every change.", "Review every change"),
        ("After the review we decided to drop Python 3.9 support, finally.", "Drop Python 3.9 support"),
        ("We decided to do doggy playdates, which is awesome for the pets.", "Do doggy playdates"),
        ("Last week, I decided to run for office again - even though it failed before.", "Run for office again"),
        ("We agreed on a two week sprint.", "Agreed on a two week sprint"),
        (
            "So we decided to make the index a derived cache that can be rebuilt from the markdown corpus at any "
            "time without losing anything.",
            "Make the index a derived cache that can be rebuilt from the markdown corpus at",  # whole words
        ),
    ],
)
def test_a_decision_is_named_by_the_clause_it_decides(text: str, subject: str) -> None:
    got = extract.decision_subject(text)
    assert got == subject and len(got) <= extract.SUBJECT_CHARS
    assert all(word in text for word in got.split()[1:])  # whole words of the sentence, never a piece of one


@pytest.mark.parametrize(
    "text",
    [
        "- [ ] write the migration",
        "TODO write the migration script",
        "We still need to rotate the keys.",
        "Next steps are the docs and the release.",
        "The docs are not yet updated.",
        "I will check the logs tomorrow.",
        "Follow-up with the vendor about pricing.",
    ],
)
def test_pending_cues(text: str) -> None:
    assert extract.PENDING.search(text)


@pytest.mark.parametrize(
    "text", ["The tests pass on every platform.", "Here is the diff you asked for.", "Thanks, that looks right to me."]
)
def test_plain_statements_are_neither_decisions_nor_pending(text: str) -> None:
    assert not extract.is_decision(text) and not extract.PENDING.search(text)


def test_decisions_keep_the_latest_ones_once_each() -> None:
    items = extract.sentences(
        [
            ("user", "We decided to use Redis for caching."),
            ("assistant", "Nothing to decide in this sentence here."),
            ("user", "WE DECIDED TO USE REDIS FOR CACHING."),  # the same decision again, other case
            ("assistant", "We agreed on a two week sprint."),
            ("user", "Going with the managed database instead."),
            ("user", "Agreed, that sounds like a big decision?"),
        ]
    )
    assert [s.turn for s in extract.decisions(items, 10)] == [0, 3, 4]
    assert [s.text for s in extract.decisions(items, 2)] == [
        "We agreed on a two week sprint.",
        "Going with the managed database instead.",
    ]
    assert [s.turn for s in extract.cued(items, extract.PENDING, 10)] == []  # a pattern still works as a cue


# -- exact values -----------------------------------------------------------------------------------
def test_values_copy_urls_ids_errors_and_commands_verbatim_first_seen_first() -> None:
    texts = [
        "Docs at https://example.com/a/b?x=1&y=2. Mirror: (https://mirror.example.org/path_1).",
        "commit 0123456789abcdef0123 fixed PROJ-281; run 550e8400-e29b-41d4-a716-446655440000 too",
        "ImportError: No module named 'yaml'\n# error in a comment is skipped\n// failed as well\nerr\n"
        "$ pytest -q tests/test_a.py\nok",
        "see https://example.com/a/b?x=1&y=2 again",  # a duplicate
    ]
    calls = [
        "bash: git status --short",
        "Shell: make lint",
        "edit: src/app/main.py",
        "write: notes.txt",
        "str_replace_editor: docs/guide.md",
        "read: README.md",
        "create: scratch buffer",
    ]
    got = extract.values(texts, calls, 12)
    assert got == {
        "files": ["src/app/main.py", "notes.txt", "docs/guide.md", "scratch"],
        "urls": ["https://example.com/a/b?x=1&y=2", "https://mirror.example.org/path_1"],
        "ids": ["0123456789abcdef0123", "PROJ-281", "550e8400-e29b-41d4-a716-446655440000"],
        "errors": ["ImportError: No module named 'yaml'"],
        "commands": ["git status --short", "make lint", "pytest -q tests/test_a.py"],
    }


def test_error_lines_need_a_sensible_length_and_http_status_codes_count() -> None:
    long_line = "error " + "x" * 240
    got = extract.values(["HTTP 503 from upstream", "fatal", long_line, "permission denied for /srv"], [], 12)
    assert got["errors"] == ["HTTP 503 from upstream", "permission denied for /srv"]


def test_values_stop_at_the_limit() -> None:
    urls = [f"https://host{n}.example.com/x" for n in range(5)]
    assert extract.values([" ".join(urls)], [], 3)["urls"] == urls[:3]


def test_paths_in_prose_with_line_numbers_relative_and_bare_but_not_urls() -> None:
    text = (
        "look at dory/sessions/extract.py:12 and ./a/b.txt and ~/notes/todo.md, then README.md "
        "and https://example.com/a/b.md and pyproject.toml; version 1.2 is no path"
    )
    assert extract.paths_in([text, "README.md again"], 12) == [
        "dory/sessions/extract.py:12",
        "./a/b.txt",
        "~/notes/todo.md",
        "README.md",
        "pyproject.toml",
    ]


# -- bugs -------------------------------------------------------------------------------------------
def test_issue_references_are_ids() -> None:
    assert extract.values(["This fixes #123 and closes #4567."], [], 12)["ids"] == ["#123", "#4567"]


def test_a_todo_label_at_the_start_of_a_turn_is_still_a_pending_task() -> None:
    items = extract.sentences([("user", "TODO: add retries to the uploader module")])
    assert [s.attributed() for s in extract.cued(items, extract.PENDING, 5)] == [
        "TODO: add retries to the uploader module"
    ]
