"""Canonical pages as pure text functions: templates, routing, parse/render, compile, appends."""

from __future__ import annotations

import pytest

from dory.memory.canonical import (
    TIMELINE_MARKER,
    Page,
    append_text,
    compile_page,
    latest_timeline_date,
    parse_page,
    render_page,
    scaffold,
    section_for,
    template,
    timeline_entry,
)
from dory.memory.claims import Claim, ClaimEvent

ENTITY = "person:ana"


def claim(cid: str, statement: str, kind: str = "fact", status: str = "active", at: str = "2024-01-01") -> Claim:
    return Claim(cid, ENTITY, kind, statement, status, at, None, None, f"sources/semantic/{cid}.md")


def event(
    cid: str,
    statement: str,
    kind: str = "fact",
    what: str = "added",
    at: str = "2024-01-01T09:00:00",
    reason: str | None = None,
    ends: tuple[str, ...] = (),
) -> ClaimEvent:
    return ClaimEvent(
        cid, ENTITY, kind, what, statement, at, ends=ends, reason=reason, path=f"sources/semantic/{cid}-{what}.md"
    )


def section(page: Page, name: str) -> list[str]:
    return next(content for heading, content in page.sections if heading == name)


def names(page: Page) -> list[str]:
    return [heading for heading, _ in page.sections]


def is_subsequence(small: list[str], big: list[str]) -> bool:
    rest = iter(big)
    return all(any(line == other for other in rest) for line in small)


# --- templates and routing ---------------------------------------------------------------------------

TEMPLATES = {
    ("person", "ana"): (
        "Summary",
        "Current Facts",
        "Preferences And Working Style",
        "Goals And Priorities",
        "Related Decisions And Projects",
    ),
    ("project", "dory"): (
        "Summary",
        "Current State",
        "Goals",
        "Open Work",
        "Key Decisions",
        "Dependencies And Related Concepts",
    ),
    ("concept", "rrf"): (
        "Summary",
        "Definition",
        "Key Claims",
        "Current Understanding",
        "Related People Projects And Decisions",
        "Open Questions",
    ),
    ("decision", "use-sqlite"): (
        "Decision",
        "Status",
        "Context",
        "Rationale",
        "Alternatives Considered",
        "Consequences",
        "Related Projects And Concepts",
    ),
    ("core", "user"): (
        "Summary",
        "Current Facts",
        "Preferences And Working Style",
        "Goals And Priorities",
        "Constraints",
    ),
    ("core", "identity"): ("Agent Identity", "Role", "Channels And Surfaces", "Boundaries"),
    ("core", "soul"): ("Voice", "Behavior Rules", "Banned Patterns", "Interaction Principles"),
    ("core", "env"): ("Environment", "Machines And Paths", "Secrets And Auth Notes", "Services"),
    ("core", "active"): ("Current Focus", "Top Priorities", "Current Risks", "Open Loops", "Recent Changes"),
    ("core", "defaults"): ("Default Models", "Default Tools", "Default Operating Assumptions", "Fallback Rules"),
    ("core", "travel"): ("Summary", "Current Facts"),
}


@pytest.mark.parametrize(("family", "slug"), list(TEMPLATES))
def test_each_template_lists_its_sections_in_order(family: str, slug: str) -> None:
    assert template(family, slug) == TEMPLATES[(family, slug)]
    page = scaffold(family, slug)
    assert names(page) == list(TEMPLATES[(family, slug)])
    assert page.has_marker and page.timeline == [] and page.evidence == []


def test_core_templates_go_by_stem_case_insensitively() -> None:
    assert template("core", "User") == TEMPLATES[("core", "user")]


def test_unknown_family_or_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="family"):
        template("people", "ana")
    with pytest.raises(ValueError, match="family"):
        section_for("core:user", "user", "fact")
    with pytest.raises(ValueError, match="kind"):
        section_for("person", "ana", "opinion")


ROUTES = [
    (
        "person",
        "ana",
        {
            "fact": "Current Facts",
            "state": "Current Facts",
            "note": "Current Facts",
            "preference": "Preferences And Working Style",
            "decision": "Related Decisions And Projects",
        },
    ),
    (
        "project",
        "dory",
        {
            "state": "Current State",
            "fact": "Current State",
            "note": "Open Work",
            "decision": "Key Decisions",
            "preference": "Goals",
        },
    ),
    (
        "concept",
        "rrf",
        {
            "fact": "Key Claims",
            "state": "Current Understanding",
            "preference": "Current Understanding",
            "decision": "Current Understanding",
            "note": "Open Questions",
        },
    ),
    (
        "decision",
        "x",
        {"decision": "Decision", "fact": "Decision", "state": "Decision", "note": "Context", "preference": "Rationale"},
    ),
    (
        "core",
        "user",
        {
            "fact": "Current Facts",
            "state": "Current Facts",
            "note": "Current Facts",
            "preference": "Preferences And Working Style",
            "decision": "Constraints",
        },
    ),
    (
        "core",
        "identity",
        {"fact": "Role", "state": "Role", "preference": "Role", "decision": "Role", "note": "Boundaries"},
    ),
    ("core", "soul", dict.fromkeys(("fact", "state", "preference", "decision", "note"), "Behavior Rules")),
    (
        "core",
        "env",
        {
            "fact": "Environment",
            "state": "Environment",
            "preference": "Environment",
            "decision": "Environment",
            "note": "Services",
        },
    ),
    (
        "core",
        "active",
        {
            "fact": "Current Focus",
            "state": "Current Focus",
            "preference": "Current Focus",
            "note": "Open Loops",
            "decision": "Recent Changes",
        },
    ),
    (
        "core",
        "defaults",
        dict.fromkeys(("fact", "state", "preference", "decision", "note"), "Default Operating Assumptions"),
    ),
    ("core", "travel", dict.fromkeys(("fact", "state", "preference", "decision", "note"), "Current Facts")),
]


@pytest.mark.parametrize(("family", "slug", "routes"), ROUTES)
def test_section_for_routes_every_kind(family: str, slug: str, routes: dict[str, str]) -> None:
    assert {kind: section_for(family, slug, kind) for kind in routes} == routes
    assert set(routes.values()) <= set(template(family, slug))


# --- parse and render --------------------------------------------------------------------------------

SCAFFOLD_TEXT = f"""## Decision

## Status

## Context

## Rationale

## Alternatives Considered

## Consequences

## Related Projects And Concepts

---

{TIMELINE_MARKER}

## Timeline

## Evidence
"""

FULL = f"""# Ana Lopez

Met at the 2023 offsite.

## Summary

Ana runs the data team.

## Current Facts

- Lives in Lisbon
```text
## Fake
- not a heading
```

## My Own Notes

Call before noon.

---

{TIMELINE_MARKER}

## Timeline
- 2024-01-01: Lives in Lisbon (sources/semantic/a.md)
- hand-written undated line

## Evidence
- sources/semantic/a.md

## Scratch

kept below the marker
"""


def test_scaffold_renders_the_documented_layout() -> None:
    assert render_page(scaffold("decision", "use-sqlite")) == SCAFFOLD_TEXT


def test_parse_splits_a_canonical_page_into_its_parts() -> None:
    page = parse_page(FULL)
    assert page.preamble == ["# Ana Lopez", "", "Met at the 2023 offsite."]
    assert names(page) == ["Summary", "Current Facts", "My Own Notes"]
    assert section(page, "Current Facts") == ["- Lives in Lisbon", "```text", "## Fake", "- not a heading", "```"]
    assert section(page, "My Own Notes") == ["Call before noon."]  # the rule above the marker is layout
    assert page.timeline == ["- 2024-01-01: Lives in Lisbon (sources/semantic/a.md)", "- hand-written undated line"]
    assert page.evidence == ["- sources/semantic/a.md"]
    assert page.below == [("Scratch", ["kept below the marker"])]
    assert page.has_marker


def test_render_of_a_canonical_page_is_byte_identical_and_round_trips() -> None:
    assert render_page(parse_page(FULL)) == FULL
    compiled = compile_page(
        parse_page(FULL),
        "person",
        "ana",
        [claim("c1", "Likes tea", "preference")],
        [event("c1", "Likes tea", "preference")],
    )
    for page in (parse_page(FULL), scaffold("person", "ana"), parse_page("# Just a title\n\nsome text\n"), compiled):
        assert parse_page(render_page(page)) == page


def test_render_ends_with_exactly_one_newline() -> None:
    text = render_page(parse_page("## A\n\ntext\n\n\n\n"))
    assert text == "## A\n\ntext\n"
    assert render_page(Page(sections=[("A", [])])) == "## A\n"


def test_parse_is_tolerant_of_pages_without_marker_or_template() -> None:
    page = parse_page("intro line\n## Basics\n- Name: Ana\n##NotAHeading\n## Why ##\nbecause\n")
    assert not page.has_marker
    assert page.preamble == ["intro line"]
    assert page.sections == [("Basics", ["- Name: Ana", "##NotAHeading"]), ("Why", ["because"])]
    assert page.timeline == [] and page.evidence == [] and page.below == []
    assert render_page(page) == "intro line\n\n## Basics\n\n- Name: Ana\n##NotAHeading\n\n## Why\n\nbecause\n"


def test_marker_inside_fenced_code_is_not_the_marker() -> None:
    body = f"## Summary\n\n~~~\n{TIMELINE_MARKER}\n## Timeline\n~~~\n"
    page = parse_page(body)
    assert not page.has_marker
    assert section(page, "Summary") == ["~~~", TIMELINE_MARKER, "## Timeline", "~~~"]


def test_unclosed_fence_is_plain_text_so_headings_after_it_still_count() -> None:
    page = parse_page("## Summary\n\n```\nstray\n\n## Current Facts\n\nx\n")
    assert names(page) == ["Summary", "Current Facts"]


def test_crlf_input_parses_like_lf() -> None:
    crlf = FULL.replace("\n", "\r\n")
    assert parse_page(crlf) == parse_page(FULL)
    assert render_page(parse_page(crlf)) == FULL


# --- compile -------------------------------------------------------------------------------------------


def test_compile_places_active_claims_by_kind_in_claim_order() -> None:
    claims = [
        claim("c2", "Prefers async updates", "preference", at="2024-02-01"),
        claim("c3", "Leads the data team", "fact", at="2024-01-05"),
        claim("c1", "Lives in\nLisbon", "fact", at="2024-01-05"),
    ]
    page = compile_page(scaffold("person", "ana"), "person", "ana", claims, [])
    assert section(page, "Current Facts") == ["- Lives in Lisbon", "- Leads the data team"]
    assert section(page, "Preferences And Working Style") == ["- Prefers async updates"]
    assert section(page, "Summary") == []


def test_hand_text_everywhere_survives_recompile() -> None:
    body = f"""# Ana

Preamble note.

## Summary

Hand summary.

## Current Facts

- Lives in Lisbon
Hand line between bullets.
- Works remotely

## Extra Section

Only a person wrote this.

---

{TIMELINE_MARKER}

## Timeline
- 2023-05-01: Met Ana (by hand)

## Evidence
- notes/meeting.md

## Below

Hand text below the marker.
"""
    claims = [claim("c1", "Lives in Lisbon"), claim("c2", "Works remotely"), claim("c3", "Speaks Portuguese")]
    page = compile_page(parse_page(body), "person", "ana", claims, [])
    assert page.preamble == ["# Ana", "", "Preamble note."]
    assert section(page, "Summary") == ["Hand summary."]
    assert section(page, "Current Facts") == [
        "Hand line between bullets.",
        "- Lives in Lisbon",
        "- Works remotely",
        "- Speaks Portuguese",
    ]
    assert section(page, "Extra Section") == ["Only a person wrote this."]
    assert names(page)[:3] == ["Summary", "Current Facts", "Extra Section"]
    assert page.timeline == ["- 2023-05-01: Met Ana (by hand)"]
    assert page.evidence == ["- notes/meeting.md"]
    assert page.below == [("Below", ["Hand text below the marker."])]
    # and again, with one claim gone: only its bullet leaves
    claims[1] = claim("c2", "Works remotely", status="retired")
    again = compile_page(parse_page(render_page(page)), "person", "ana", claims, [])
    assert section(again, "Current Facts") == ["Hand line between bullets.", "- Lives in Lisbon", "- Speaks Portuguese"]
    assert section(again, "Summary") == ["Hand summary."]
    assert again.preamble == page.preamble and again.below == page.below


def test_replace_swaps_the_bullet_and_logs_both_events() -> None:
    old = [claim("c1", "Lives in Lisbon", "state")]
    events = [event("c1", "Lives in Lisbon", "state", at="2024-01-01T10:00:00")]
    first = compile_page(scaffold("person", "ana"), "person", "ana", old, events)
    assert section(first, "Current Facts") == ["- Lives in Lisbon"]

    claims = [
        claim("c1", "Lives in Lisbon", "state", status="superseded"),
        claim("c2", "Lives in Porto", "state", at="2024-03-01"),
    ]
    events = [*events, event("c2", "Lives in Porto", "state", "replaced", "2024-03-01T08:00:00", ends=("c1",))]
    second = compile_page(parse_page(render_page(first)), "person", "ana", claims, events)
    assert section(second, "Current Facts") == ["- Lives in Porto"]
    assert second.timeline == [
        "- 2024-01-01: Lives in Lisbon (sources/semantic/c1-added.md)",
        "- 2024-03-01: Replaced: Lives in Porto (sources/semantic/c2-replaced.md)",
    ]
    assert second.evidence == ["- sources/semantic/c1-added.md", "- sources/semantic/c2-replaced.md"]


def test_retire_removes_the_bullet_and_logs_the_reason() -> None:
    claims = [claim("c1", "Uses vim", "preference", status="retired"), claim("c2", "Uses zsh", "preference")]
    events = [
        event("c1", "Uses vim", "preference"),
        event("c2", "Uses zsh", "preference"),
        event("r1", "Uses vim", "preference", "retired", "2024-02-02T00:00:00", reason="switched", ends=("c1",)),
        event("r2", "Uses zsh", "preference", "retired", "2024-02-03T00:00:00", ends=("c9",)),
    ]
    page = compile_page(parse_page("## Preferences And Working Style\n\n- Uses vim\n"), "person", "ana", claims, events)
    assert section(page, "Preferences And Working Style") == ["- Uses zsh"]
    assert page.timeline[-2:] == [
        "- 2024-02-02: Retired: Uses vim — switched (sources/semantic/r1-retired.md)",
        "- 2024-02-03: Retired: Uses zsh (sources/semantic/r2-retired.md)",
    ]


def test_compile_is_idempotent() -> None:
    claims = [
        claim("c1", "Lives in Lisbon"),
        claim("c2", "Old fact", status="superseded"),
        claim("c3", "Likes tea", "preference"),
    ]
    events = [
        event("c1", "Lives in Lisbon"),
        event("c2", "Old fact", at="2023-01-01T00:00:00"),
        event("c3", "Likes tea", "preference", at="2024-06-01T00:00:00"),
    ]
    once = compile_page(parse_page(FULL), "person", "ana", claims, events)
    twice = compile_page(once, "person", "ana", claims, events)
    thrice = compile_page(parse_page(render_page(twice)), "person", "ana", claims, events)
    assert render_page(once) == render_page(twice) == render_page(thrice)
    assert once.timeline.count("- 2024-01-01: Lives in Lisbon (sources/semantic/c1-added.md)") == 1


def test_compile_does_not_mutate_its_input() -> None:
    page = parse_page(FULL)
    before = render_page(page)
    compile_page(page, "person", "ana", [claim("c9", "New fact")], [event("c9", "New fact")])
    assert render_page(page) == before


def test_page_without_marker_gets_one_and_keeps_its_text() -> None:
    body = "# User\n\nWho you are.\n\n## Basics\n- Name: Ana\n"
    page = compile_page(
        parse_page(body), "core", "user", [claim("c1", "Lives in Lisbon")], [event("c1", "Lives in Lisbon")]
    )
    text = render_page(page)
    assert text.count(TIMELINE_MARKER) == 1
    assert text.index("- Name: Ana") < text.index("## Summary") < text.index(TIMELINE_MARKER)
    assert names(page) == ["Basics", *TEMPLATES[("core", "user")]]
    assert section(page, "Current Facts") == ["- Lives in Lisbon"]
    assert parse_page(text).has_marker


def test_legacy_timeline_and_evidence_sections_move_below_the_new_marker() -> None:
    body = "## Summary\n\nx\n\n## Timeline\n- 2020-01-01: old (a.md)\n\n## Evidence\n- a.md\n"
    page = compile_page(parse_page(body), "person", "ana", [], [event("c1", "New", at="2021-01-01")])
    assert "Timeline" not in names(page) and "Evidence" not in names(page)
    assert page.timeline == ["- 2020-01-01: old (a.md)", "- 2021-01-01: New (sources/semantic/c1-added.md)"]
    assert page.evidence == ["- a.md", "- sources/semantic/c1-added.md"]


def test_missing_template_sections_go_before_the_next_one_present() -> None:
    body = "## Goals And Priorities\n\ng\n\n## Summary\n\ns\n\n## Mine\n\nm\n"
    page = compile_page(parse_page(body), "person", "ana", [], [])
    assert names(page) == [
        "Goals And Priorities",
        "Summary",
        "Mine",
        "Current Facts",
        "Preferences And Working Style",
        "Related Decisions And Projects",
    ]
    body = "## Summary\n\ns\n\n## Mine\n\nm\n\n## Goals And Priorities\n\ng\n"
    page = compile_page(parse_page(body), "person", "ana", [], [])
    assert names(page) == [
        "Summary",
        "Mine",
        "Current Facts",
        "Preferences And Working Style",
        "Goals And Priorities",
        "Related Decisions And Projects",
    ]


def test_section_names_match_case_insensitively_and_keep_their_spelling() -> None:
    page = compile_page(parse_page("## current facts\n\nhand\n"), "person", "ana", [claim("c1", "Fact one")], [])
    assert section(page, "current facts") == ["hand", "- Fact one"]
    assert "Current Facts" not in names(page)


def test_fenced_code_keeps_fake_heading_and_claim_lookalike() -> None:
    body = "## Summary\n\n```\n## Fake\n- Lives in Lisbon\n```\n"
    page = compile_page(parse_page(body), "person", "ana", [claim("c1", "Lives in Lisbon", status="retired")], [])
    assert section(page, "Summary") == ["```", "## Fake", "- Lives in Lisbon", "```"]
    assert "Fake" not in names(page)
    text = render_page(page)
    assert parse_page(text) == page


def test_claim_lines_in_hand_sections_and_preamble_are_not_touched() -> None:
    body = "- Lives in Lisbon\n\n## Mine\n\n- Lives in Lisbon\n"
    page = compile_page(parse_page(body), "person", "ana", [claim("c1", "Lives in Lisbon", status="retired")], [])
    assert page.preamble == ["- Lives in Lisbon"]
    assert section(page, "Mine") == ["- Lives in Lisbon"]


def test_removed_bullets_leave_no_double_blank_lines() -> None:
    body = "## Current Facts\n\nintro\n\n- Old\n\nnote\n"
    page = compile_page(parse_page(body), "person", "ana", [claim("c1", "Old", status="superseded")], [])
    assert section(page, "Current Facts") == ["intro", "", "note"]


def test_decision_status_follows_its_claims_and_keeps_hand_lines() -> None:
    body = "## Status\n\nRevisit in Q3.\nactive\n"
    live = compile_page(parse_page(body), "decision", "use-sqlite", [claim("c1", "Use SQLite", "decision")], [])
    assert section(live, "Status") == ["Revisit in Q3.", "active"]
    assert section(live, "Decision") == ["- Use SQLite"]
    ended = compile_page(live, "decision", "use-sqlite", [claim("c1", "Use SQLite", "decision", status="retired")], [])
    assert section(ended, "Status") == ["Revisit in Q3.", "retired"]
    assert section(ended, "Decision") == []
    fresh = compile_page(scaffold("decision", "x"), "decision", "x", [], [])
    assert section(fresh, "Status") == []


def test_timeline_sorts_by_date_carrying_undated_lines_and_dropping_duplicates() -> None:
    page = Page(
        sections=[],
        timeline=[
            "intro line",
            "- 2024-05-01: may (a)",
            "  continuation of may",
            "- 2024-01-01: january (b)",
            "- undated: legacy (c)",
            "- 2024-05-01: may (a)",
        ],
        has_marker=True,
    )
    events = [event("c1", "March", at="2024-03-01T00:00:00"), event("c2", "odd", at="sometime")]
    out = compile_page(page, "person", "ana", [], events).timeline
    assert out == [
        "intro line",
        "- 2024-01-01: january (b)",
        "- undated: legacy (c)",
        "- 2024-03-01: March (sources/semantic/c1-added.md)",
        "- undated: odd (sources/semantic/c2-added.md)",
        "- 2024-05-01: may (a)",
        "  continuation of may",
    ]


def test_evidence_is_deduplicated_case_insensitively_in_first_seen_order() -> None:
    page = Page(evidence=["- `Sources/Semantic/C1-Added.md`", "- notes/x.md", "- NOTES/X.md"], has_marker=True)
    events = [event("c1", "A"), event("c2", "B"), event("c2", "B again")]
    out = compile_page(page, "person", "ana", [], events).evidence
    assert out == ["- `Sources/Semantic/C1-Added.md`", "- notes/x.md", "- sources/semantic/c2-added.md"]


# --- appends and timeline reads --------------------------------------------------------------------------


def test_timeline_entry_format() -> None:
    entry = timeline_entry("2024-01-02", "Moved\nto Porto", "sources/x.md")
    assert entry == "- 2024-01-02: Moved to Porto (sources/x.md)"
    assert timeline_entry("2024-01-02", "No path", "") == "- 2024-01-02: No path"


def test_append_without_marker_goes_at_the_end_after_a_blank_line() -> None:
    assert (
        append_text("# Note\n\nfirst\n\n\n", "second\n- 2024-01-01: dated\n")
        == "# Note\n\nfirst\n\nsecond\n- 2024-01-01: dated\n"
    )
    assert append_text("", "only\n") == "only\n"
    assert append_text("keep\n", "\n\n") == "keep\n"


def test_append_with_marker_splits_dated_bullets_from_the_rest() -> None:
    body = render_page(parse_page(FULL))
    out = append_text(body, "New compiled line.\n- 2024-07-01: Moved (sources/m.md)\n")
    lines = out.split("\n")
    assert lines.index("New compiled line.") < lines.index("---") < lines.index(TIMELINE_MARKER)
    assert lines[lines.index("---") - 2] == "New compiled line."
    timeline = lines[lines.index("## Timeline") : lines.index("## Evidence")]
    assert timeline == [
        "## Timeline",
        "- 2024-01-01: Lives in Lisbon (sources/semantic/a.md)",
        "- hand-written undated line",
        "- 2024-07-01: Moved (sources/m.md)",
        "",
    ]
    assert is_subsequence(body.split("\n"), lines)  # nothing dropped or reordered
    assert parse_page(out).timeline[-1] == "- 2024-07-01: Moved (sources/m.md)"


def test_append_creates_timeline_below_marker_when_absent() -> None:
    body = f"## Summary\n\nx\n\n{TIMELINE_MARKER}\n- 2020-01-01: orphan (o.md)\n\n## Evidence\n- o.md\n"
    out = append_text(body, "- 2024-01-01: new (n.md)")
    assert out == (
        f"## Summary\n\nx\n\n{TIMELINE_MARKER}\n\n## Timeline\n- 2020-01-01: orphan (o.md)\n"
        "- 2024-01-01: new (n.md)\n\n## Evidence\n- o.md\n"
    )
    bare = append_text(f"x\n{TIMELINE_MARKER}\n", "- 2024-01-01: new (n.md)")
    assert bare == f"x\n{TIMELINE_MARKER}\n\n## Timeline\n- 2024-01-01: new (n.md)\n"


def test_append_keeps_crlf_and_fenced_dated_lines_stay_together() -> None:
    body = f"## Summary\r\n\r\nx\r\n\r\n---\r\n\r\n{TIMELINE_MARKER}\r\n\r\n## Timeline\r\n\r\n## Evidence\r\n"
    text = "```\n- 2024-01-01: inside code\n```\n"
    out = append_text(body, text)
    assert out == (
        f"## Summary\r\n\r\nx\r\n\r\n```\r\n- 2024-01-01: inside code\r\n```\r\n\r\n---\r\n\r\n"
        f"{TIMELINE_MARKER}\r\n\r\n## Timeline\r\n\r\n## Evidence\r\n"
    )


def test_latest_timeline_date_reads_only_below_the_marker() -> None:
    body = (
        f"## Summary\n\n- 2099-01-01: above the marker does not count\n\n{TIMELINE_MARKER}\n\n## Timeline\n"
        "- 2024-03-01: b\n- 2024-11-30: c\n- 2024-13-01: not a date\n- 2023-01-01: a\n"
        "```\n- 2098-01-01: in code\n```\n"
    )
    assert latest_timeline_date(body) == "2024-11-30"
    assert latest_timeline_date("## Timeline\n- 2024-01-01: no marker\n") is None
    assert latest_timeline_date(f"{TIMELINE_MARKER}\n\n## Timeline\n") is None
