"""Markdown to HTML that is safe to show a person, whoever wrote the note.

Two independent lines. First, markdown-it-py renders with raw HTML off: a `<script>`, an `<iframe>`
or an `<img onerror=…>` written in a note comes out as visible text, and its link check leaves
`javascript:`, `vbscript:` and `file:` links as plain text. Second, nh3 (the ammonia sanitiser) keeps
only the tags markdown produces, only attributes that carry no code (no `on*`, no `style`), only the
wiki's own classes, and only http, https, mailto and relative URLs (so no `data:` either). Behind both,
the pages' Content-Security-Policy allows no script at all (pages.py).

Wikilinks: the service says where each `[[...]]` of a note leads, keyed by the text between the
brackets; an inline rule turns exactly those into links to the wiki's pages (or marks them
unresolved), so what counts as a wikilink is decided once, by the link graph's parser. Code spans and
code blocks are never scanned: markdown-it has consumed them before the rule runs.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any
from urllib.parse import quote

import nh3
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from markdown_it.utils import OptionsDict
from markupsafe import Markup

from dory.models import WikiTarget

TAGS = {
    *("p", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "hr", "br", "pre", "code"),
    *("ul", "ol", "li", "em", "strong", "s", "a", "img", "span"),
    *("table", "thead", "tbody", "tr", "th", "td"),
}
ATTRIBUTES = {"a": {"href", "title"}, "img": {"src", "alt", "title"}, "span": {"title"}, "ol": {"start"}}
CLASSES = {"a": {"wikilink"}, "span": {"wikilink", "unresolved"}}
URL_SCHEMES = {"http", "https", "mailto"}
_CLEANER = nh3.Cleaner(
    tags=TAGS,
    clean_content_tags={"script", "style"},
    attributes=ATTRIBUTES,
    allowed_classes=CLASSES,
    url_schemes=URL_SCHEMES,
    link_rel="noopener noreferrer",
)


def note_url(path: str) -> str:
    return "/wiki/n/" + quote(path, safe="/")


@functools.cache
def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    md.inline.ruler.before("link", "wikilink", _wikilink_rule)
    md.add_render_rule("wikilink", _render_wikilink)
    return md


def to_html(markdown: str, wikilinks: Mapping[str, WikiTarget] | None = None) -> Markup:
    """`markdown` as sanitised HTML; `wikilinks` (from the service) says where each `[[...]]` leads."""
    raw = _markdown().render(markdown, {"wikilinks": wikilinks or {}})
    return Markup(_CLEANER.clean(raw))


def _wikilink_rule(state: StateInline, silent: bool) -> bool:
    """`[[written]]` where the service resolved `written`; anything else is left to the other rules."""
    start = state.pos
    if not state.src.startswith("[[", start):
        return False
    end = state.src.find("]]", start + 2)
    written = state.src[start + 2 : end] if end > start else ""
    if written not in state.env["wikilinks"]:
        return False
    if not silent:
        state.push("wikilink", "", 0).meta = {"written": written}
    state.pos = end + 2
    return True


def _render_wikilink(
    renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: dict[str, Any]
) -> str:
    target: WikiTarget = env["wikilinks"][tokens[idx].meta["written"]]
    label = escape(target.label or target.target)
    if target.path is None:
        why = escape(f'no note named "{target.target}"')
        return f'<span class="wikilink unresolved" title="{why}">{label}</span>'
    return f'<a class="wikilink" href="{escape(note_url(target.path))}">{label}</a>'
