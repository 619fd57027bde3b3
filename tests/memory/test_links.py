"""Link and mention extraction as pure functions over a note's lines: forms, code, keys, lines."""

from __future__ import annotations

from dory.memory.entities import Entity, Registry
from dory.memory.links import (
    Link,
    MentionMatcher,
    code_masked,
    extract_links,
    extract_mentions,
    link_key,
    mention_names,
    note_names,
    relative_path,
    written_wikilinks,
)


def lines_of(text: str) -> list[str]:
    return text.split("\n")


def found(text: str, body_start: int = 0) -> list[tuple[str, str, int]]:
    return [(link.kind, link.target, link.line) for link in extract_links(lines_of(text), body_start)]


def targets(text: str) -> list[str]:
    return [link.target for link in extract_links(lines_of(text))]


# --- wikilinks ------------------------------------------------------------------------------------


def test_wikilink_forms_with_labels_headings_and_embeds() -> None:
    text = "intro\n[[Plain]] [[Target|the label]]\n[[Doc#Some Heading]] [[Doc2#Part|shown]]\n![[Embedded]]"
    assert extract_links(lines_of(text)) == [
        Link("wikilink", "Plain", 2),
        Link("wikilink", "Target", 2, label="the label"),
        Link("wikilink", "Doc", 3, heading="Some Heading"),
        Link("wikilink", "Doc2", 3, heading="Part", label="shown"),
        Link("wikilink", "Embedded", 4, embed=True),
    ]


def test_same_note_headings_and_attachments_are_not_note_links() -> None:
    text = "[[#Local heading]] [[#^block|x]] ![[photo.PNG]] ![[scan.pdf#page=2]] [[v1.2 notes]]"
    assert targets(text) == ["v1.2 notes"]


def test_wikilink_in_a_table_cell_with_escaped_pipe() -> None:
    assert extract_links(["| [[Note\\|alias]] | x |"]) == [Link("wikilink", "Note", 1, label="alias")]


def test_written_wikilinks_are_keyed_by_the_text_between_the_brackets() -> None:
    """What a renderer looks up: every distinct `[[...]]`, code included (the renderer knows what is
    code), headings and attachments left out as the graph leaves them out."""
    text = "[[A|one]] and [[A|one]]\n`[[Coded]]`\n![[B#Part]] [[#local]] ![[photo.png]]"
    assert written_wikilinks(text) == {
        "A|one": Link("wikilink", "A", 1, label="one"),
        "Coded": Link("wikilink", "Coded", 2),
        "B#Part": Link("wikilink", "B", 3, heading="Part", embed=True),
    }


def test_links_come_in_reading_order_with_their_line() -> None:
    text = "a\n\n[md](b.md) then [[A]]\n[[B]] and [c](c.md)"
    assert found(text) == [("markdown", "b.md", 3), ("wikilink", "A", 3), ("wikilink", "B", 4), ("markdown", "c.md", 4)]


# --- markdown links -------------------------------------------------------------------------------


def test_markdown_links_to_local_notes() -> None:
    text = (
        '[up](../x.md) [enc](my%20note.md) [anchor](path/y.md#Some%20Part) [t](z.md "Title")\n'
        "[angle](<with space.md>) ![embedded](pic.md) [q](q.md?plain=1)"
    )
    links = extract_links(lines_of(text))
    assert [(link.target, link.heading, link.label, link.embed) for link in links] == [
        ("../x.md", None, "up", False),
        ("my note.md", None, "enc", False),
        ("path/y.md", "Some Part", "anchor", False),
        ("z.md", None, "t", False),
        ("with space.md", None, "angle", False),
        ("pic.md", None, "embedded", True),
        ("q.md", None, "q", False),
    ]


def test_web_links_other_schemes_and_non_notes_are_ignored() -> None:
    text = (
        "[web](https://example.com/a.md) [plain](http://x.org) [mail](mailto:a@b.md) "
        "[app](obsidian://open?vault=x) [img](photo.png) [noext](note) [anchor](#part) [win](C:/x.md)"
    )
    assert targets(text) == []


def test_markdown_link_label_with_brackets() -> None:
    assert extract_links(["[see [this] one](a.md)"]) == [Link("markdown", "a.md", 1, label="see [this] one")]


# --- code is not scanned --------------------------------------------------------------------------


def test_multiple_fences_and_tilde_fences() -> None:
    text = "\n".join(
        [
            "[[Before]]",
            "```python",
            "[[InFence1]]",
            "```",
            "[[Between]]",
            "~~~",
            "[[InTilde]]",
            "~~~",
            "[[After]]",
            "```",
            "[[InFence2]]",
            "```",
            "[[End]]",
        ]
    )
    assert found(text) == [
        ("wikilink", "Before", 1),
        ("wikilink", "Between", 5),
        ("wikilink", "After", 9),
        ("wikilink", "End", 13),
    ]


def test_closing_fence_needs_same_character_and_length() -> None:
    text = "\n".join(
        [
            "~~~~",
            "```",
            "[[StillCode1]]",
            "~~~",
            "[[StillCode2]]",
            "~~~~~",
            "[[Out]]",
            "````",
            "```",
            "[[StillCode3]]",
            "```` trailing",
            "[[StillCode4]]",
            "````",
            "~~~",
            "`````",
            "[[StillCode5]]",
            "~~~",
            "[[End]]",
        ]
    )
    assert targets(text) == ["Out", "End"]


def test_unclosed_fence_runs_to_the_end_of_the_file() -> None:
    assert targets("[[Seen]]\n```\n[[Hidden]]\n\n[[AlsoHidden]]") == ["Seen"]


def test_fences_in_list_items_and_blockquotes() -> None:
    text = "- item\n    ```\n    [[InListFence]]\n    ```\n> ```\n> [[InQuoteFence]]\n> ```\n[[Out]]"
    assert targets(text) == ["Out"]


def test_backtick_fence_info_with_a_backtick_is_inline_code() -> None:
    assert targets("```x``` [[Visible]]\n[[AlsoVisible]]") == ["Visible", "AlsoVisible"]


def test_inline_code_spans_match_by_backtick_count() -> None:
    text = (
        "`[[Code]]` [[Real1]] ``a ` [[InDouble]] `` [[Real2]]\n"
        "lone ` backtick [[Real3]]\n"
        "``` `[[NotClosedByDouble]]`` still ``` [[Real4]]"
    )
    assert targets(text) == ["Real1", "Real2", "Real3", "Real4"]


def test_masking_keeps_line_numbers_and_columns() -> None:
    lines = ["---", "title: [[FrontLink]]", "---", "a `code` b", "```", "x", "```", "[[L]]"]
    masked = code_masked(lines, body_start=3)
    assert masked == ["", "", "", "a        b", "", "", "", "[[L]]"]
    assert found("\n".join(lines), body_start=3) == [("wikilink", "L", 8)]


def test_frontmatter_is_not_scanned() -> None:
    text = "---\nrelated: '[[InFrontmatter]]'\n---\n[[Body]]"
    assert targets(text) == ["InFrontmatter", "Body"]  # without body_start everything is body
    assert found(text, body_start=3) == [("wikilink", "Body", 4)]


# --- keys -----------------------------------------------------------------------------------------


def test_link_key_is_one_normalisation_for_both_sides() -> None:
    assert (
        link_key("Folder/My Note")
        == link_key("folder/my note.md")
        == link_key("./Folder//My Note.MD")
        == link_key("\\Folder\\My Note.md")
        == link_key("/folder/my note/")
        == "folder/my note"
    )
    assert link_key("Cafe\u0301") == link_key("Caf\u00e9")  # decomposed (macOS) and composed file names
    assert link_key("../up/x.md") == "../up/x"
    assert link_key("a/../b.md") == "b"
    assert link_key("  ") == "" and link_key("./") == ""


def test_relative_path_from_the_linking_note() -> None:
    assert relative_path("a/b/n.md", "../x.md") == "a/x.md"
    assert relative_path("a/b/n.md", "./c/y.md") == "a/b/c/y.md"
    assert relative_path("a/b/n.md", "/root.md") == "root.md"
    assert relative_path("n.md", "../x.md") is None
    assert relative_path("a/n.md", "../../x.md") is None


def test_note_names_path_stem_aliases() -> None:
    assert note_names("Folder/My Note.md", ["Alias One", "my note", ""]) == [
        ("folder/my note", "path"),
        ("my note", "stem"),
        ("alias one", "alias"),
        ("my note", "alias"),
    ]


# --- mentions -------------------------------------------------------------------------------------

PEOPLE = {
    "alice smith": "people/alice-smith.md",
    "ali": "people/alice-smith.md",
    "alice": "people/alice.md",
    "zoe": "people/zoe.md",
    "dory": "projects/dory/state.md",
}


def mentions(
    text: str, names: dict[str, str] = PEOPLE, own: str | None = None, body_start: int = 0
) -> list[tuple[str, str, int]]:
    return [(m.path, m.text, m.line) for m in extract_mentions(lines_of(text), body_start, MentionMatcher(names), own)]


def test_mentions_are_whole_words_case_accent_and_punctuation_insensitive() -> None:
    text = "met ALICE-SMITH today\nzoë and Zoe’s cat\nalicesmith aliens Zoey dory's"
    assert mentions(text) == [
        ("people/alice-smith.md", "ALICE-SMITH", 1),
        ("people/zoe.md", "zoë", 2),
        ("people/zoe.md", "Zoe", 2),
        ("projects/dory/state.md", "dory", 3),
    ]


def test_longest_name_wins_and_a_longer_word_falls_back() -> None:
    text = "Alice Smith\nAlice Smithers\nAlice  \t Smith"
    assert mentions(text) == [
        ("people/alice-smith.md", "Alice Smith", 1),
        ("people/alice.md", "Alice", 2),
        ("people/alice-smith.md", "Alice  \t Smith", 3),
    ]


def test_mentions_skip_code_links_urls_and_frontmatter() -> None:
    text = (
        "---\ntitle: Alice\n---\n`Alice` [[Alice]] [Alice](alice.md) https://x.com/alice www.alice.org\n"
        "```\nalice\n```\nAli was here"
    )
    assert mentions(text, body_start=3) == [("people/alice-smith.md", "Ali", 8)]


def test_a_note_never_mentions_its_own_entity() -> None:
    text = "Alice Smith is Alice Smith; see Zoe"
    assert mentions(text, own="people/alice-smith.md") == [("people/zoe.md", "Zoe", 1)]


def test_mentions_in_non_ascii_lines_keep_the_words_as_written() -> None:
    names = {"bjrn berg": "people/bjorn.md", "jose": "people/jose.md"}
    assert mentions("Hej — Bjørn  Berg och José!", names) == [
        ("people/bjorn.md", "Bjørn  Berg", 1),
        ("people/jose.md", "José", 1),
    ]


def test_matcher_with_many_names_finds_each_one() -> None:
    names = {f"person number {i}": f"people/p{i}.md" for i in range(1, 1001)}
    text = "\n".join(f"line with Person Number {i}." for i in (7, 70, 700, 1000))
    assert [(m.path, m.line) for m in MentionMatcher(names).find(lines_of(text))] == [
        ("people/p7.md", 1),
        ("people/p70.md", 2),
        ("people/p700.md", 3),
        ("people/p1000.md", 4),
    ]


def entity(family: str, slug: str, path: str, title: str, *aliases: str) -> Entity:
    return Entity(f"{family}:{slug}", family, slug, path, title, aliases)


def test_mention_names_skip_short_generic_numeric_and_ambiguous_names() -> None:
    registry = Registry(
        [
            entity("person", "alice-smith", "people/alice-smith.md", "Alice Smith", "Ali", "AS", "2024"),
            entity("person", "sam-a", "people/sam-a.md", "Sam A", "Sammy"),
            entity("person", "sam-b", "people/sam-b.md", "Sam B", "Sammy"),
            entity("core", "user", "core/user.md", "User", "Jane Doe"),
            entity("project", "dory", "projects/dory/state.md", "Dory"),
            entity("concept", "rrf", "concepts/rrf.md", "Reciprocal Rank Fusion", "Dory"),  # alias loses to a slug
        ]
    )
    assert mention_names(registry) == {
        "alice smith": "people/alice-smith.md",
        "ali": "people/alice-smith.md",
        "sam a": "people/sam-a.md",
        "sam b": "people/sam-b.md",
        "jane doe": "core/user.md",
        "dory": "projects/dory/state.md",
        "reciprocal rank fusion": "concepts/rrf.md",
        "rrf": "concepts/rrf.md",
    }
