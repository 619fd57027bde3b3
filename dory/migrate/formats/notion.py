"""Notion "Markdown & CSV" exports: a zip (a zip inside a zip for large exports, `__MACOSX/` noise
when re-zipped on a Mac) or the unpacked folder. Pages are markdown files and databases CSVs, every
name ending in a 32-hex id (see notion_names.py; where each thing goes: notion_layout.py).

What each becomes:
- A page: a note at its path with the ids gone (`Design/Product Design RFC.md`), subpages in the
  folder named like the page. Frontmatter: `title` (the page's `# heading`, else its name),
  `source_kind: imported`, `source: notion`, `notion_id`. Links are rewritten (notion_links.py).
- A database: an index note (`Tasks.md`: its columns and a list of its rows, after the body of
  the page with the same id when Notion wrote one), and one note per row in the folder beside it
  (`Tasks/Write website copy.md`), the row's own page merged in: the columns as frontmatter (keys
  as Notion names them; one that is a key Dory reads itself, like `title`, gets ` (notion)`), a
  relation column as the related titles in frontmatter and wikilinks in the body, a files column as
  embeds in the body, `created`/`updated` from Notion's created and last-edited columns.
- Anything else (images, files): an attachment copied beside its page, links pointing at it.

Keys are stable across runs: `notion:<id>` for pages, databases and rows with a page,
`notion:<database id>#<row number>` for a row without one, `notion:file:<path>` for attachments.
Digests are of the source (the page, the row's cells), so a rerun of the same export creates nothing.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from dory.migrate.formats.notion_layout import PAGE_EXTS, Database, Layout, Row, build
from dory.migrate.formats.notion_links import DANGLING, Rewritten, clean_label, rewrite
from dory.migrate.formats.notion_names import export_name, split_name
from dory.migrate.formats.notion_tables import (
    CREATED_COLUMNS,
    UPDATED_COLUMNS,
    parse_date,
    path_items,
    relation_items,
    split_page,
)
from dory.migrate.model import (
    Item,
    ItemProblem,
    Output,
    ReadContext,
    SourceFile,
    SourceTreeLike,
    Yielded,
    digest_of,
    wikilink,
)
from dory.migrate.text import NotText, decode, note

# Keys this reader or Dory reads itself: a Notion column named exactly so is renamed, never mixed in.
OWN_KEYS = frozenset(
    {"title", "type", "status", "canonical", "source_kind", "source", "aliases", "tags", "created", "updated"}
    | {"pinned", "superseded_by", "visibility", "sensitivity", "notion_id", "notion_database", "notion_columns"}
)


class NotionReader:
    name = "notion"
    folder = "knowledge"

    def detect(self, tree: SourceTreeLike) -> int:
        """Most `.md`/`.csv` names end in a Notion id: clearly an export (20). Only some: a folder
        holding an export among other notes, ours over generic's but any specific reader's first (2)."""
        named = total = 0
        for file in tree.files():
            name = split_name(file.name)
            if name.ext in ("md", "csv"):
                total += 1
                named += name.id is not None
        if named == 0:
            return 0
        return 20 if named * 2 >= total else 2

    def source_name(self, tree: SourceTreeLike) -> str:
        return export_name(tree.label)

    def read(self, tree: SourceTreeLike, ctx: ReadContext) -> Iterator[Yielded]:
        layout = build(tree, ctx.into)
        yield from layout.problems
        for file in tree.files():
            if file.rel not in layout.logical or file.rel in layout.skipped:
                continue
            if file.rel in layout.databases:
                yield from _database(layout.databases[file.rel], layout)
            elif file.rel in layout.rows_by_page or file.rel in layout.merged:
                continue  # made with its database
            elif split_name(file.name).ext in PAGE_EXTS:
                yield _page(file, layout)
            else:
                yield _attachment(file, layout)


# -- pages ---------------------------------------------------------------------------------------
def _read_text(file: SourceFile) -> tuple[bytes, str] | ItemProblem:
    try:
        data = file.read()
        return data, decode(data)[0]
    except NotText as exc:
        return ItemProblem(file.rel, "bad_encoding", str(exc))
    except (OSError, ValueError) as exc:
        return ItemProblem(file.rel, "unreadable", str(exc))


def _links(text: str, base: str, layout: Layout) -> Rewritten:
    return rewrite(text, lambda href: layout.resolve(base, href), layout.by_id.get)


def _page(file: SourceFile, layout: Layout) -> Yielded:
    read = _read_text(file)
    if isinstance(read, ItemProblem):
        return read
    data, text = read
    logical = layout.logical[file.rel]
    name = split_name(posixpath.basename(logical))
    links = _links(text, posixpath.dirname(logical), layout)
    fm = _own_frontmatter(split_page(text, set()).title or name.stem or "Untitled", name.id)
    out = Output(layout.paths[logical], note(fm, links.text), "note")
    key = f"notion:{name.id}" if name.id else f"notion:file:{logical}"
    return Item(key, "note", file.rel, digest_of(data), [out], note=_dangling_note(links))


def _own_frontmatter(title: str, notion_id: str | None) -> dict[str, Any]:
    return {"title": title, "source_kind": "imported", "source": "notion", "notion_id": notion_id}


def _dangling_note(links: Rewritten) -> str:
    if not links.dangling:
        return ""
    return f"{len(links.dangling)} links not in the export, kept as text: " + "; ".join(links.dangling[:5])


def _attachment(file: SourceFile, layout: Layout) -> Yielded:
    try:
        data = file.read()
    except (OSError, ValueError) as exc:
        return ItemProblem(file.rel, "unreadable", str(exc))
    logical = layout.logical[file.rel]
    out = Output(layout.paths[logical], data, "attachment")
    return Item(f"notion:file:{logical}", "attachment", file.rel, digest_of(data), [out])


# -- databases -----------------------------------------------------------------------------------
def _database(db: Database, layout: Layout) -> Iterator[Yielded]:
    yield _index(db, layout)
    if db.view_of is None:
        for row in db.rows:
            yield from _row(db, row, layout)


def _index(db: Database, layout: Layout) -> Yielded:
    """The database's own note: the page with its id (when there is one), its columns, its rows."""
    title, note_text = db.title, ""
    parts: list[str] = []
    digests = [_table_digest(db)]
    if db.page is not None:
        read = _read_text(db.page)
        if isinstance(read, ItemProblem):
            return read
        links = _links(read[1], posixpath.dirname(db.logical), layout)
        title = split_page(read[1], set()).title or title
        parts.append(links.text.strip("\n"))
        digests.append(digest_of(read[0]))
        note_text = _dangling_note(links)
    else:
        parts.append(f"# {title}")
    if db.view_of is not None:
        parts.append(f"A view of {wikilink(db.view_of.path, db.view_of.title)}, {len(db.rows)} rows:")
    else:
        parts.append(f"{len(db.rows)} rows; columns: {', '.join(db.table.header)}.")
    parts.append("\n".join(f"- {wikilink(row.path, row.title or 'Untitled')}" for row in db.rows))
    if db.others:
        parts.append("Other pages in its folder (templates, pages that are not rows):")
        parts.append("\n".join(f"- {wikilink(layout.paths[path], _stem(path))}" for path in db.others))
    fm = _own_frontmatter(title, db.id) | {"notion_columns": db.table.header}
    out = Output(db.path, note(fm, "\n\n".join(p for p in parts if p)), "note")
    return Item(f"notion:{db.id}", "database", db.file.rel, digest_of(*digests), [out], note=note_text)


def _stem(path: str) -> str:
    return split_name(posixpath.basename(path)).stem or "Untitled"


def _table_digest(db: Database) -> str:
    return digest_of("\x1f".join(db.table.header), *("\x1f".join(cells) for cells in db.table.rows))


def _row(db: Database, row: Row, layout: Layout) -> Iterator[Yielded]:
    """One row: its cells as frontmatter and links, its page's text below."""
    rest, page_data, source = "", b"", f"{db.file.rel}#{row.index + 1}"
    if row.page is not None:
        read = _read_text(row.page)
        if isinstance(read, ItemProblem):
            yield ItemProblem(
                read.source, read.code, f"row page not read, the row is kept from the CSV: {read.message}"
            )
        else:
            page_data, source = read[0], row.page.rel
            rest = split_page(read[1], set(db.table.header)).rest
    title = row.title or "Untitled"
    base = posixpath.dirname(db.logical)
    dates: dict[str, str] = {}
    props: dict[str, Any] = {}
    lines: list[str] = []
    for column, value in zip(db.table.header[1:], row.cells[1:], strict=True):
        _cell(Cell(column, value.strip(), base), layout, dates, props, lines)
    fm = _own_frontmatter(title, row.id) | dates | {"notion_database": db.title} | props
    links = _links(rest, posixpath.dirname(layout.logical[row.page.rel]) if row.page else base, layout)
    body = "\n\n".join(part for part in (f"# {title}", "\n".join(lines), links.text.strip("\n")) if part)
    out = Output(row.path, note(fm, body), "note")
    key = f"notion:{row.id}" if row.id else f"notion:{db.id}#{row.index + 1}"
    digest = digest_of("\x1f".join(db.table.header), "\x1f".join(row.cells), page_data)
    yield Item(key, "row", source, digest, [out], note=_dangling_note(links))


@dataclass(frozen=True)
class Cell:
    column: str
    value: str
    base: str  # the logical folder its paths are read from


def _cell(cell: Cell, layout: Layout, dates: dict[str, str], props: dict[str, Any], lines: list[str]) -> None:
    """One cell into the row's dates and properties (frontmatter) and body lines (its links);
    empty cells are left out."""
    column, value = cell.column, cell.value
    if not value:
        return
    key = f"{column} (notion)" if column in OWN_KEYS else column
    if column.casefold() in CREATED_COLUMNS and (day := parse_date(value)):
        dates.setdefault("created", day)
    if column.casefold() in UPDATED_COLUMNS and (day := parse_date(value)):
        dates.setdefault("updated", day)
    related = relation_items(value)
    if related is not None:
        props[key] = [clean_label(label, href) for label, href in related]
        shown = [_related(label, href, cell.base, layout) for label, href in related]
        lines.append(f"- **{column}**: " + ", ".join(shown))
        return
    files = [layout.resolve(cell.base, part) for part in path_items(value)]
    attached = [target for target in files if target is not None and not target.note]
    if files and len(attached) == len(files):
        props[key] = [posixpath.basename(target.path) for target in attached]
        lines.append(f"- **{column}**: " + " ".join("!" + wikilink(target.path) for target in attached))
        return
    props[key] = value


def _related(label: str, href: str, base: str, layout: Layout) -> str:
    target = layout.resolve(base, href)
    shown = clean_label(label, href)
    return wikilink(target.path, shown) if target is not None else f"{shown} {DANGLING}"
