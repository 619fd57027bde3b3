"""What a note links to, read from its markdown: explicit links and implicit mentions of entities.

Pure functions over a note's lines (no SQL). The graph (dory/memory/graph.py) stores what they find;
explicit targets are stored as written and resolved when the graph is queried, so a link to a note
that does not exist yet starts resolving the moment that note is indexed, without re-reading the
note that links to it.

Never scanned: frontmatter, fenced code blocks (``` or ~~~, closed only by a fence of the same
character at least as long; an unclosed fence runs to the end of the file) and inline code spans
(matched by backtick count, within one line). Indented code blocks *are* scanned: telling them from
indented list continuations needs a full markdown parse, and links inside them are rare. Fences are
recognised at any indentation and inside blockquotes, since notes put them in list items.

Longer than ~400 lines: link extraction (wikilinks, markdown links, mentions) shares one
code mask and one name normaliser; splitting it would export those internals.
"""

from __future__ import annotations

import functools
import hashlib
import json
import posixpath
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias
from urllib.parse import unquote

if TYPE_CHECKING:
    from dory.memory.entities import Registry

# A wikilink to a file with one of these extensions points at an attachment, not at a note.
ATTACHMENTS = frozenset(
    {
        "png",
        "jpg",
        "jpeg",
        "gif",
        "bmp",
        "svg",
        "webp",
        "avif",
        "tif",
        "tiff",
        "ico",
        "heic",
        "mp3",
        "wav",
        "m4a",
        "ogg",
        "flac",
        "3gp",
        "webm",
        "mp4",
        "mov",
        "mkv",
        "ogv",
        "pdf",
        "canvas",
        "base",
        "csv",
        "zip",
        "json",
    }
)
# Names too generic to count as a mention of an entity (core page names, layout words).
GENERIC_NAMES = frozenset(
    {
        "state",
        "index",
        "notes",
        "note",
        "active",
        "active focus",
        "user",
        "soul",
        "env",
        "environment",
        "identity",
        "defaults",
        "readme",
        "todo",
        "inbox",
        "ideas",
        "home",
        "log",
        "logs",
        "memory",
        "summary",
        "timeline",
        "agents",
        "tools",
        "people",
        "projects",
        "concepts",
        "decisions",
        "core",
    }
)
MIN_NAME_CHARS = 3
_RANK = {"slug": 0, "title": 1, "alias": 2}  # which name wins when two entities share one (as Registry.resolve)

_FENCE = re.compile(r"^[ \t>]*(`{3,}|~{3,})(.*)$")
_TICKS = re.compile(r"`+")
_NOT_NEWLINE = re.compile(r"[^\n]")
_WIKI = re.compile(r"(!?)\[\[([^\[\]\n]+)\]\]")
_MARKDOWN = re.compile(
    r"(!?)\[((?:[^\[\]\n]|\[[^\[\]\n]*\]){0,500})\]"  # [label], one level of nested brackets (bounded:
    # a long line of brackets must not cost quadratic time)
    r"\(\s*(<[^<>\n]*>|[^\s()<>]*(?:\([^\s()]*\)[^\s()<>]*)*)"  # (<href>) or (href) with balanced parens
    r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?\s*\)"  # optional "title"
)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://\S+|\bwww\.\S+")
# Prose folded the way normalise_name folds names: lowercase ASCII letters and digits, all else a space
# (line breaks stay). _FOLD grows by each non-ASCII character met, folded once (see _fold_char).
_ASCII_FOLD = {code: " " for code in range(128) if not chr(code).isalnum() and chr(code) != "\n"}
_FOLD: dict[int, str] = {**_ASCII_FOLD, **{ord(c): c.lower() for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}}


@dataclass(frozen=True, slots=True)
class Link:
    kind: str  # "wikilink" | "markdown"
    target: str  # as written: a wikilink without #heading and |label, a markdown href URL-decoded, no #anchor
    line: int  # 1-based, counted in the whole file
    heading: str | None = None
    label: str | None = None
    embed: bool = False  # ![[...]] or ![...](...): still a link to the target

    @property
    def key(self) -> str:
        return link_key(self.target)


@dataclass(frozen=True, slots=True)
class Mention:
    path: str  # the entity's canonical page
    name: str  # the normalised name that matched
    text: str  # the words as written
    line: int


# -- keys ----------------------------------------------------------------------------------------
def link_key(text: str) -> str:
    """The one normalisation of link targets and note names: `\\` is `/`, `./`, `//` and a leading `/`
    go, case and a `.md` suffix do not matter. Both sides use it, so `[[Folder/My Note]]`,
    `[x](./folder/my%20note.md)` and the file `Folder/My Note.md` meet on `folder/my note`."""
    key = text.strip().replace("\\", "/")
    if not key:
        return ""
    if not key.isascii():
        key = unicodedata.normalize("NFC", key)  # macOS file names arrive decomposed
    key = posixpath.normpath(key).lstrip("/").lower()
    key = "" if key == "." else key
    return key[:-3] if key.endswith(".md") else key


def relative_path(source: str, target: str) -> str | None:
    """`target` read from the folder of `source` (from the corpus root when it starts with `/`);
    None when it climbs out of the corpus."""
    cleaned = target.strip().replace("\\", "/")
    base = "" if cleaned.startswith("/") else posixpath.dirname(source)
    joined = posixpath.normpath(posixpath.join(base, cleaned.lstrip("/")))
    if joined == ".." or joined.startswith("../"):
        return None
    return joined


def is_explicit_path(target: str) -> bool:
    """`./x`, `../x` and `/x` name one place; anything else may also be found by name."""
    return target.strip().replace("\\", "/").startswith(("./", "../", "/"))


def note_names(path: str, aliases: Iterable[str]) -> list[tuple[str, str]]:
    """(name, kind) pairs a note can be linked by: its path, its file name and its aliases."""
    names = [(link_key(path), "path"), (link_key(posixpath.basename(path)), "stem")]
    names += [(link_key(alias), "alias") for alias in aliases]
    return list(dict.fromkeys((name, kind) for name, kind in names if name))


# -- masking what is not prose -------------------------------------------------------------------
def code_masked(lines: list[str], body_start: int = 0) -> list[str]:
    """The lines with frontmatter and fenced code emptied and inline code spans blanked (same length),
    so line numbers and columns still match the file."""
    out = [""] * min(body_start, len(lines))
    fence: str | None = None  # the opening run while inside a fenced block
    for line in lines[body_start:]:
        if fence is not None:
            if ("```" in line or "~~~" in line) and _closes(line, fence):
                fence = None
            out.append("")
        elif ("```" in line or "~~~" in line) and (opening := _opening(line)):
            fence = opening
            out.append("")
        else:
            out.append(_mask_spans(line) if "`" in line else line)
    return out


def _opening(line: str) -> str | None:
    match = _FENCE.match(line)
    if match is None or (match.group(1)[0] == "`" and "`" in match.group(2)):
        return None  # a backtick fence's info string never holds a backtick (```x``` is inline code)
    return match.group(1)


def _closes(line: str, fence: str) -> bool:
    match = _FENCE.match(line)
    return (
        match is not None
        and match.group(1)[0] == fence[0]
        and len(match.group(1)) >= len(fence)
        and not match.group(2).strip()
    )


def _mask_spans(line: str) -> str:
    """Blank code spans: a run of n backticks opens one that the next run of exactly n closes; a run
    with no such partner is literal text."""
    runs = [m.span() for m in _TICKS.finditer(line)]
    pieces: list[str] = []
    last, index = 0, 0
    while index < len(runs):
        start, end = runs[index]
        close = next((j for j in range(index + 1, len(runs)) if runs[j][1] - runs[j][0] == end - start), None)
        if close is None:
            index += 1
            continue
        pieces += [line[last:start], " " * (runs[close][1] - start)]
        last, index = runs[close][1], close + 1
    return "".join(pieces) + line[last:]


def _blank(match: re.Match[str]) -> str:
    """The same text as spaces; a line break inside stays, so line numbers do not move."""
    return _NOT_NEWLINE.sub(" ", match.group())


# -- explicit links ------------------------------------------------------------------------------
def extract_links(lines: list[str], body_start: int = 0) -> list[Link]:
    return find_links(code_masked(lines, body_start))


def find_links(masked: list[str]) -> list[Link]:
    """Wikilinks and markdown links to local notes in lines already masked by `code_masked`, in
    reading order."""
    found: list[tuple[int, int, Link]] = []
    for number, line in enumerate(masked, 1):
        if "[" not in line:
            continue
        rest = line
        if "[[" in line:
            found += [(number, m.start(), link) for m in _WIKI.finditer(line) if (link := _wikilink(m, number))]
            rest = _WIKI.sub(_blank, line)
        if "](" in rest:
            found += [(number, m.start(), link) for m in _MARKDOWN.finditer(rest) if (link := _markdown(m, number))]
    found.sort(key=lambda item: item[:2])
    return [link for _, _, link in found]


def written_wikilinks(text: str) -> dict[str, Link]:
    """Each distinct `[[...]]` of `text` by what is written between its brackets, with what it says.
    Code is not masked (a renderer knows what is code and looks up only what it renders as a link);
    same-note headings and attachments are left out."""
    found: dict[str, Link] = {}
    for number, line in enumerate(text.split("\n"), 1):
        if "[[" not in line:
            continue
        for match in _WIKI.finditer(line):
            if match.group(2) not in found and (link := _wikilink(match, number)):
                found[match.group(2)] = link
    return found


def _wikilink(match: re.Match[str], line: int) -> Link | None:
    target, _, label = match.group(2).partition("|")
    target = target.removesuffix("\\")  # `[[note\|label]]` inside a table cell
    target, _, heading = target.partition("#")
    target = target.strip()
    if not target or posixpath.splitext(target)[1][1:].lower() in ATTACHMENTS:
        return None  # `[[#heading]]` stays in the note; `![[photo.png]]` is an attachment
    return Link("wikilink", target, line, heading.strip() or None, label.strip() or None, match.group(1) == "!")


def _markdown(match: re.Match[str], line: int) -> Link | None:
    href = match.group(3)
    href = href[1:-1].strip() if href.startswith("<") else href
    if not href or href.startswith("#") or _SCHEME.match(href):
        return None  # same-note anchors, web and mail links, other schemes
    path, _, anchor = href.partition("#")
    path = unquote(path.partition("?")[0])
    if not path.lower().endswith(".md"):
        return None  # only notes: `[x](note)` without the extension is a URL, not a note
    return Link(
        "markdown", path, line, unquote(anchor).strip() or None, match.group(2).strip() or None, match.group(1) == "!"
    )


# -- mentions ------------------------------------------------------------------------------------
def mention_names(registry: Registry) -> dict[str, str]:
    """Normalised name → entity page, for names worth spotting in prose: at least three characters,
    not only digits, not generic, and naming one entity (a name two entities share at the same rank,
    slug over title over alias, names neither: a mention is never a guess)."""
    ranked: dict[str, tuple[int, set[str]]] = {}
    for entity in registry.entities:
        for name, how in entity.names().items():
            if len(name) < MIN_NAME_CHARS or name.replace(" ", "").isdigit() or name in GENERIC_NAMES:
                continue
            best = ranked.get(name)
            if best is None or _RANK[how] < best[0]:
                ranked[name] = (_RANK[how], {entity.path})
            elif _RANK[how] == best[0]:
                best[1].add(entity.path)
    return {name: next(iter(paths)) for name, (_, paths) in sorted(ranked.items()) if len(paths) == 1}


def names_stamp(names: dict[str, str]) -> str:
    """A short fingerprint of a name mapping (which mapping the stored mention rows agree with)."""
    blob = json.dumps(names, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()[:24] if names else ""


class MentionMatcher:
    """Finds entity names in prose with one compiled pattern (a character trie of every name), so the
    cost per note does not grow with the number of entities. Matches are leftmost-longest whole
    words: "Alice Smith" is a mention of alice-smith, not also of a person called Alice."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names
        self.pattern = re.compile(r"\b(?:" + _trie_regex(names) + r")\b") if names else None

    def find(self, masked: list[str], own_path: str | None = None) -> list[Mention]:
        """Mentions in lines masked by `code_masked`; words inside a link or a URL are not prose, and
        a note's own entity is never its mention."""
        if self.pattern is None:
            return []
        found: list[Mention] = []
        not_prose: dict[int, list[tuple[int, int]]] = {}  # per line with a match: link and URL spans
        for number, start, end, name in self._matches(masked):
            line = masked[number - 1]
            if not line.isascii():
                where = _fold(line)[1]
                start, end = where[start], where[end - 1] + 1
            spans = not_prose.setdefault(number, _links_and_urls(line))
            path = self.names[name]
            if path != own_path and not any(s < end and start < e for s, e in spans):
                found.append(Mention(path, name, line[start:end], number))
        return found

    def _matches(self, masked: list[str]) -> Iterator[tuple[int, int, int, str]]:
        """(line number, start, end, name) of each match, offsets in the folded line: one pass of the
        pattern over the whole note, folded by one `str.translate`."""
        assert self.pattern is not None
        folded = _fold_text("\n".join(masked))
        number, line_start, pos = 1, 0, 0
        for match in self.pattern.finditer(folded):
            newlines = folded.count("\n", pos, match.start())
            if newlines:
                number += newlines
                line_start = folded.rindex("\n", 0, match.start()) + 1
            pos = match.start()
            yield number, match.start() - line_start, match.end() - line_start, " ".join(match.group().split())


def _links_and_urls(line: str) -> list[tuple[int, int]]:
    if "[" not in line and "://" not in line and "www." not in line:
        return []
    return [m.span() for pattern in (_WIKI, _MARKDOWN, _URL) for m in pattern.finditer(line)]


def extract_mentions(
    lines: list[str], body_start: int, matcher: MentionMatcher, own_path: str | None = None
) -> list[Mention]:
    return matcher.find(code_masked(lines, body_start), own_path)


# A character → the trie of what may follow it; the key "" marks the end of a word.
_Trie: TypeAlias = dict[str, "_Trie"]


def _trie_regex(words: Iterable[str]) -> str:
    trie: _Trie = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}
    return _node_regex(trie)


def _node_regex(node: _Trie) -> str:
    """Alternatives start with distinct characters, so at most one applies; an optional tail is
    greedy, which makes the longest name win and backtracks to a shorter one when a word goes on."""
    branches = [
        (" +" if char == " " else re.escape(char)) + _node_regex(child) for char, child in sorted(node.items()) if char
    ]
    if not branches:
        return ""
    if "" not in node:
        return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    return "(?:" + "|".join(branches) + ")?"


def _fold_text(text: str) -> str:
    """`text` folded with the same length per character as `_fold` gives, but in one C-level pass."""
    if not text.isascii():
        for char in set(text):
            if ord(char) > 127 and ord(char) not in _FOLD:
                _FOLD[ord(char)] = _fold_char(char)
    return text.translate(_FOLD)


def _fold(line: str) -> tuple[str, list[int]]:
    """A line folded character by character (NFKD, accents and other non-ASCII letters dropped as
    normalise_name drops them; punctuation becomes a space), with each folded character's index in
    the line: maps a match in a folded non-ASCII line back to the words as written."""
    chars: list[str] = []
    where: list[int] = []
    for index, char in enumerate(line):
        folded = _fold_char(char)
        chars.append(folded)
        where += [index] * len(folded)
    return "".join(chars), where


@functools.lru_cache(maxsize=8192)
def _fold_char(char: str) -> str:
    if char.isascii():
        return char.lower().translate(_ASCII_FOLD)
    folded = unicodedata.normalize("NFKD", char).encode("ascii", "ignore").decode("ascii").lower()
    if not folded and unicodedata.category(char)[0] not in "LMN":
        return " "  # a curly apostrophe or a dash separates words; it is not a letter to drop
    return folded.translate(_ASCII_FOLD)
