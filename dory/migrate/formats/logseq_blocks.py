"""A Logseq page's outline as markdown: page properties apart, block ids collected, the rest readable.

A Logseq markdown page is an outline: every block a `- ` bullet, nested by tabs, its further lines
indented two spaces past its bullet. `key:: value` lines are properties: those before the first
block (or forming the whole first block) belong to the page, the others to their block. This
module reads the page line by line (no block tree is built) and:
- takes the page properties out (they become frontmatter) and any YAML frontmatter Logseq allows;
- turns leading tabs into two spaces each, so nesting renders as nested markdown lists;
- drops `id::` lines (recording which block each id names, with the block's first line of text,
  for `((block refs))`) and `collapsed::` lines (outline state, not content); other block
  properties stay as written;
- turns `#+BEGIN_SRC/QUERY/EXAMPLE…` blocks into code fences and `#+BEGIN_NOTE/TIP/QUOTE…` into
  block quotes, leaves ``` fences as they are, and drops empty bullets.
Links are not touched here (logseq_inline.py does them on the result).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from dory.corpus.document import parse_document
from dory.migrate.text import fence

PROPERTY = re.compile(r"^([A-Za-z0-9_][\w\-]*)::(?:\s+(.*?))?\s*$")
DROPPED = frozenset({"id", "collapsed"})
_BULLET = re.compile(r"^-(?:[ \t]+|$)")  # a block; `*` and `1.` inside a block are its own lists
_BEGIN = re.compile(r"^#\+BEGIN_(\w+)(.*)$", re.IGNORECASE)
_CODE_BLOCKS = frozenset({"SRC", "QUERY", "EXAMPLE", "EXPORT", "COMMENT", "VERSE", "CENTER"})
_FENCE = re.compile(r"^(`{3,}|~{3,})")


@dataclass
class Page:
    properties: dict[str, str] = field(default_factory=dict)  # page-level `key:: value`, as written
    frontmatter: dict[str, Any] = field(default_factory=dict)  # YAML frontmatter, when the page has one
    lines: list[str] = field(default_factory=list)  # the body as markdown, links still Logseq's
    blocks: dict[str, str] = field(default_factory=dict)  # block id (lower case) → its first line of text
    problem: str | None = None  # why the YAML frontmatter was kept as a code block


@dataclass
class _Block:
    indent: str  # the bullet's indentation ("" for top-level text without a bullet)
    text: str | None = None
    ids: list[str] = field(default_factory=list)
    bullet_pending: bool = False  # the bullet line was a dropped property: the next text line takes it


def parse(rel: str, text: str) -> Page:
    """`text` (a page's markdown, decoded) read as described above."""
    page = Page()
    lines = [line.rstrip("\r") for line in text.split("\n")]
    doc = parse_document(rel, text.encode("utf-8"))
    head: list[str] = []
    if doc.frontmatter_error is not None:  # kept where it was, as a code block
        end = _closing(lines)
        head = fence("\n".join(lines[1:end]), "yaml").split("\n")
        lines, page.problem = lines[end + 1 :], doc.frontmatter_error
    else:
        page.frontmatter, lines = dict(doc.frontmatter), lines[doc.body_start :]
    start = _page_properties(lines, page.properties)
    page.lines = head
    _Outline(page).run(lines[start:])
    return page


def _closing(lines: list[str]) -> int:
    for n in range(1, len(lines)):
        if re.match(r"^-{3,}\s*$", lines[n]) or lines[n].rstrip() == "...":
            return n
    return len(lines) - 1


def _page_properties(lines: list[str], found: dict[str, str]) -> int:
    """Read the page's properties from `lines` into `found`; returns where the body starts. They
    are the first lines when those are `key:: value` (blank lines before them skipped), or a first
    block made only of properties (`- title:: x` and its indented property lines)."""
    first = 0
    while first < len(lines) and not lines[first].strip():
        first += 1
    if first == len(lines):
        return 0
    if lines[first].startswith("- "):  # the first block: all of it must be properties
        end = first + 1
        while end < len(lines) and lines[end][:1] in (" ", "\t") and lines[end].strip():
            end += 1
        block = [lines[first][2:], *lines[first + 1 : end]]
    else:
        end = first
        while end < len(lines) and PROPERTY.match(lines[end]):
            end += 1
        block = lines[first:end]
    matches = [PROPERTY.match(line.strip()) for line in block]
    if not block or not all(matches):
        return 0
    for match in matches:
        assert match is not None
        found.setdefault(match.group(1).lower(), (match.group(2) or "").strip())
    return end


class _Outline:
    """One pass over the body lines (see the module docstring)."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.out = page.lines
        self.block: _Block | None = None
        self.fence: str | None = None  # the line that closes the open code block
        self.quote: str | None = None  # the `#+END_X` that closes the open quote block

    def run(self, lines: list[str]) -> None:
        for line in lines:
            self.line(line)
        self.close_block()

    def line(self, raw: str) -> None:
        tabs = len(raw) - len(raw.lstrip("\t"))
        content = raw[tabs:].lstrip(" ")
        indent = "  " * tabs + raw[tabs : len(raw) - len(content)]
        if self.fence is not None:
            self.in_fence(indent, content)
            return
        bullet = _BULLET.match(content)
        rest = content[bullet.end() :] if bullet else content
        if self.quote is not None and rest.upper().startswith(self.quote):
            self.quote = None
            return
        if bullet or (not indent and content and self.quote is None):  # a block starts
            self.close_block()
            self.block = _Block(indent)
        self.content(indent, "- " if bullet else "", rest)

    def content(self, indent: str, marker: str, rest: str) -> None:
        prop = PROPERTY.match(rest)
        block = self.block
        if prop is not None and prop.group(1).lower() in DROPPED:
            if prop.group(1).lower() == "id" and block is not None and prop.group(2):
                block.ids.append(prop.group(2).strip().lower())
            if marker and block is not None:
                block.bullet_pending = True
            return
        if marker and not rest.strip():
            return  # an empty block
        if block is not None and block.bullet_pending and rest.strip():
            indent, marker, block.bullet_pending = block.indent, "- ", False
        if block is not None and block.text is None and rest.strip() and prop is None:
            block.text = rest.strip()
        begin = _BEGIN.match(rest)
        if begin is not None:
            self.begin(indent, marker, begin.group(1).upper(), begin.group(2).strip())
            return
        opening = _FENCE.match(rest)
        if opening is not None:
            self.fence = opening.group(1)
            indent, marker = self.fence_line(indent, marker)
        if self.quote is not None:
            rest = f"> {rest}".rstrip()
        self.out.append(f"{indent}{marker}{rest}".rstrip() if rest or marker else "")

    def begin(self, indent: str, marker: str, kind: str, info: str) -> None:
        if kind in _CODE_BLOCKS:
            self.fence = f"#+END_{kind}"
            lang = info.split()[0] if kind == "SRC" and info else ("clojure" if kind == "QUERY" else "")
            indent, marker = self.fence_line(indent, marker)
            self.out.append(f"{indent}```{lang}")
        else:
            self.quote = f"#+END_{kind}"
            title = "" if kind == "QUOTE" else f" **{kind.capitalize()}**"
            self.out.append(f"{indent}{marker}>{title}")

    def fence_line(self, indent: str, marker: str) -> tuple[str, str]:
        """A fence never shares its line with a bullet (`- ```js`): the index, like many renderers,
        sees a fence only at the start of a line, so the bullet gets a line of its own."""
        if not marker:
            return indent, marker
        self.out.append(f"{indent}-")
        return indent + "  ", ""

    def in_fence(self, indent: str, content: str) -> None:
        assert self.fence is not None
        if self.fence.startswith("#+END_") and content.upper().startswith(self.fence):
            self.out.append(f"{indent}```")
            self.fence = None
        elif not self.fence.startswith("#+END_") and content.startswith(self.fence) and not content.strip("`~ "):
            self.out.append(f"{indent}{content}")
            self.fence = None
        else:
            self.out.append(f"{indent}{content}".rstrip())

    def close_block(self) -> None:
        if self.block is not None:
            for block_id in self.block.ids:
                self.page.blocks.setdefault(block_id, self.block.text or "")
        self.block = None
