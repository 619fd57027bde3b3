"""`dory wake`: profile order, per-section cuts, omissions, project/decision/session lines, the
privacy profile's guarantees, and the hard token and character caps for any corpus."""

from __future__ import annotations

import datetime as dt
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from dory.config import WakeProfile, WakeSettings, load_settings
from dory.context.wake import BUILTIN_PROFILES, RecentSession, build_wake
from dory.errors import UsageError
from dory.index.embedders import MINILM_COUNTER_ID, approx_token_count, default_token_counter
from dory.models import WakeRequest, WakeResponse

WriteCorpus = Callable[[dict[str, str | bytes]], Path]  # the `write_corpus` fixture of tests/conftest.py
NOW = dt.datetime(2026, 3, 4, 5, 6, 7, tzinfo=dt.UTC)
CORE = ("user", "soul", "env", "active", "identity", "defaults")


def core_files(body_lines: int = 2) -> dict[str, str | bytes]:
    """Six core files, each with a unique heading and `body_lines` unique lines."""
    files: dict[str, str | bytes] = {}
    for name in CORE:
        body = "\n".join(f"{name} fact number {i}." for i in range(body_lines))
        files[f"core/{name}.md"] = f"---\ntitle: {name.title()}\ntype: core\n---\n# {name.title()} heading\n\n{body}\n"
    return files


def wake(
    root: Path,
    profile: str = "default",
    recent: list[RecentSession] | None = None,
    count: Callable[[str], int] = approx_token_count,
    now: dt.datetime = NOW,
    settings: WakeSettings | None = None,
    **req: object,
) -> WakeResponse:
    request = WakeRequest(profile=profile, **req)  # type: ignore[arg-type]
    return build_wake(root, settings or WakeSettings(), request, count, recent or [], now=now)


def names(resp: WakeResponse) -> list[str]:
    return [section.name for section in resp.sections]


def assert_caps(resp: WakeResponse, count: Callable[[str], int]) -> None:
    assert count(resp.block) <= resp.budget and len(resp.block) <= resp.max_chars
    assert resp.tokens == count(resp.block) and resp.chars == len(resp.block)


@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        ("default", ["user", "soul", "env", "active", "identity", "defaults"]),
        ("casual", ["user", "soul", "identity", "defaults", "active", "env"]),
        ("coding", ["active", "env", "defaults"]),
        ("writing", ["soul", "writing_voice", "defaults", "active"]),
        ("privacy", ["privacy_boundaries", "defaults", "soul"]),
    ],
)
def test_each_profile_has_its_order(write_corpus: WriteCorpus, profile: str, expected: list[str]) -> None:
    files = core_files()
    files["core/user.md"] += "\n## Boundaries\n- Do not discuss my family.\n"
    files["knowledge/personal/my-voice.md"] = "# Voice\nShort sentences. No jargon.\n"
    root = write_corpus(files)
    resp = wake(root, profile, budget=1500)
    assert names(resp) == expected
    positions = [resp.block.index(f"# {name.title()} heading") for name in expected if name in CORE]
    assert positions == sorted(positions)
    assert resp.omitted == [] and resp.frozen_at == NOW.isoformat()
    assert_caps(resp, approx_token_count)


def test_writing_voice_prefers_the_writing_voice_page(write_corpus: WriteCorpus) -> None:
    root = write_corpus(
        {
            **core_files(),
            "knowledge/personal/a-voice.md": "# A\nWRONG VOICE\n",
            "knowledge/personal/writing-voice.md": "# Writing voice\nRIGHT VOICE\n",
        }
    )
    resp = wake(root, "writing", budget=1500)
    assert "RIGHT VOICE" in resp.block and "WRONG VOICE" not in resp.block
    assert resp.sections[1].source == "knowledge/personal/writing-voice.md"


def test_a_section_over_its_budget_is_cut_with_a_marker(write_corpus: WriteCorpus) -> None:
    files = core_files()
    files["core/user.md"] = "---\ntitle: User\n---\n# User heading\n" + "".join(
        f"- user line {i} says something fairly ordinary.\n" for i in range(300)
    )
    root = write_corpus(files)
    resp = wake(root, budget=1500)
    user = resp.sections[0]
    assert user.name == "user" and user.truncated and user.tokens <= BUILTIN_PROFILES["default"].budgets["user"]
    cut = resp.block.split("\n\n")[0]
    assert cut.endswith("<!-- wake: truncated; run `dory get core/user.md` for the rest -->")
    assert "user line 0 " in cut and "user line 299" not in cut
    assert names(resp)[1:] == ["soul", "env", "active", "identity", "defaults"]  # later sections keep their room
    assert not any(section.truncated for section in resp.sections[1:])


def test_frontmatter_is_stripped_and_timeline_dropped(write_corpus: WriteCorpus) -> None:
    root = write_corpus(
        {
            "core/user.md": "---\ntitle: User\nsecret: FRONTMATTER-VALUE\n---\n# User\nHello there.\n"
            "<!-- TIMELINE: append-only below this line -->\n## Timeline\n- 2026-01-01: OLD-HISTORY\n",
            "core/soul.md": "---\ntitle: Soul Page\n---\nNo heading in this file.\n",
            "core/env.md": "---\ntitle: [broken\n---\nEnv text.\n",
        }
    )
    resp = wake(root)
    assert resp.block.startswith("# User\nHello there.")
    assert "FRONTMATTER-VALUE" not in resp.block and "OLD-HISTORY" not in resp.block
    assert "# Soul Page\nNo heading in this file." in resp.block  # a title heading is added
    assert "[broken" not in resp.block and "Env text." in resp.block  # broken YAML is still frontmatter


def test_missing_and_unreadable_files_are_omitted(write_corpus: WriteCorpus) -> None:
    root = write_corpus(
        {
            "core/soul.md": "# Soul\nBe brief.\n",
            "core/env.md": b"# Env\x00binary\n",
            "core/active.md": "",
            "core/identity.md": "---\ntitle: Identity\n---\n",
        }
    )
    resp = wake(root)
    assert names(resp) == ["soul"]
    assert resp.omitted[0] == "core/user.md: missing"
    assert "core/env.md: unreadable (contains NUL bytes at offset 5 (binary file?))" in resp.omitted
    assert "core/active.md: unreadable (empty file)" in resp.omitted
    assert "core/identity.md: no body text" in resp.omitted
    assert "core/defaults.md: missing" in resp.omitted
    assert "left out" not in resp.block  # nothing missing can be fetched, so no last line


def test_sections_without_room_are_named_on_the_last_line(write_corpus: WriteCorpus) -> None:
    root = write_corpus(core_files(body_lines=12))
    resp = wake(root, budget=120)
    assert_caps(resp, approx_token_count)
    assert names(resp)[0] == "user"
    left = [entry.split(":")[0] for entry in resp.omitted]
    assert left and all(entry.endswith(": no room in the budget") for entry in resp.omitted)
    last = resp.block.rsplit("\n", 1)[-1]
    assert last.startswith("<!-- wake: left out ") and last.endswith("; run `dory get <path>` for each -->")
    assert left[0] in last


def test_a_huge_single_line_first_section_is_cut_by_characters(write_corpus: WriteCorpus) -> None:
    root = write_corpus({"core/user.md": "雪" * 30000, "core/soul.md": "# Soul\n" + "word " * 5000})
    resp = wake(root, budget=60, max_chars=500)
    assert_caps(resp, approx_token_count)
    assert resp.block.startswith("# user\n雪") and resp.sections[0].truncated
    assert "雪\n<!-- wake: truncated; run `dory get core/user.md` for the rest -->" in resp.block
    assert "core/soul.md: no room in the budget" in resp.omitted


def test_a_later_one_line_paragraph_shows_its_start(write_corpus: WriteCorpus) -> None:
    root = write_corpus(
        {"core/user.md": "# User\nShort.\n", "core/soul.md": "# Soul\n" + "Be candid and brief. " * 300}
    )
    resp = wake(root, budget=1500)
    assert "# Soul\nBe candid and brief. Be candid" in resp.block
    assert resp.block.endswith("\n<!-- wake: truncated; run `dory get core/soul.md` for the rest -->")
    assert resp.sections[1].truncated and resp.sections[1].tokens <= BUILTIN_PROFILES["default"].budgets["soul"]


LONG_NAME = "knowledge/" + "n" * 200 + ".md"  # its path alone is over 50 tokens


def test_first_section_shows_when_its_marker_is_over_the_budget(write_corpus: WriteCorpus) -> None:
    root = write_corpus({LONG_NAME: "# Long heading\n" + "".join(f"line {i} of the long page\n" for i in range(99))})
    resp = wake(root, "long", budget=50, settings=WakeSettings(profiles={"long": WakeProfile(sections=[LONG_NAME])}))
    assert_caps(resp, approx_token_count)
    assert resp.block.startswith("# Long heading\nline 0 of the long page") and "<!--" not in resp.block
    assert resp.sections[0].truncated


def test_first_section_wins_over_a_last_line_too_long_to_fit(write_corpus: WriteCorpus) -> None:
    root = write_corpus(
        {"core/user.md": "# User\n" + "".join(f"user line {i}\n" for i in range(99)), LONG_NAME: "# Long\ntext\n"}
    )
    profile = WakeProfile(sections=["core/user.md", LONG_NAME])
    resp = wake(root, "mine", budget=50, settings=WakeSettings(profiles={"mine": profile}))
    assert_caps(resp, approx_token_count)
    assert resp.block.startswith("# User\nuser line 0") and f"{LONG_NAME}: no room in the budget" in resp.omitted


@pytest.mark.parametrize("handle", ["atlas", "project:Atlas", "Analytical Engine", "the-engine", "AE"])
def test_project_is_found_by_slug_title_or_alias(write_corpus: WriteCorpus, handle: str) -> None:
    root = write_corpus(
        {
            **core_files(),
            "projects/atlas/state.md": "---\ntitle: Analytical Engine\naliases: [The Engine, AE]\n---\n"
            "# Analytical Engine\n## Current State\nATLAS-STATE\n",
            "projects/other/state.md": "---\ntitle: Other\n---\n# Other\nOTHER-STATE\n",
            "projects/aardvark/state.md": "---\ntitle: Aardvark\naliases: [atlas]\n---\n# Aardvark\nOTHER-STATE\n",
        }
    )
    resp = wake(root, "coding", project=handle, budget=1500)
    assert names(resp) == ["active", "project", "env", "defaults"]  # right after the first section
    assert "# Project: Analytical Engine (projects/atlas/state.md)\n## Current State\nATLAS-STATE" in resp.block
    assert "OTHER-STATE" not in resp.block and resp.warnings == []


def test_project_as_a_single_page(write_corpus: WriteCorpus) -> None:
    root = write_corpus({**core_files(), "projects/beta.md": "# Beta\nBETA-STATE\n"})
    assert "BETA-STATE" in wake(root, project="beta").block


def test_unknown_project_is_a_warning(write_corpus: WriteCorpus) -> None:
    root = write_corpus(core_files())
    resp = wake(root, project="nowhere")
    assert "project" not in names(resp) and len(resp.warnings) == 1 and "'nowhere' not found" in resp.warnings[0]


def decision(title: str, date: str, extra: str = "", body: str = "It was decided. More text.") -> str:
    return f"---\ntitle: {title}\npinned: true\nupdated: {date}\n{extra}---\n# {title}\n\n## Decision\n{body}\n"


def test_pinned_decisions_are_filtered_and_newest_first(write_corpus: WriteCorpus) -> None:
    root = write_corpus(
        {
            **core_files(),
            "decisions/a.md": decision("Use SQLite", "2026-01-05", body="SQLite holds the index. It is one file."),
            "decisions/canonical/b.md": decision("Use FAISS", "2026-01-04"),
            "decisions/c.md": decision("Oldest", "2025-01-01"),
            "decisions/d.md": decision("Newer but retired", "2026-02-01", "status: retired\n"),
            "decisions/e.md": decision("Superseded", "2026-02-02", "status: superseded\n"),
            "decisions/f.md": decision("Unpinned", "2026-02-03").replace("pinned: true", "pinned: false"),
            "decisions/g.md": decision("Private", "2026-02-04", "visibility: private\n"),
            "decisions/h.md": decision("Stale", "2026-02-05", "status: stale\n"),
            "decisions/j.md": decision("Replaced", "2026-02-06", "superseded_by: decisions/a.md\n"),
            "decisions/i.md": decision("Third", "2026-01-03"),
        }
    )
    resp = wake(root, budget=1500)
    section = resp.block.split("## Pinned decisions\n")[1].split("\n\n")[0]
    assert section.splitlines() == [
        "- Use SQLite (decisions/a.md): SQLite holds the index.",
        "- Use FAISS (decisions/canonical/b.md): It was decided.",
        "- Third (decisions/i.md): It was decided.",
    ]
    assert "decisions/g.md: visibility: private (list the page in the profile to include it)" in resp.omitted
    assert wake(root, settings=WakeSettings(pinned_decisions=0)).block.count("Pinned") == 0


def sessions(count: int) -> list[RecentSession]:
    return [
        RecentSession(
            f"logs/sessions/claude/box/2026-01-0{i}-s{i}.md", f"Session {i}", "claude", f"2026-01-0{i}T10:00:00Z"
        )
        for i in range(1, count + 1)
    ]


def test_recent_sessions_are_one_line_each(write_corpus: WriteCorpus) -> None:
    root = write_corpus(core_files())
    resp = wake(root, budget=1500, recent=sessions(5))
    assert resp.block.endswith(
        "## Recent sessions\n"
        "- 2026-01-05 claude: Session 5 (logs/sessions/claude/box/2026-01-05-s5.md)\n"
        "- 2026-01-04 claude: Session 4 (logs/sessions/claude/box/2026-01-04-s4.md)\n"
        "- 2026-01-03 claude: Session 3 (logs/sessions/claude/box/2026-01-03-s3.md)"
    )


def test_recent_sessions_stop_at_the_budget(write_corpus: WriteCorpus) -> None:
    root = write_corpus(core_files())
    full = wake(root, budget=1500, recent=sessions(3))
    session_tokens = full.sections[-1].tokens
    budget = full.tokens - session_tokens // 2 + 30  # room for about half the session list and the last line
    resp = wake(root, budget=budget, recent=sessions(3))
    assert_caps(resp, approx_token_count)
    assert "- 2026-01-03 claude: Session 3" in resp.block and "Session 1 (" not in resp.block.split("<!--")[0]
    assert "logs/sessions/claude/box/2026-01-01-s1.md: no room in the budget" in resp.omitted
    assert "<!--" not in resp.block  # left-out sessions are not worth a last line


PERSONAL_MARKERS = (
    "PMARK-NAME",
    "PMARK-STREET",
    "PMARK-NOTES",
    "PMARK-VOICE",
    "PMARK-SOUL",
    "PMARK-DECISION",
    "PMARK-PROJECT",
    "PMARK-SESSION",
    "PMARK-MAIL",
    "PMARK-SENS",
    "PMARK-LINK",
)


def privacy_corpus(write_corpus: WriteCorpus) -> Path:
    root = write_corpus(
        {
            "core/user.md": "---\ntitle: User\n---\n# User\nI am PMARK-NAME.\n\n## Basics\n- Name: PMARK-NAME\n\n"
            "## Boundaries\n- Do not share my health details.\n- Email me at pmark-mail@example.com\n"
            "- My e-mail PMARK-MAIL is private.\n\n### Home address\n- PMARK-STREET 12\n\n"
            "## Hobbies\n- PMARK-NAME likes chess.\n",
            "core/identity.md": "# Identity\nValues PMARK-NAME holds.\n"
            "## Public persona\n- Talk about my work freely.\n"
            "## boundaries\n- do not share my health details.\n",
            "core/soul.md": "---\ntitle: Soul\nvisibility: private\n---\n# Soul\nPMARK-SOUL\n",
            "core/defaults.md": "---\ntitle: Defaults\nsensitivity: health\n---\n# Defaults\nPMARK-SENS\n",
            "knowledge/personal/notes.md": "# Notes\nPMARK-NOTES\n",
            "knowledge/personal/writing-voice.md": "# Voice\nPMARK-VOICE\n",
            "notes/link.md": "# Link\nPMARK-LINK\n",
            "decisions/x.md": decision("PMARK-DECISION", "2026-01-01", "visibility: personal\n"),
            "projects/p/state.md": "---\ntitle: P\nvisibility: private\n---\n# P\nPMARK-PROJECT\n",
        }
    )
    (root / "notes/me.md").symlink_to(root / "knowledge/personal/notes.md")
    return root


def test_privacy_profile_never_shows_personal_pages(write_corpus: WriteCorpus) -> None:
    root = privacy_corpus(write_corpus)
    recent = [RecentSession("logs/sessions/a.md", "PMARK-SESSION", "claude", "2026-01-01")]
    overridden = WakeSettings(
        profiles={
            "privacy": WakeProfile(
                sections=[
                    "privacy_boundaries",
                    "core/user.md",
                    "knowledge/personal/notes.md",
                    "notes/me.md",
                    "writing_voice",
                    "core/soul.md",
                    "core/defaults.md",
                    "notes/link.md",
                ]
            )
        }
    )
    for settings in (WakeSettings(), overridden):
        for budget in (50, 600, 1500):
            resp = wake(root, "privacy", recent=recent, settings=settings, project="p", budget=budget)
            assert resp.block.startswith("# Privacy Boundaries\n## Boundaries\n- Do not share my health details.")
            if budget == 1500:
                assert "## Public persona\n- Talk about my work freely." in resp.block
                assert resp.block.count("health details") == 1  # deduplicated across both files
            leaked = {marker for marker in PERSONAL_MARKERS if marker.lower() in resp.block.lower()}
            assert leaked <= ({"PMARK-LINK"} if settings is overridden else set())  # a page that is not personal
            assert ("PMARK-LINK" in leaked) == (settings is overridden)
    # The same corpus under the default profile does show the user's page: the markers are reachable.
    assert "PMARK-NAME" in wake(root, budget=1500).block


def test_private_pages_need_an_explicit_listing(write_corpus: WriteCorpus) -> None:
    root = write_corpus(
        {
            "core/user.md": "---\ntitle: User\nvisibility: private\n---\n# User\nLISTED-PRIVATE\n",
            "knowledge/personal/writing-voice.md": "---\nvisibility: private\n---\n# Voice\nFOUND-PRIVATE\n",
            "core/soul.md": "# Soul\nx\n",
        }
    )
    assert "LISTED-PRIVATE" in wake(root).block
    resp = wake(root, "writing")
    assert "FOUND-PRIVATE" not in resp.block and "writing_voice" not in names(resp)


def test_dory_toml_profiles_replace_and_add(write_corpus: WriteCorpus) -> None:
    files = core_files(body_lines=30)
    files["dory.toml"] = (
        '[wake.profiles.coding]\nsections = ["core/soul.md", "user"]\nbudgets = { soul = 40 }\n'
        '[wake.profiles.mine]\nsections = ["core/env.md", "../outside.md"]\nbudgets = { env = 0 }\n'
    )
    root = write_corpus(files)
    wake_settings = load_settings(root, {}, env={}).wake
    coding = wake(root, "coding", settings=wake_settings, budget=1500)
    assert names(coding) == ["soul", "user"] and coding.sections[0].truncated and coding.sections[0].tokens <= 40
    mine = wake(root, "mine", settings=wake_settings)
    assert names(mine) == ["env"] and mine.sections[0].truncated  # a budget of 0 still shows the start
    assert any("../outside.md" in w for w in mine.warnings)
    assert names(wake(root, "default", settings=wake_settings, budget=1500))[0] == "user"  # others stay built in


def test_unknown_profile_is_a_usage_error(write_corpus: WriteCorpus) -> None:
    root = write_corpus(core_files())
    with pytest.raises(
        UsageError, match="unknown wake profile 'nope'; known profiles: casual, coding, default, mine, privacy, writing"
    ):
        wake(root, "nope", settings=WakeSettings(profiles={"mine": WakeProfile(sections=["core/env.md"])}))


def test_same_files_give_the_same_bytes(write_corpus: WriteCorpus) -> None:
    files = core_files(body_lines=40)
    files.update({f"decisions/d{i}.md": decision(f"D{i}", "2026-01-01") for i in range(5)})
    root = write_corpus(files)
    first = wake(root, budget=300, recent=sessions(4), project="none")
    again = wake(root, budget=300, recent=list(reversed(sessions(4))), project="none")
    assert first.model_dump() == again.model_dump()
    later = wake(root, budget=300, recent=sessions(4), project="none", now=NOW + dt.timedelta(days=1))
    assert later.block == first.block and later.frozen_at != first.frozen_at


# Random corpora: the caps must hold whatever the files say.
_CHARS = st.characters(blacklist_categories=("Cs",))  # lone surrogates cannot be written as UTF-8
_LINE = st.one_of(
    st.text(_CHARS, max_size=80),
    st.sampled_from(["# Boundaries", "## Do not", "---", "<!-- TIMELINE -->", "", "- email a@b.c", "雪国 🎉 😀"]),
    st.builds(lambda piece, times: piece * times, st.text(_CHARS, min_size=1, max_size=12), st.integers(1, 3000)),
)
_FILE = st.one_of(
    st.none(),
    st.just(""),
    st.lists(_LINE, max_size=60).map("\n".join),
    st.builds(
        lambda title, body: f"---\ntitle: {title!r}\npinned: true\n---\n{body}",
        st.text(_CHARS, max_size=30),
        st.lists(_LINE, max_size=30).map("\n".join),
    ),
)
_RECENT = st.lists(
    st.builds(
        RecentSession,
        st.text(_CHARS, max_size=200),
        st.text(_CHARS, max_size=300),
        st.text(_CHARS, max_size=50),
        st.one_of(st.none(), st.text(_CHARS, max_size=30)),
    ),
    max_size=5,
)


def check_caps_for_random_corpora(count: Callable[[str], int]) -> None:
    @hypothesis_settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        files=st.fixed_dictionaries(
            {f"core/{name}.md": _FILE for name in CORE}
            | {"decisions/d.md": _FILE, "projects/p/state.md": _FILE, "knowledge/personal/writing-voice.md": _FILE}
        ),
        profile=st.sampled_from(sorted(BUILTIN_PROFILES)),
        recent=_RECENT,
        budget=st.integers(50, 1500),
        max_chars=st.integers(500, 10_000),
    )
    def run(
        files: dict[str, str | None], profile: str, recent: list[RecentSession], budget: int, max_chars: int
    ) -> None:
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            for rel, text in files.items():
                if text is not None:
                    (root / rel).parent.mkdir(parents=True, exist_ok=True)
                    (root / rel).write_text(text, encoding="utf-8")
            resp = wake(root, profile, recent=recent, count=count, project="p", budget=budget, max_chars=max_chars)
        assert resp.budget == budget and resp.max_chars == max_chars
        assert_caps(resp, count)

    run()


def test_caps_hold_for_random_corpora_approx_counter() -> None:
    check_caps_for_random_corpora(approx_token_count)


@pytest.mark.model
def test_caps_hold_for_random_corpora_wordpiece_counter() -> None:
    counter = default_token_counter(None)
    if counter.identity != MINILM_COUNTER_ID:
        pytest.skip("MiniLM tokenizer not installed")
    check_caps_for_random_corpora(counter.count)
