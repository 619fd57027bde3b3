"""The first pass over a Notion export: what every file is, and the corpus path each thing gets.

Reads only names and the database CSVs (small), plus a row page when two rows share a title; pages
are read later, one at a time, when their item is made. Decisions:

- Pages (`.md`) keep the export's nesting with the ids gone: `Design <id>.md` and its folder of
  subpages `Design <id>/` become `Design.md` and `Design/`. Names that meet once the ids are gone
  (three `Untitled` rows) are numbered here, `Untitled (2).md`, so every link points at the right one.
- A database is its CSV (`Name <id>_all.csv` when Notion also wrote the view's `Name <id>.csv`; one
  only is read) and becomes an index note `Name.md` beside the folder `Name/` of its rows. Each row
  becomes one note; the row's own page (`Name <id>/<Title> <id>.md`) is merged into it. Rows are
  matched to pages by title; rows sharing a title by how many property lines agree with the cells.
- A CSV without a folder of row pages whose rows all are rows of another database is a linked view
  (Notion writes one inside each project of a Projects database): its index note links to those
  rows instead of copying them.
- Other files are attachments, copied beside their page. Notion's `index.html` is left out.
"""

from __future__ import annotations

import csv
import posixpath
import unicodedata
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import unquote

from dory.migrate.formats.notion_names import Name, logical_paths, split_name, strip_ids
from dory.migrate.formats.notion_tables import Table, parse_csv, split_page
from dory.migrate.model import ItemProblem, SourceFile, SourceTreeLike
from dory.migrate.names import safe_name
from dory.migrate.text import NotText, decode

PAGE_EXTS = ("md", "markdown")
_LAST = 1 << 62  # the place of a page that is not a row, when names are numbered


@dataclass
class Row:
    index: int  # 0-based, in the CSV
    title: str
    cells: list[str]
    page: SourceFile | None = None
    id: str | None = None  # the row page's id
    path: str = ""


@dataclass
class Database:
    id: str
    title: str
    file: SourceFile  # the CSV read
    logical: str
    folder: str  # logical folder of its row pages
    table: Table
    rows: list[Row]
    path: str = ""  # its index note
    page: SourceFile | None = None  # a page with the same id, merged into the index note
    view_of: Database | None = None  # a linked view: `rows` are the other database's rows
    others: list[str] = field(default_factory=list)  # logical paths of pages in its folder that are no row


@dataclass(frozen=True)
class Target:
    path: str  # proposed corpus path
    note: bool  # a note (wikilink) or an attachment (embed)


@dataclass
class Layout:
    into: str
    logical: dict[str, str] = field(default_factory=dict)  # source rel → logical path, every file kept
    paths: dict[str, str] = field(default_factory=dict)  # logical path → proposed path (pages, attachments)
    by_id: dict[str, str] = field(default_factory=dict)  # Notion id → proposed note path
    databases: dict[str, Database] = field(default_factory=dict)  # source rel of the CSV read → database
    rows_by_page: dict[str, tuple[Database, Row]] = field(default_factory=dict)  # row page rel → its row
    merged: set[str] = field(default_factory=set)  # page rels that are a database's index note
    skipped: set[str] = field(default_factory=set)  # the CSV of a pair not read, index.html
    problems: list[ItemProblem] = field(default_factory=list)

    def resolve(self, base: str, href: str) -> Target | None:
        """Where a relative link written in logical folder `base` points, or None (not in the export).
        A `.md`/`.csv` name with an id is found by its id (Notion ids are unique; relation cells are
        written relative to the database's parent page); anything else by path, from `base` up."""
        decoded = unquote(href.split("#", 1)[0].split("?", 1)[0]).replace("\\", "/")
        decoded = unicodedata.normalize("NFC", decoded)
        name = split_name(posixpath.basename(decoded))
        if name.ext in ("md", "csv") and name.id is not None and name.id in self.by_id:
            return Target(self.by_id[name.id], True)
        folder: str | None = base
        while folder is not None:
            hit = self.paths.get(posixpath.normpath(posixpath.join(folder, decoded)))
            if hit is not None:
                return Target(hit, hit.endswith(".md"))
            folder = None if not folder else posixpath.dirname(folder)
        return None


def build(tree: SourceTreeLike, into: str) -> Layout:
    layout = Layout(into)
    files = {file.rel: file for file in tree.files()}
    layout.logical = logical_paths(sorted(files))
    by_logical = {path: files[rel] for rel, path in layout.logical.items()}
    for rel in sorted(set(files) - set(layout.logical)):  # two parts of a split export holding one path
        layout.problems.append(ItemProblem(rel, "duplicate_in_export", "another file of the export has this path"))
    for rel, path in layout.logical.items():
        if path.lower() == "index.html":
            layout.skipped.add(rel)
    pages = {p: f for p, f in by_logical.items() if split_name(posixpath.basename(p)).ext in PAGE_EXTS}
    for db in _databases(by_logical, layout):
        layout.databases[db.file.rel] = db
    _match_rows(layout, pages)
    _find_views(layout)
    _name_everything(layout, by_logical)
    return layout


# -- databases -----------------------------------------------------------------------------------
def _databases(by_logical: dict[str, SourceFile], layout: Layout) -> Iterator[Database]:
    """One database per CSV id and folder, from its `_all` CSV when there is one."""
    pairs: dict[tuple[str, str], list[tuple[Name, str]]] = defaultdict(list)
    for path in by_logical:
        name = split_name(posixpath.basename(path))
        if name.ext == "csv" and name.id is not None:
            pairs[(posixpath.dirname(path), name.id)].append((name, path))
    for (folder, id_), found in sorted(pairs.items()):
        found.sort(key=lambda entry: (not entry[0].all, entry[1]))
        name, path = found[0]
        layout.skipped.update(by_logical[other].rel for _, other in found[1:])
        file = by_logical[path]
        try:
            table = parse_csv(file.read())
        except (NotText, csv.Error, OSError, ValueError) as exc:
            layout.problems.append(ItemProblem(file.rel, "bad_csv", f"database not read: {exc}"))
            layout.skipped.add(file.rel)
            continue
        rows = [Row(n, " ".join(cells[0].split()) if cells else "", cells) for n, cells in enumerate(table.rows)]
        base = posixpath.basename(path)[: -len("_all.csv") if name.all else -len(".csv")]
        yield Database(id_, name.stem or "Untitled", file, path, posixpath.join(folder, base), table, rows)


def _match_rows(layout: Layout, pages: dict[str, SourceFile]) -> None:
    """Each row to its own page in the database's folder (by title; rows sharing a title by the
    property lines that agree with their cells), and a page with the database's id to the database."""
    in_folder: dict[str, list[str]] = defaultdict(list)
    for path in sorted(pages):
        in_folder[posixpath.dirname(path)].append(path)
    for db in layout.databases.values():
        for path in in_folder.get(posixpath.dirname(db.logical), []):
            if split_name(posixpath.basename(path)).id == db.id:
                db.page = pages[path]
                layout.merged.add(pages[path].rel)
        # Pages not matched yet, in order (a dict as an ordered set), and by their folded title.
        free = {p: _folded(split_name(posixpath.basename(p)).stem) for p in in_folder.get(db.folder, [])}
        free = {p: title for p, title in free.items() if pages[p].rel not in layout.rows_by_page}
        by_title: dict[str, list[str]] = defaultdict(list)
        for path, title in free.items():
            by_title[title].append(path)
        props = _PageProperties(pages, set(db.table.header))
        for row in db.rows:
            wanted = _folded(row.title)
            candidates = [p for p in by_title.get(wanted, []) if p in free] or [
                p for p, title in free.items() if len(title) >= 20 and wanted.startswith(title)
            ]  # Notion cuts long titles short in file names
            if not candidates:
                continue
            best = props.best(db, row, candidates) if len(candidates) > 1 else candidates[0]
            del free[best]
            row.page = pages[best]
            row.id = split_name(posixpath.basename(best)).id
            layout.rows_by_page[row.page.rel] = (db, row)
        db.others = list(free)  # templates and pages Notion keeps beside the rows


def _folded(title: str) -> str:
    """A title as a file name compares: Notion's file names drop some characters and squeeze spaces."""
    return safe_name(title or "Untitled", "untitled").casefold()


class _PageProperties:
    """The property lines of row pages that share a title, each page read once."""

    def __init__(self, pages: dict[str, SourceFile], columns: set[str]) -> None:
        self.pages = pages
        self.columns = columns
        self.read: dict[str, list[tuple[str, str]] | None] = {}

    def best(self, db: Database, row: Row, candidates: list[str]) -> str:
        """The page whose property lines agree with most of the row's cells (the first on a tie)."""
        cells = {column: value.strip() for column, value in zip(db.table.header, row.cells, strict=True)}
        exact = {(column, value) for column, value in list(cells.items())[1:] if value}
        for path in candidates:  # Notion writes a line for each non-empty cell: most rows agree fully
            props = self._of(path)
            if props is not None and set(props) == exact:
                return path

        def agreement(path: str) -> int:
            props = self._of(path)
            if props is None:
                return -(1 << 30)
            return sum(1 if cells.get(key) == value else -1 for key, value in props)

        return max(enumerate(candidates), key=lambda entry: (agreement(entry[1]), -entry[0]))[1]

    def _of(self, path: str) -> list[tuple[str, str]] | None:
        if path not in self.read:
            try:
                text, _ = decode(self.pages[path].read())
                self.read[path] = split_page(text, self.columns).properties
            except (NotText, OSError, ValueError):
                self.read[path] = None
        return self.read[path]


def _find_views(layout: Layout) -> None:
    """A database none of whose rows has a page, whose titles all are rows of one other database,
    is a linked view of that database."""
    owners = [db for db in layout.databases.values() if any(row.page for row in db.rows)]
    titles = [{row.title.casefold(): row for row in reversed(owner.rows)} for owner in owners]
    for db in layout.databases.values():
        if not db.rows or any(row.page for row in db.rows):
            continue
        for owner, rows in zip(owners, titles, strict=True):
            if all(row.title.casefold() in rows for row in db.rows):
                db.view_of = owner
                db.rows = [rows[row.title.casefold()] for row in db.rows]
                break


# -- names and paths -----------------------------------------------------------------------------
def _name_everything(layout: Layout, by_logical: dict[str, SourceFile]) -> None:
    namer = _Namer()
    for path, file in by_logical.items():
        if file.rel not in layout.skipped:
            found = layout.rows_by_page.get(file.rel)
            namer.add_file(path, (found[1].title or "Untitled", found[1].index) if found else None)
    for db in layout.databases.values():
        namer.add_group(posixpath.dirname(db.logical), f"id:{db.id}", db.title)
        if db.view_of is None:
            for row in db.rows:
                if row.page is None:
                    namer.add_group(db.folder, f"row:{db.id}:{row.index}", row.title or "Untitled", row.index)
    for path, file in by_logical.items():
        if file.rel in layout.skipped or file.rel in layout.merged:
            continue
        name = split_name(posixpath.basename(path))
        if name.ext in PAGE_EXTS or (name.ext == "csv" and name.id is not None):
            target = namer.note_path(layout.into, path)
            if name.id is not None:
                layout.by_id.setdefault(name.id, target)
        else:
            target = namer.attachment_path(layout.into, path)
        layout.paths[path] = target
    for db in layout.databases.values():
        db.path = namer.note_path(layout.into, db.logical)
        layout.by_id[db.id] = db.path
        if db.page is not None:
            layout.paths[layout.logical[db.page.rel]] = db.path
        if db.view_of is not None:
            continue
        for row in db.rows:
            if row.page is not None:
                row.path = layout.paths[layout.logical[row.page.rel]]
            else:
                row.path = namer.group_path(layout.into, db.folder, f"row:{db.id}:{row.index}") + ".md"


class _Namer:
    """Output names, folder by folder: every entry of a logical folder sharing an id (a page, its
    folder, its database CSV) or, without an id, a name, is one group with one name; names that
    meet (case aside) are numbered in a stable order (database rows in the order of the CSV, before
    other pages). Attachments keep their file names."""

    def __init__(self) -> None:
        self.wanted: dict[str, dict[str, str]] = defaultdict(dict)  # folder → group → wanted name
        self.order: dict[tuple[str, str], int] = {}  # (folder, group) → a row's place in its CSV
        self.files: dict[str, set[str]] = defaultdict(set)  # folder → attachment file names
        self._names: dict[str, dict[str, str]] = {}
        self._dirs: dict[str, str] = {"": ""}

    def add_file(self, path: str, row: tuple[str, int] | None) -> None:
        """A file; `row` is (title, place) when the file is a database row's page."""
        folder, base = posixpath.split(path)
        name = split_name(base)
        if name.ext in PAGE_EXTS or (name.ext == "csv" and name.id is not None):
            key = _group(name)
            self.wanted[folder][key] = row[0] if row else self.wanted[folder].get(key) or name.stem
            if row:
                self.order[(folder, key)] = row[1]
        else:
            self.files[folder].add(base)
        while folder:
            parent, base = posixpath.split(folder)
            name = split_name(base, folder=True)
            self.wanted[parent].setdefault(_group(name), name.stem)
            folder = parent

    def add_group(self, folder: str, key: str, wanted: str, order: int | None = None) -> None:
        self.wanted[folder].setdefault(key, wanted)
        if order is not None:
            self.order[(folder, key)] = order

    def note_path(self, into: str, path: str) -> str:
        folder, base = posixpath.split(path)
        return self.group_path(into, folder, _group(split_name(base))) + ".md"

    def group_path(self, into: str, folder: str, key: str) -> str:
        return posixpath.join(into, self.out_dir(folder), self._names_in(folder)[key])

    def attachment_path(self, into: str, path: str) -> str:
        folder, base = posixpath.split(path)
        return posixpath.join(into, self.out_dir(folder), self._names_in(folder)[f"file:{base}"])

    def out_dir(self, folder: str) -> str:
        if folder not in self._dirs:
            parent, base = posixpath.split(folder)
            key = _group(split_name(base, folder=True))
            self._dirs[folder] = posixpath.join(self.out_dir(parent), self._names_in(parent)[key])
        return self._dirs[folder]

    def _names_in(self, folder: str) -> dict[str, str]:
        if folder not in self._names:
            names: dict[str, str] = {}
            taken: set[str] = set()
            groups = sorted(
                self.wanted[folder].items(),
                key=lambda kv: (safe_name(kv[1]).casefold(), self.order.get((folder, kv[0]), _LAST), kv[0]),
            )
            for key, wanted in groups:
                names[key] = _numbered(safe_name(wanted, "Untitled"), "", taken)
            for base in sorted(self.files[folder]):
                stem, ext = posixpath.splitext(base)
                names[f"file:{base}"] = _numbered(safe_name(strip_ids(stem), "file"), ext, taken)
            self._names[folder] = names
        return self._names[folder]


def _group(name: Name) -> str:
    return f"id:{name.id}" if name.id is not None else f"name:{safe_name(name.stem, 'Untitled').casefold()}"


def _numbered(stem: str, ext: str, taken: set[str]) -> str:
    """`stem` + `ext`, or `stem (n)` + `ext` for the first n that is free (case aside)."""
    name, n = stem + ext, 1
    while name.casefold() in taken or (not ext and name.casefold() + ".md" in taken):
        n += 1
        name = f"{stem} ({n}){ext}"
    taken.add(name.casefold())
    if not ext:
        taken.add(name.casefold() + ".md")
    return name
