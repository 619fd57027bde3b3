import re

from dory.corpus.chunking import chunk_lines
from dory.corpus.document import split_lines


def words(texts: list[str]) -> list[int]:
    return [len(re.findall(r"\w+|[^\w\s]", t)) for t in texts]


def test_every_line_is_covered_in_order_and_line_ranges_are_exact() -> None:
    text = (
        "---\ntitle: x\n---\nintro\n\n[ref]: http://e.com\n\n# A\n"
        + "\n".join(f"line {i} " + "w " * 20 for i in range(40))
        + "\n\n## B\nend\n"
    )
    lines = split_lines(text)
    chunks = chunk_lines(lines, 3, words, max_tokens=60, overlap=0)
    for chunk in chunks:
        assert chunk.text == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
    covered = set()
    for chunk in chunks:
        covered |= set(range(chunk.start_line, chunk.end_line + 1))
    nonblank = {i + 1 for i, line in enumerate(lines) if line.strip() and i >= 3}
    assert nonblank <= covered  # the link definition line included: no text is dropped
    assert all(c.tokens <= 60 + 30 for c in chunks)


def test_heading_path_is_recorded() -> None:
    text = "# Top\n" + "alpha " * 60 + "\n\n## Sub\n" + "beta " * 60 + "\n\n### Deep\ngamma\n"
    chunks = chunk_lines(split_lines(text), 0, words, max_tokens=70, overlap=0)
    paths = [c.heading_path for c in chunks]
    assert ("Top",) in paths
    assert ("Top", "Sub") in paths
    assert chunks[-1].text.endswith("gamma")


def test_fenced_code_is_never_split() -> None:
    code = "```python\n" + "\n".join(f"x{i} = {i}" for i in range(200)) + "\n```"
    text = "# Code\nintro\n\n" + code + "\n\nafter\n"
    chunks = chunk_lines(split_lines(text), 0, words, max_tokens=50, overlap=10)
    holding = [c for c in chunks if "x0 = 0" in c.text]
    assert len(holding) == 1 and "x199 = 199" in holding[0].text and "```" in holding[0].text


def test_heading_never_ends_a_chunk() -> None:
    text = "para " * 40 + "\n\n## Next\n" + "more " * 40 + "\n"
    chunks = chunk_lines(split_lines(text), 0, words, max_tokens=45, overlap=0)
    assert not any(c.text.rstrip().endswith("## Next") for c in chunks)


def test_empty_and_frontmatter_only_notes() -> None:
    assert chunk_lines([], 0, words) == []
    only = split_lines("---\ntitle: Person\naliases: [Bob]\n---\n")
    chunks = chunk_lines(only, 4, words)
    assert len(chunks) == 1 and "Bob" in chunks[0].text and chunks[0].start_line == 1


def test_chunk_ids_are_stable_for_the_same_input() -> None:
    text = split_lines("# A\n" + "one two three " * 100)
    assert chunk_lines(text, 0, words, 40, 8) == chunk_lines(text, 0, words, 40, 8)
