"""Notion's links, rewritten for the corpus.

Notion writes markdown links with URL-encoded relative paths: `[Title](Sub%20Page%20<id>.md)`,
`../` across subtrees, links to database `.csv` files, images as `![alt](Page%20<id>/image.png)`
(the alt often being the encoded path again), and links to other Notion pages as
`https://www.notion.so/<id>` URLs. Each one whose target is in the export becomes a wikilink to the
target's proposed path (an image an embed, `![[…/image.png]]`); one whose target is not in the
export becomes plain text, the label and "(not in the export)", so no link is left broken. Web
links stay as written; nothing inside code is touched.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import unquote

from dory.memory.links import code_masked
from dory.migrate.formats.notion_layout import Target
from dory.migrate.formats.notion_names import find_id, strip_ids
from dory.migrate.model import wikilink

DANGLING = "(not in the export)"
_LINK = re.compile(
    r"(!?)\[((?:[^\[\]\n]|\[[^\[\]\n]*\]){0,500})\]"  # [label], one level of nested brackets
    r"\(([^\s()<>]*(?:\([^\s()<>]*\)[^\s()<>]*)*)\)"  # (href): Notion encodes spaces; parens balanced
)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_NOTION_URL = re.compile(r"^https?://(?:www\.)?notion\.so/", re.IGNORECASE)

Resolve = Callable[[str], Target | None]  # a relative href → its target, or None
ResolveId = Callable[[str], str | None]  # a Notion id → its proposed note path, or None


@dataclass
class Rewritten:
    text: str
    dangling: list[str] = field(default_factory=list)  # the hrefs not in the export


def rewrite(text: str, resolve: Resolve, resolve_id: ResolveId) -> Rewritten:
    out = Rewritten("")
    lines = text.split("\n")
    masked = code_masked(lines)
    for n, (line, mask) in enumerate(zip(lines, masked, strict=True)):
        if "](" not in mask:
            continue
        pieces: list[str] = []
        pos = 0
        for match in _LINK.finditer(mask):
            embed = match.group(1) == "!"
            label = line[match.start(2) : match.end(2)]
            href = line[match.start(3) : match.end(3)]
            new = _one(embed, label, href, resolve, resolve_id, out)
            if new is not None:
                pieces += [line[pos : match.start()], new]
                pos = match.end()
        lines[n] = "".join(pieces) + line[pos:]
    out.text = "\n".join(lines)
    return out


def _one(embed: bool, label: str, href: str, resolve: Resolve, resolve_id: ResolveId, out: Rewritten) -> str | None:
    """The text that replaces one link, or None to leave it as written."""
    if not href or href.startswith("#"):
        return None
    if _SCHEME.match(href):
        found = find_id(href) if _NOTION_URL.match(href) else None
        target_path = resolve_id(found) if found else None
        if target_path is None:
            return None  # a web link, or a Notion page outside the export: still a working URL
        return wikilink(target_path, clean_label(label, href))
    target = resolve(href)
    shown = clean_label(label, href)
    if target is None:
        out.dangling.append(unquote(href))
        return f"{shown} (image not in the export)" if embed else f"{shown} {DANGLING}"
    if target.note:
        return wikilink(target.path, shown)
    return "!" + wikilink(target.path) if embed else wikilink(target.path, shown)


def clean_label(label: str, href: str) -> str:
    """What a link shows, without Notion's encoding and ids: an alt text that is the target's path
    (`Page%20<id>/image.png`) shows the file name; an empty one, the target's name."""
    text = unquote(label).strip()
    name = posixpath.basename(unquote(href).split("#", 1)[0])
    if not text or ("/" in text and posixpath.basename(text) == name):
        text = name
    if text.lower().endswith(".md"):
        text = text[:-3]
    return strip_ids(text) or "link"
