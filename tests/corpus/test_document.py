import os
from pathlib import Path

import pytest

from dory.corpus.document import ReadProblem, parse_document, read_document, split_lines


def test_frontmatter_title_tags_and_dates_become_json_values() -> None:
    doc = parse_document("a.md", b"---\ntitle: Hello\ndate: 2024-01-02\ntags: [x, y]\n---\n# Other\nbody\n")
    assert doc.title == "Hello"
    assert doc.frontmatter == {"title": "Hello", "date": "2024-01-02", "tags": ["x", "y"]}
    assert doc.body_start == 5
    assert doc.frontmatter_error is None


def test_title_falls_back_to_first_heading_then_file_name() -> None:
    assert parse_document("n.md", b"intro\n\n## Second level\ntext\n").title == "Second level"
    assert parse_document("notes/plain-name.md", b"just text\n").title == "plain-name"


def test_heading_inside_code_fence_is_not_a_title() -> None:
    doc = parse_document("n.md", b"```\n# not a title\n```\n# Real\n")
    assert doc.title == "Real"


def test_broken_yaml_is_reported_and_text_kept_whole() -> None:
    raw = b"---\ntitle: [unclosed\n---\n# Head\nbody\n"
    doc = parse_document("b.md", raw)
    assert doc.frontmatter_error is not None and doc.frontmatter_error.startswith("broken YAML frontmatter")
    assert doc.frontmatter == {}
    assert doc.body_start == 0  # the whole file is indexed as text
    assert doc.text == raw.decode()


def test_non_mapping_frontmatter_is_an_error_not_a_crash() -> None:
    doc = parse_document("l.md", b"---\n- a\n- b\n---\nbody\n")
    assert doc.frontmatter_error == "frontmatter is a list, not a mapping"


def test_yaml_alias_bomb_is_refused() -> None:
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    for prev, name in zip("abcde", "bcdef", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    raw = ("---\n" + "\n".join(lines) + "\n---\nbody\n").encode()
    doc = parse_document("bomb.md", raw)
    assert doc.frontmatter_error == "frontmatter expands to too many values (YAML alias bomb?)"


def test_nul_bytes_and_latin1_are_refused_with_reasons() -> None:
    with pytest.raises(ReadProblem) as nul:
        parse_document("n.md", b"abc\x00def")
    assert nul.value.reason == "nul_bytes"
    with pytest.raises(ReadProblem) as latin:
        parse_document("l.md", "café au lait".encode("latin-1"))
    assert latin.value.reason == "not_utf8"
    assert "0xe9" in latin.value.detail


def test_utf8_bom_and_utf16_are_decoded() -> None:
    assert parse_document("b.md", "\ufeff# Titre\n".encode()).title == "Titre"
    assert parse_document("u.md", "# Sixteen\n".encode("utf-16")).title == "Sixteen"


def test_read_document_size_cap_and_empty(tmp_path: Path) -> None:
    (tmp_path / "big.md").write_bytes(b"x" * 2000)
    (tmp_path / "empty.md").write_bytes(b"  \n")
    with pytest.raises(ReadProblem) as big:
        read_document(tmp_path, "big.md", max_bytes=1000)
    assert big.value.reason == "too_large"
    with pytest.raises(ReadProblem) as empty:
        read_document(tmp_path, "empty.md", max_bytes=1000)
    assert empty.value.reason == "empty"


def test_split_lines_counts_like_an_editor() -> None:
    assert split_lines("a\r\nb\x0cc\u2028d\n") == ["a", "b\x0cc\u2028d"]
    assert split_lines("") == []
    assert split_lines("x") == ["x"]


def test_frontmatter_nested_deeper_than_32_levels_is_broken_not_indexed_as_metadata() -> None:
    """Issue 15, item 6: 400 levels parse as YAML but then broke every reader serialising the
    note's metadata (`dory get` ended in a traceback); the note is kept as plain text instead."""
    for depth, broken in ((31, False), (32, True), (400, True), (5000, True)):
        doc = parse_document("x.md", ("---\nx: " + "[" * depth + "1" + "]" * depth + "\n---\nbody\n").encode())
        assert (doc.frontmatter_error is not None) == broken, depth
        assert bool(doc.frontmatter) != broken and "body" in doc.text


def test_a_hard_linked_file_is_not_read_as_a_note(tmp_path: Path) -> None:
    """Issue 15, item 6: a hard link is not a symlink, but its other name may be outside the corpus."""
    outside = tmp_path / "private.txt"
    outside.write_text("# Secret\n\nthe door code is 4711\n")
    root = tmp_path / "corpus"
    root.mkdir()
    os.link(outside, root / "linked.md")
    with pytest.raises(ReadProblem) as info:
        read_document(root, "linked.md", 1000)
    assert info.value.reason == "hard_link" and "2 names" in info.value.detail
    outside.unlink()  # now the note's only name is inside the corpus
    assert "4711" in read_document(root, "linked.md", 1000).text


def test_a_note_read_while_a_dory_write_links_it_into_place_is_not_a_hard_link(tmp_path: Path) -> None:
    """An atomic write links its temporary file to the note's name, then removes the temporary name:
    a reader in between (an HTTP GET during a write) sees two names, one of them Dory's own temp file."""
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "note.md").write_text("# Note\n\nnew content\n")
    temp = root / f".note.md.dory-new-{os.getpid()}-0123abcd.tmp"
    os.link(root / "note.md", temp)
    assert "new content" in read_document(root, "note.md", 1000).text
    os.link(root / "note.md", root / "other.md")  # a third name that is not Dory's: refused
    with pytest.raises(ReadProblem) as info:
        read_document(root, "note.md", 1000)
    assert info.value.reason == "hard_link"


def test_a_note_a_write_has_set_aside_is_read_from_there(tmp_path: Path) -> None:
    """Between a swap's rename aside and its link into place nothing is at the note's path; a reader
    in another thread or process sees the version set aside, not a missing note (issue 19's CI run:
    a GET during a memory write answered not_found)."""
    root = tmp_path / "corpus"
    root.mkdir()
    aside = root / f".note.md.dory-old-{os.getpid()}-0123abcd.tmp"
    aside.write_text("# Note\n\nold content\n")
    assert "old content" in read_document(root, "note.md", 1000).text
    assert aside.read_text() == "# Note\n\nold content\n"  # read, never moved or changed


def test_only_the_set_aside_version_of_the_same_note_stands_in_for_it(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / f".other.md.dory-old-{os.getpid()}-0123abcd.tmp").write_text("another note\n")
    (root / f".note.md.dory-new-{os.getpid()}-0123abcd.tmp").write_text("a new version not yet in place\n")
    (root / ".note.md.dory-old-notapid-0123abcd.tmp").write_text("not Dory's temporary name\n")
    with pytest.raises(ReadProblem) as info:
        read_document(root, "note.md", 1000)
    assert info.value.reason == "unreadable"


def test_a_note_being_put_back_by_an_undone_swap_is_not_a_hard_link(tmp_path: Path) -> None:
    """An undone swap links the version it set aside back to the note's name, then removes the
    temporary name: for a moment the note has two names, the second Dory's own `old` temp file."""
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "note.md").write_text("# Note\n\nput back\n")
    os.link(root / "note.md", root / f".note.md.dory-old-{os.getpid()}-0123abcd.tmp")
    assert "put back" in read_document(root, "note.md", 1000).text
