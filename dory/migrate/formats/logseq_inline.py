"""Logseq's inline references as Dory markdown: page links, block references, embeds, queries, assets.

- `[[Page]]`, `#[[Page]]` and `[label]([[Page]])` become wikilinks to the page's proposed corpus
  path (`wikilink`), labelled as Logseq showed them; the page is found by name, alias or journal
  title, case-insensitively, as Logseq finds it. `#tag` stays as written (a tag, not a link).
- `((block id))` becomes the referenced block's first line followed by a link to its page; block
  references inside that line become links to their pages (so a cycle of references ends there);
  `[label](((id)))` becomes the label linked to that page. An id the graph does not hold stays as
  written, as inline code (nothing to resolve it to, nothing lost).
- `{{embed [[Page]]}}` becomes a link to the page, `{{embed ((id))}}` the block as above;
  `{{query …}}` becomes inline code (it runs only in Logseq, and its `[[names]]` are not links).
  Other macros (`{{video …}}`, `{{cloze …}}`) stay as written.
- `![x](../assets/file)` points at the asset's corpus path, relative to the note.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass

from dory.migrate.formats.prose import code_span, prose_line, substitute
from dory.migrate.model import wikilink

_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_NAME = r"[^\[\]\n]+"
INLINE = re.compile(
    r"(?P<query>\{\{\s*query\b(?:[^}\n]|\}(?!\}))*\}\})"
    rf"|\{{\{{\s*embed\s+(?:\[\[(?P<embed_page>{_NAME})\]\]|\(\((?P<embed_block>{_UUID})\)\))\s*\}}\}}"
    rf"|\[(?P<page_label>[^\[\]\n]*)\]\(\[\[(?P<labelled_page>{_NAME})\]\]\)"
    rf"|\[(?P<block_label>[^\[\]\n]*)\]\(\(\((?P<labelled_block>{_UUID})\)\)\)"
    rf"|\(\((?P<block>{_UUID})\)\)"
    rf"|(?P<tag>#?)\[\[(?P<page>{_NAME})\]\]"
    r"|(?P<bang>!?)\[(?P<asset_label>[^\[\]\n]*)\]\((?:\.\./)*/?(?P<asset>assets/[^()\s]+)\)"
)


@dataclass(frozen=True)
class Block:
    page: str  # the proposed corpus path of its page
    title: str  # its page's title
    text: str  # its first line, as written in Logseq


@dataclass
class Resolver:
    """What links are rewritten against: page name → proposed path, block id → Block, and where an
    asset (`assets/x.png`, relative to the graph) lands."""

    page: Callable[[str], str | None]
    block: Callable[[str], Block | None]
    asset: Callable[[str], str]


def rewrite(lines: list[str], note_path: str, resolver: Resolver) -> list[str]:
    """The body lines of the note at `note_path` with every reference in prose rewritten."""
    return substitute(lines, 0, INLINE, lambda match: _replace(match, note_path, resolver, nested=False))


def _replace(match: re.Match[str], note_path: str, resolver: Resolver, nested: bool) -> str:
    group = match.group
    if group("query"):
        return code_span(group("query"))
    if group("embed_page") or group("labelled_page") or group("page"):
        name = group("embed_page") or group("labelled_page") or group("page")
        path = resolver.page(name.strip())
        if path is None:
            return match.group(0)
        label = group("page_label") if group("labelled_page") else f"{group('tag') or ''}{name.strip()}"
        return wikilink(path, label or name.strip())
    if group("block_label") is not None and group("labelled_block"):
        found = resolver.block(group("labelled_block"))
        return wikilink(found.page, group("block_label") or found.title) if found else match.group(0)
    if group("embed_block") or group("block"):
        return block_text(group("embed_block") or group("block"), note_path, resolver, nested)
    if group("asset"):
        return _asset(match, note_path, resolver)
    return match.group(0)


def block_text(block_id: str, note_path: str, resolver: Resolver, nested: bool) -> str:
    """A block reference as readable text: the block's first line and a link to its page (only the
    link for a reference inside a referenced block)."""
    found = resolver.block(block_id)
    if found is None:
        return code_span(f"(({block_id}))")
    link = wikilink(found.page, found.title)
    if nested:
        return link
    text = prose_line(found.text.lstrip("# ").strip(), INLINE, lambda m: _replace(m, note_path, resolver, nested=True))
    return f"{text} ({link})" if text else link


def _asset(match: re.Match[str], note_path: str, resolver: Resolver) -> str:
    target = resolver.asset(match.group("asset").split("#")[0])
    href = posixpath.relpath(target, posixpath.dirname(note_path))
    href = href.replace("%", "%25").replace(" ", "%20").replace("(", "%28").replace(")", "%29")
    return f"{match.group('bang')}[{match.group('asset_label')}]({href})"
