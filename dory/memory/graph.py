"""The link graph: rows the indexer writes for each note, and the queries over them.

Explicit links (`[[wikilinks]]`, markdown links to `.md` files) are stored as written, with the key
they are looked up by (links.link_key), and resolved when the graph is queried, the way Obsidian
resolves them: markdown links first relative to the linking note; then the exact path; then a note
with that file name anywhere (a partial path `a/b` matches a path ending in `/a/b`), several → the
shortest path, then alphabetical; then an alias. So creating, deleting or renaming a target needs no
work on the notes linking to it, and a renamed linking note resolves from its new folder.

Mentions (entity names in prose) are resolved when written, to the entity's page. Every mention row
agrees with one name → page mapping kept in `meta` (MENTION_NAMES): `index_links` always uses it,
and `refresh_mentions`, run when entity pages changed, moves the whole index to the new mapping by
re-scanning only the notes that could be affected (those mentioning a page whose names changed, and
those whose text holds a new name, found with the FTS index). Mentions are therefore a function of
the corpus, whatever order notes and entity pages were indexed in.

Backlinks are `neighbors` with direction "in" (the service sets it).

Longer than ~400 lines: the link rows and every query over them share one schema; split
when the graph grows another query family (the next split: queries apart from row writing).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from dory.corpus.document import Document, frontmatter_list, parse_document
from dory.errors import NotFound
from dory.index import db
from dory.memory import links
from dory.memory.entities import Registry, normalise_name
from dory.models import BrokenLink, LinkEdge, LinkLintRequest, LinkLintResponse, LinkRequest, LinkResponse

MENTION_NAMES = "link_mention_names"  # meta: JSON {normalised name: entity page} the mention rows agree with
MENTION_STAMP = "link_mention_stamp"  # meta: its fingerprint, read on every write (the JSON only when it changes)
_SQL_VARS = 500  # ids or keys per IN (...) list
_T = TypeVar("_T")
_INSERT = "INSERT INTO links(file_id, kind, target, target_key, heading, label, line) VALUES (?, ?, ?, ?, ?, ?, ?)"


# -- writing -------------------------------------------------------------------------------------
def index_links(conn: sqlite3.Connection, file_id: int, doc: Document) -> None:
    """Rows for a note just (re)written: the names it can be linked by, its explicit links and its
    mentions. Mentions use the stored name mapping, not the live registry: an entity page written
    later in the same batch reaches this note through `refresh_mentions`, like every other note."""
    conn.execute("DELETE FROM links WHERE file_id = ?", (file_id,))  # normally gone already (cascade)
    conn.execute("DELETE FROM link_names WHERE file_id = ?", (file_id,))
    masked = links.code_masked(doc.lines, doc.body_start)
    conn.executemany(
        _INSERT,
        [
            (file_id, link.kind, link.target, link.key, link.heading, link.label, link.line)
            for link in links.find_links(masked)
        ],
    )
    names = links.note_names(doc.path, frontmatter_list(doc.frontmatter.get("aliases")))
    conn.executemany(
        "INSERT INTO link_names(file_id, name, kind) VALUES (?, ?, ?)", [(file_id, name, kind) for name, kind in names]
    )
    _write_mentions(conn, file_id, doc.path, masked, _matcher(conn))


def rename_note(conn: sqlite3.Connection, old: str, new: str) -> None:
    """Follow a rename in `link_names` (file ids survive renames). Queries read paths from `files`, so
    they are right without this; it keeps the stored path and file-name rows true."""
    row = conn.execute("SELECT id FROM files WHERE path = ?", (new,)).fetchone()
    if row is None:
        return
    conn.execute("DELETE FROM link_names WHERE file_id = ? AND kind IN ('path', 'stem')", (row[0],))
    names = [(name, kind) for name, kind in links.note_names(new, []) if kind != "alias"]
    conn.executemany(
        "INSERT INTO link_names(file_id, name, kind) VALUES (?, ?, ?)", [(row[0], name, kind) for name, kind in names]
    )


def _write_mentions(
    conn: sqlite3.Connection, file_id: int, path: str, masked: list[str], matcher: links.MentionMatcher
) -> None:
    """One row per entity a note mentions, at its first mention (the graph needs one edge)."""
    first: dict[str, links.Mention] = {}
    for mention in matcher.find(masked, own_path=path):
        first.setdefault(mention.path, mention)
    conn.executemany(_INSERT, [(file_id, "mention", m.path, m.path, None, m.text, m.line) for m in first.values()])


_MATCHERS: dict[str, links.MentionMatcher] = {}


def _matcher(conn: sqlite3.Connection) -> links.MentionMatcher:
    """The matcher for the stored mapping, compiled once per mapping (keyed by its fingerprint)."""
    stamp = db.get_meta(conn, MENTION_STAMP) or ""
    matcher = _MATCHERS.get(stamp)
    if matcher is None:
        if len(_MATCHERS) >= 4:
            _MATCHERS.clear()
        matcher = _MATCHERS[stamp] = links.MentionMatcher(_stored_names(conn) if stamp else {})
    return matcher


def _stored_names(conn: sqlite3.Connection) -> dict[str, str]:
    names: dict[str, str] = json.loads(db.get_meta(conn, MENTION_NAMES) or "{}")
    return names


def refresh_mentions(conn: sqlite3.Connection, registry: Registry, changed_pages: set[str]) -> None:
    """Move every mention row to the names `registry` gives now. Notes are re-scanned when they
    mention a page that lost or changed a name (or stopped being an entity), or when their text may
    hold a name that is new or now names another page; nothing else can change."""
    old, new = _stored_names(conn), links.mention_names(registry)
    changed = {name for name in old.keys() | new.keys() if old.get(name) != new.get(name)}
    targets = {old[name] for name in changed if name in old}
    live = set(new.values())
    targets |= {path for path in changed_pages if path not in live}  # never point at a non-entity
    files = _files_mentioning(conn, targets)
    added = sorted(name for name in changed if name in new)
    if added:
        files |= _files_naming(conn, added, _spellings(registry, set(added)))
    db.set_meta(conn, MENTION_NAMES, json.dumps(new, sort_keys=True, separators=(",", ":")))
    db.set_meta(conn, MENTION_STAMP, links.names_stamp(new))
    matcher = _matcher(conn)
    for file_id in sorted(files):
        _rescan_mentions(conn, file_id, matcher)


def _files_mentioning(conn: sqlite3.Connection, targets: set[str]) -> set[int]:
    found: set[int] = set()
    for part in _parts(sorted(targets)):
        marks = ",".join("?" * len(part))
        found |= {
            row[0]
            for row in conn.execute(
                f"SELECT DISTINCT file_id FROM links WHERE target_key IN ({marks}) AND kind = 'mention'", part
            )
        }
    return found


def _spellings(registry: Registry, names: set[str]) -> dict[str, set[str]]:
    """Each name as the entities write it (title, aliases, slug): the FTS tokenizer folds those the
    way it folded the notes, which the ASCII-folded name alone may not match (e.g. "ø")."""
    found: dict[str, set[str]] = {}
    for entity in registry.entities:
        for written in (entity.title, entity.slug, *entity.aliases):
            name = normalise_name(written)
            if name in names:
                found.setdefault(name, set()).add(written)
    return found


def _files_naming(conn: sqlite3.Connection, names: list[str], spellings: dict[str, set[str]]) -> set[int]:
    """Notes whose chunks may contain one of `names` (a superset: stemming, code blocks), by FTS
    phrase queries on the chunk bodies; every note when the tokenizer cannot be trusted to split and
    fold words like normalise_name does."""
    if not _fts_folds_like_names(db.get_meta(conn, "fts_tokenizer") or ""):
        return {row[0] for row in conn.execute("SELECT DISTINCT file_id FROM chunks")}
    phrases = sorted({_phrase(text) for name in names for text in (name, *spellings.get(name, ()))} - {""})
    found: set[int] = set()
    for start in range(0, len(phrases), 100):
        query = "body : (" + " OR ".join(phrases[start : start + 100]) + ")"
        found |= {
            row[0]
            for row in conn.execute(
                "SELECT DISTINCT c.file_id FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid "
                "WHERE chunks_fts MATCH ?",
                (query,),
            )
        }
    return found


def _fts_folds_like_names(tokenizer: str) -> bool:
    """unicode61 (porter wraps it by default) splits on punctuation and folds accents, as
    normalise_name does; `ascii`, `trigram` or remove_diacritics 0 do not."""
    words = tokenizer.split()
    return ("unicode61" in words or words == ["porter"]) and "remove_diacritics 0" not in " ".join(words)


def _phrase(text: str) -> str:
    words = [word for word in re.split(r"[\W_]+", text) if word]
    return '"' + " ".join(words) + '"' if words else ""


def _rescan_mentions(conn: sqlite3.Connection, file_id: int, matcher: links.MentionMatcher) -> None:
    """Recompute a note's mentions from its stored chunks (the note is not re-read from disk)."""
    row = conn.execute("SELECT path FROM files WHERE id = ?", (file_id,)).fetchone()
    if row is None:
        return
    conn.execute("DELETE FROM links WHERE file_id = ? AND kind = 'mention'", (file_id,))
    lines, body_start = _stored_lines(conn, file_id, row[0])
    _write_mentions(conn, file_id, row[0], links.code_masked(lines, body_start), matcher)


def _stored_lines(conn: sqlite3.Connection, file_id: int, path: str) -> tuple[list[str], int]:
    """A note's lines rebuilt from its chunks (which hold every non-blank line at its line number;
    blank lines come back empty) and where its body starts, found as the indexer found it."""
    lines: list[str] = []
    for start, text in conn.execute(
        "SELECT start_line, text FROM chunks WHERE file_id = ? ORDER BY ordinal", (file_id,)
    ):
        part = text.split("\n")
        lines += [""] * (start - 1 + len(part) - len(lines))
        lines[start - 1 : start - 1 + len(part)] = part
    if not lines:
        return [], 0
    doc = parse_document(path, "\n".join(lines).encode("utf-8"))  # a frontmatter-only note's chunk holds it
    return doc.lines, doc.body_start


def _parts(items: list[_T]) -> Iterator[list[_T]]:
    for start in range(0, len(items), _SQL_VARS):
        yield items[start : start + _SQL_VARS]


# -- resolving -----------------------------------------------------------------------------------
@dataclass
class Names:
    """Every note's path, file name and aliases, read from `files` (paths follow renames) and
    `link_names` (aliases), for resolving link targets."""

    path_of: dict[int, str] = field(default_factory=dict)
    id_of: dict[str, int] = field(default_factory=dict)
    key_of: dict[str, str] = field(default_factory=dict)  # path → its key
    by_key: dict[str, str] = field(default_factory=dict)
    by_stem: dict[str, list[str]] = field(default_factory=dict)  # best first: shortest path, then alphabetical
    by_alias: dict[str, list[str]] = field(default_factory=dict)
    aliases_of: dict[str, list[str]] = field(default_factory=dict)

    def resolve(self, source: str, kind: str, target: str, key: str) -> str | None:
        """The note a link in `source` points to, or None when it is broken."""
        if kind == "markdown" or links.is_explicit_path(target):
            rel = links.relative_path(source, target)
            hit = self.by_key.get(links.link_key(rel)) if rel is not None else None
            if hit is not None or links.is_explicit_path(target):
                return hit
        return self.by_key.get(key) or self._by_name(key)

    def _by_name(self, key: str) -> str | None:
        if "/" in key:  # a partial path: the notes whose path ends with it
            stem = key.rsplit("/", 1)[1]
            hits = [path for path in self.by_stem.get(stem, ()) if self.key_of[path].endswith("/" + key)]
        else:
            hits = self.by_stem.get(key, [])
        if hits:
            return hits[0]
        return next(iter(self.by_alias.get(key, ())), None)

    def why_broken(self, source: str, kind: str, target: str) -> str:
        if kind == "markdown" or links.is_explicit_path(target):
            rel = links.relative_path(source, target)
            return "points outside the corpus" if rel is None else f'no note at "{rel}"'
        return f'no note named "{target}"'


_NAMES: list[tuple[sqlite3.Connection, tuple[int, int], Names]] = []  # one entry: (connection, stamp, tables)


def names(conn: sqlite3.Connection) -> Names:
    """The name tables, rebuilt when this connection wrote or another one committed since."""
    stamp = (conn.total_changes, conn.execute("PRAGMA data_version").fetchone()[0])
    cached = _NAMES[0] if _NAMES else None  # read once: another thread may replace it
    if cached is not None and cached[0] is conn and cached[1] == stamp:
        return cached[2]
    table = _load_names(conn)
    _NAMES[:] = [(conn, stamp, table)]
    return table


def _load_names(conn: sqlite3.Connection) -> Names:
    table = Names()
    # In path order, so of `A.md` and `a.md` (one key) the alphabetically first wins.
    for file_id, path in conn.execute("SELECT id, path FROM files ORDER BY path"):
        key = links.link_key(path)
        table.path_of[file_id], table.id_of[path], table.key_of[path] = path, file_id, key
        table.by_key.setdefault(key, path)
        table.by_stem.setdefault(key.rsplit("/", 1)[-1], []).append(path)
    for file_id, name in conn.execute("SELECT file_id, name FROM link_names WHERE kind = 'alias'"):
        path = table.path_of.get(file_id)
        if path is not None:
            table.by_alias.setdefault(name, []).append(path)
            table.aliases_of.setdefault(path, []).append(name)
    for group in (table.by_stem, table.by_alias):
        for paths in group.values():
            paths.sort(key=lambda p: (len(p), p))
    return table


# -- queries -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Edge:
    source: str
    target: str
    kind: str
    line: int
    label: str | None = None
    heading: str | None = None
    resolved: bool = True

    def model(self) -> LinkEdge:
        return LinkEdge(
            source=self.source,
            target=self.target,
            kind=self.kind,
            line=self.line,
            label=self.label,
            heading=self.heading,
            resolved=self.resolved,
        )


_COLUMNS = "SELECT file_id, kind, target, target_key, heading, label, line FROM links"


def _edge(table: Names, row: sqlite3.Row | tuple[Any, ...]) -> _Edge:
    file_id, kind, target, key, heading, label, line = row
    source = table.path_of[file_id]
    if kind == "mention":
        return _Edge(source, target, kind, line, label, heading, target in table.id_of)
    resolved = table.resolve(source, kind, target, key)
    return _Edge(source, resolved or target, kind, line, label, heading, resolved is not None)


def _links_from(conn: sqlite3.Connection, table: Names, paths: list[str], mentions: bool) -> list[_Edge]:
    ids = sorted(table.id_of[path] for path in paths)
    kinds = "" if mentions else " AND kind != 'mention'"
    found: list[_Edge] = []
    for part in _parts(ids):
        rows = conn.execute(f"{_COLUMNS} WHERE file_id IN ({','.join('?' * len(part))}){kinds}", part)
        found += [_edge(table, row) for row in rows]
    return found


def _links_to(conn: sqlite3.Connection, table: Names, paths: list[str], mentions: bool) -> list[_Edge]:
    """Links resolving to `paths`: candidates by every key that can name them (path suffixes,
    aliases; relative `../` keys by their last part), each then resolved to be sure."""
    wanted = set(paths)
    keys = {suffix for path in paths for suffix in _suffixes(table.key_of[path])}
    keys |= {alias for path in paths for alias in table.aliases_of.get(path, ())}
    rows: list[tuple[Any, ...]] = []
    for part in _parts(sorted(keys)):
        marks = ",".join("?" * len(part))
        rows += conn.execute(f"{_COLUMNS} WHERE target_key IN ({marks}) AND kind != 'mention'", part).fetchall()
    stems = {table.key_of[path].rsplit("/", 1)[-1] for path in paths}
    rows += [
        row
        for row in conn.execute(f"{_COLUMNS} WHERE target_key >= '../' AND target_key < '..0'")
        if row[3].rsplit("/", 1)[-1] in stems
    ]
    if mentions:
        for part in _parts(sorted(paths)):
            marks = ",".join("?" * len(part))
            rows += conn.execute(f"{_COLUMNS} WHERE target_key IN ({marks}) AND kind = 'mention'", part).fetchall()
    edges = (_edge(table, row) for row in rows if row[0] in table.path_of)
    return [edge for edge in edges if edge.resolved and edge.target in wanted]


def _suffixes(key: str) -> Iterator[str]:
    parts = key.split("/")
    return ("/".join(parts[index:]) for index in range(len(parts)))


def _excluded(path: str, prefixes: Iterable[str]) -> bool:
    return any(path.startswith(prefix) for prefix in prefixes)


def neighbors(conn: sqlite3.Connection, rel_path: str, req: LinkRequest) -> LinkResponse:
    """Edges breadth-first from `rel_path` up to `req.depth` hops, following links out of notes, into
    them, or both. Broken links are edges to their target as written and lead nowhere. Edges touching
    an excluded prefix are dropped (and not followed); one edge per (source, target, kind), at its
    first line; nearer edges first."""
    table = names(conn)
    if rel_path not in table.id_of:
        raise NotFound(f"{rel_path} is not an indexed note", path=rel_path)
    edges: dict[tuple[str, str, str], _Edge] = {}
    seen, frontier = {rel_path}, [rel_path]
    for _ in range(req.depth):
        found: list[_Edge] = []
        if req.direction in ("out", "both"):
            found += _links_from(conn, table, frontier, req.mentions)
        if req.direction in ("in", "both"):
            found += _links_to(conn, table, frontier, req.mentions)
        frontier = []
        for edge in sorted(found, key=lambda e: (e.source, e.target, e.kind, e.line)):
            ident = (edge.source, edge.target, edge.kind)
            if (
                ident in edges
                or _excluded(edge.source, req.exclude_prefix)
                or _excluded(edge.target, req.exclude_prefix)
            ):
                continue
            edges[ident] = edge
            for node in (edge.source, edge.target) if edge.resolved else ():
                if node not in seen:
                    seen.add(node)
                    frontier.append(node)
        if not frontier:
            break
    ordered = list(edges.values())
    shown = [edge.model() for edge in ordered[: req.max_edges]]
    return LinkResponse(
        path=rel_path,
        direction=req.direction,
        depth=req.depth,
        edges=shown,
        count=len(shown),
        total=len(ordered),
        truncated=len(ordered) > len(shown),
    )


def lint(conn: sqlite3.Connection, req: LinkLintRequest) -> LinkLintResponse:
    """Broken explicit links (with the line they are on and why) and orphans: notes with no resolved
    link or mention in or out (a link to itself does not count). Notes under an excluded prefix,
    and links from or to them, are left out; lists are sorted and capped at `req.max_items`."""
    table = names(conn)
    notes = sorted(path for path in table.id_of if not _excluded(path, req.exclude_prefix))
    broken: list[BrokenLink] = []
    edges: set[tuple[str, str, str]] = set()
    for row in conn.execute(_COLUMNS):
        if row[0] not in table.path_of:
            continue
        edge = _edge(table, row)
        if _excluded(edge.source, req.exclude_prefix) or _excluded(edge.target, req.exclude_prefix):
            continue
        if edge.resolved:
            edges.add((edge.source, edge.target, edge.kind))
        elif edge.kind != "mention":
            broken.append(
                BrokenLink(
                    source=edge.source,
                    line=edge.line,
                    target=edge.target,
                    kind=edge.kind,
                    reason=table.why_broken(edge.source, edge.kind, edge.target),
                )
            )
    linked = {node for source, target, _ in edges if source != target for node in (source, target)}
    orphans = [path for path in notes if path not in linked]
    broken.sort(key=lambda b: (b.source, b.line, b.target, b.kind))
    cap = req.max_items
    return LinkLintResponse(
        files=len(notes),
        edges=len(edges),
        broken=broken[:cap],
        broken_total=len(broken),
        orphans=orphans[:cap],
        orphans_total=len(orphans),
        truncated=len(broken) > cap or len(orphans) > cap,
    )
