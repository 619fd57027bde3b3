"""Logseq graphs: `pages/` and `journals/` of outline pages (markdown or org), `assets/`, and a
`logseq/` folder of app settings (`config.edn`: the signature; never imported as notes).

Decisions:
- Every page becomes one note at `<into>/<page name>.md`, its name from its `title::` or its file
  (`a___b.md` and `a%2Fb.md` are the page `a/b`, at `a/b.md`: logseq_names.py). Journals
  (`journals/2020_09_14.md`) become `<into>/journals/2020-09-14.md` with `type: daily` and `date`.
- Page properties (`key:: value` before the first block) become frontmatter: `title::` the title,
  `alias::` the aliases, `tags::` the tags, the others under their own names, except names Dory
  gives a meaning to (`type`, `status`, …: RESERVED), kept as `logseq-<name>` so a Logseq
  `type:: [[Book]]` never makes a note a Dory person page. Values are kept as written.
- The outline stays a markdown list (logseq_blocks.py); references are rewritten
  (logseq_inline.py): `[[links]]` to the proposed paths of their pages, `((block refs))` to the
  block's text with a link to its page, `{{embed}}` to links, `{{query}}` to code.
- A page Logseq knows only because something links to it (Logseq creates it on the first link) is a
  short stub note (kind `stub`), so every page link of the graph resolves after the import.
- `.org` pages and journals are converted (basic Org: org.py), not kept as evidence.
- A page whose YAML frontmatter is broken keeps it as a code block at the top (`bad_frontmatter`).
- Files outside `pages/` and `journals/` go through the generic reader: `assets/` are copied beside
  (links to them rewritten), anything else becomes what the generic reader makes of it.
The graph is read twice per pass: once to learn page names, aliases and block texts (only blocks
that carry an `id::`, so memory holds names and those lines, never the pages), once to write.
"""

from __future__ import annotations

import datetime as dt
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from dory.corpus.document import ReadProblem, frontmatter_list
from dory.migrate.formats import logseq_names as names
from dory.migrate.formats import org
from dory.migrate.formats.generic import read_file, target_path
from dory.migrate.formats.logseq_blocks import Page, parse
from dory.migrate.formats.logseq_inline import INLINE, Block, Resolver, rewrite
from dory.migrate.formats.prose import substitute
from dory.migrate.model import Item, ItemProblem, Output, ReadContext, SourceFile, SourceTreeLike, Yielded, digest_of
from dory.migrate.text import NotText, decode, note

CONFIG = "logseq/config.edn"
PAGE_FOLDERS = ("pages", "journals")
PAGE_FORMATS = ("md", "markdown", "org")
RESERVED = frozenset(
    {"type", "status", "canonical", "source_kind", "visibility", "sensitivity", "pinned", "superseded_by", "aliases"}
)
_HANDLED = frozenset({"title", "alias", "aliases", "tags", "id"})
_LIST_ITEM = re.compile(r"\[\[([^\[\]]+)\]\]|([^,\[\]]+)")
STUB_TEXT = "A page of the Logseq graph with no content of its own: other pages link to it."


class LogseqReader:
    name = "logseq"
    folder = "knowledge"

    def detect(self, tree: SourceTreeLike) -> int:
        found = graph_root(tree)
        return 0 if found is None else 20 if found[1] else 12

    def read(self, tree: SourceTreeLike, ctx: ReadContext) -> Iterator[Yielded]:
        root = (graph_root(tree) or ("", False))[0]
        graph = Graph(ctx.into, _title_format(tree, root))
        for file in tree.files():
            if (rel := _inside(file.rel, root)) is not None and _is_page(rel):
                graph.learn(file, rel)
        for file in tree.files():
            rel = _inside(file.rel, root)
            if rel is None:  # beside the graph's folder: whatever the generic reader makes of it
                yield read_file(file, ctx.into, ctx)
            elif rel.startswith("logseq/"):
                continue  # app settings, backups of pages, version files
            elif _is_page(rel):
                yield from graph.page_items(file, rel)
            else:
                yield read_file(file if rel == file.rel else SourceFile(rel, file.size, file.opener), ctx.into, ctx)
        yield from graph.stubs()


def graph_root(tree: SourceTreeLike) -> tuple[str, bool] | None:
    """(the graph's folder, whether it has `logseq/config.edn`), or None when the tree is no graph:
    the shallowest folder with `logseq/config.edn`, else with both `pages/` and `journals/`."""
    configs: list[str] = []
    folders: dict[str, set[str]] = {}
    for file in tree.files():
        if file.rel == CONFIG or file.rel.endswith("/" + CONFIG):
            configs.append(file.rel[: -len(CONFIG)])
        parts = file.rel.split("/")
        for n, part in enumerate(parts[:3][: len(parts) - 1]):  # at most two wrapping folders
            if part in PAGE_FOLDERS:
                folders.setdefault("".join(p + "/" for p in parts[:n]), set()).add(part)
    if configs:
        return min(configs, key=lambda root: (root.count("/"), root)), True
    both = [root for root, found in folders.items() if len(found) == len(PAGE_FOLDERS)]
    return (min(both, key=lambda root: (root.count("/"), root)), False) if both else None


def _inside(rel: str, root: str) -> str | None:
    return rel[len(root) :] if rel.startswith(root) else None


def _is_page(rel: str) -> bool:
    return (
        rel.split("/", 1)[0] in PAGE_FOLDERS and "/" in rel and posixpath.splitext(rel)[1][1:].lower() in PAGE_FORMATS
    )


def _title_format(tree: SourceTreeLike, root: str) -> str:
    config = tree.get(root + CONFIG)
    try:
        return names.title_format(decode(config.read())[0]) if config is not None else names.DEFAULT_TITLE_FORMAT
    except (OSError, ValueError):
        return names.DEFAULT_TITLE_FORMAT


@dataclass
class _Source:
    """One page file, read: its name, where it goes and its parsed outline."""

    data: bytes
    name: str
    path: str
    day: dt.date | None
    page: Page
    how: str | None  # how the text was decoded, when not as UTF-8


class Graph:
    """What pages, aliases and blocks the graph holds, and every page name its links use."""

    def __init__(self, into: str, title_format: str) -> None:
        self.into = into
        self.title_format = title_format
        self.paths: dict[str, str] = {}  # name key (title or journal name) → proposed path
        self.aliases: dict[str, str] = {}  # alias key → proposed path of the page it names
        self.blocks: dict[str, Block] = {}  # block id (lower case) → the block
        self.linked: dict[str, str] = {}  # name key → first spelling, of every page a link names
        self.resolver = Resolver(page=self.page, block=lambda i: self.blocks.get(i.lower()), asset=self.asset)

    def open(self, file: SourceFile, rel: str) -> _Source | ItemProblem:
        try:
            data = file.read()
            text, how = decode(data)
            if file.suffix == "org":
                text = org.to_markdown(text)
            page = parse(rel, text)
        except NotText as exc:
            return ItemProblem(file.rel, "bad_encoding", str(exc))
        except ReadProblem as exc:
            return ItemProblem(file.rel, "bad_encoding", exc.detail)
        except (OSError, ValueError) as exc:
            return ItemProblem(file.rel, "unreadable", str(exc))
        title = page.properties.get("title") or _text(page.frontmatter.get("title"))
        day = names.journal_day(rel) if rel.startswith("journals/") else None
        if day is not None:
            name = title or names.format_day(day, self.title_format)
            return _Source(data, name, names.journal_path(self.into, day), day, page, how)
        name = title or names.page_name(rel.split("/", 1)[1]) or "untitled"
        folder = self.into if rel.startswith("pages/") else posixpath.join(self.into, "journals")
        return _Source(data, name, names.page_path(folder, name), None, page, how)

    def learn(self, file: SourceFile, rel: str) -> None:
        """The first pass over one page: its names, its blocks with ids, the pages it links to."""
        source = self.open(file, rel)
        if isinstance(source, ItemProblem):
            return
        own = [source.name, *(names.journal_names(source.day, self.title_format) if source.day else [])]
        for name in own:
            self.paths.setdefault(names.key(name), source.path)
        for alias in _aliases(source):
            self.aliases.setdefault(names.key(alias), source.path)
        for block_id, text in source.page.blocks.items():
            self.blocks.setdefault(block_id, Block(source.path, source.name, text))
        substitute(source.page.lines, 0, INLINE, self._note_link)

    def _note_link(self, match: re.Match[str]) -> str:
        name = (match.group("embed_page") or match.group("labelled_page") or match.group("page") or "").strip()
        if name and "://" not in name:
            self.linked.setdefault(names.key(name), name)
        return match.group(0)

    def page(self, name: str) -> str | None:
        """The proposed path of the page `name` means (a stub's when no file holds it)."""
        key = names.key(name)
        if "://" in name or not key:
            return None
        return self.paths.get(key) or self.aliases.get(key) or self._stub_path(self.linked.get(key, name))[0]

    def _stub_path(self, name: str) -> tuple[str, dt.date | None]:
        """Where the page `name` goes when no file holds it: a day's name goes with the journals."""
        day = names.parse_day(name, self.title_format)
        return (names.journal_path(self.into, day), day) if day else (names.page_path(self.into, name), None)

    def asset(self, rel: str) -> str:
        return target_path(self.into, unquote(rel))

    def page_items(self, file: SourceFile, rel: str) -> Iterator[Yielded]:
        source = self.open(file, rel)
        if isinstance(source, ItemProblem):
            yield source
            return
        if source.page.problem is not None:
            yield ItemProblem(file.rel, "bad_frontmatter", f"imported; {source.page.problem}: kept as a code block")
        body = "\n".join(rewrite(source.page.lines, source.path, self.resolver))
        out = Output(source.path, note(self.frontmatter(source), body), "note")
        kind = "journal" if source.day else "note"
        yield Item(f"file:{file.rel}", kind, file.rel, digest_of(source.data), [out], note=source.how or "")

    def frontmatter(self, source: _Source) -> dict[str, Any]:
        fm: dict[str, Any] = {"title": source.name}
        if source.day is not None:
            fm |= {"type": "daily", "date": source.day.isoformat()}
        fm["aliases"] = _aliases(source)
        tags = _list(source.page.properties.get("tags", "")) + frontmatter_list(source.page.frontmatter.get("tags"))
        fm["tags"] = list(dict.fromkeys(tags))
        for key, value in [*source.page.frontmatter.items(), *source.page.properties.items()]:
            if key not in _HANDLED:
                fm.setdefault(f"logseq-{key}" if key in RESERVED else key, value)
        return fm

    def stubs(self) -> Iterator[Yielded]:
        """A note for every page that links name and no file holds."""
        for key, name in sorted(self.linked.items()):
            if key in self.paths or key in self.aliases:
                continue
            path, day = self._stub_path(name)
            fm = {"title": name} | ({"type": "daily", "date": day.isoformat()} if day else {})
            out = Output(path, note(fm, STUB_TEXT), "note")
            yield Item(f"logseq-page:{key}", "stub", f"[[{name}]]", digest_of("stub", name), [out])


def _aliases(source: _Source) -> list[str]:
    found = _list(source.page.properties.get("alias", ""))
    found += frontmatter_list(source.page.frontmatter.get("alias") or source.page.frontmatter.get("aliases"))
    return [alias for alias in dict.fromkeys(found) if names.key(alias) != names.key(source.name)]


def _list(value: str) -> list[str]:
    """`A, [[B, C]], #d` → [A, "B, C", d]: a Logseq property list (page refs or comma-separated)."""
    found = [(linked or plain).strip().lstrip("#").strip() for linked, plain in _LIST_ITEM.findall(value)]
    return [item for item in found if item]


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""
