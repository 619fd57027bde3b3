"""What Notion writes for databases: the CSV of a database, the property lines of a row's page, and
the shapes of a cell value (a relation list, a list of files, a date).

- A database CSV (often starting with a UTF-8 BOM) has the title column first, then one column per
  property; every value is text as Notion shows it.
- A row's own page starts with `# Title` and then one `Key: Value` line per non-empty property.
- A relation cell lists the related rows as `Title (URL-encoded relative path.md), Title 2 (…)`;
  a files cell lists URL-encoded relative paths separated by `, `.
- Dates are written as the workspace shows them; `April 23, 2024 → May 22, 2024` is a range.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from dataclasses import dataclass

from dory.migrate.text import decode

_RELATION = re.compile(r"\s*(.*?)\s\(([^\s()]*(?:\([^\s()]*\)[^\s()]*)*\.(?:md|csv))\)\s*(?:,|$)")
_PROPERTY = re.compile(r"^([^:\n]{1,100}?): (.*)$")
_HEADING = re.compile(r"^#\s+(.*?)\s*#*\s*$")
_DATE_FORMATS = ("%B %d, %Y %I:%M %p", "%B %d, %Y", "%b %d, %Y", "%Y/%m/%d %H:%M", "%Y/%m/%d", "%Y-%m-%d")
CREATED_COLUMNS = frozenset({"created", "date created", "created time", "created at", "created on", "creation date"})
UPDATED_COLUMNS = frozenset(
    {"last edited time", "last edited", "updated", "last updated", "updated at", "edited", "last modified"}
)


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]  # each as long as the header
    note: str = ""  # how it was decoded, when not plain UTF-8


def parse_csv(data: bytes) -> Table:
    """A database CSV. Raises NotText (binary) and csv.Error (malformed)."""
    text, how = decode(data)
    records = list(csv.reader(io.StringIO(text, newline="")))
    if not records:
        return Table([], [], how or "")
    header = _unique_columns(records[0])
    width = len(header)
    rows = [(row + [""] * width)[:width] for row in records[1:] if row]  # a blank line is no row
    return Table(header, rows, how or "")


def _unique_columns(cells: list[str]) -> list[str]:
    """Column names trimmed, an empty one named by its place, a repeated one numbered."""
    out: list[str] = []
    seen: set[str] = set()
    for n, cell in enumerate(cells, 1):
        name = " ".join(cell.split()) or f"Column {n}"
        base, k = name, 1
        while name.casefold() in seen:
            k += 1
            name = f"{base} ({k})"
        seen.add(name.casefold())
        out.append(name)
    return out


@dataclass
class PageParts:
    """A page's text taken apart: its `# Title`, the property lines under it, and the rest."""

    title: str | None
    properties: list[tuple[str, str]]
    rest: str  # the text after the heading and the property lines (the whole text without a heading)


def split_page(text: str, columns: set[str] | None) -> PageParts:
    """The heading, and — for a database row's page — the `Key: Value` lines right under it. With
    `columns`, only keys that are columns of the database count (a body line `Note: …` stays text)."""
    lines = text.split("\n")
    first = next((n for n, line in enumerate(lines) if line.strip()), None)
    heading = _HEADING.match(lines[first]) if first is not None else None
    if first is None or heading is None:
        return PageParts(None, [], text)
    start = first + 1
    while start < len(lines) and not lines[start].strip():
        start += 1
    props: list[tuple[str, str]] = []
    end = start
    while end < len(lines) and (m := _PROPERTY.match(lines[end])) and _is_column(m.group(1), columns):
        props.append((m.group(1).strip(), m.group(2).strip()))
        end += 1
    return PageParts(heading.group(1).strip() or None, props, "\n".join(lines[end:]).strip("\n"))


def _is_column(key: str, columns: set[str] | None) -> bool:
    return columns is None or " ".join(key.split()) in columns


def relation_items(value: str) -> list[tuple[str, str]] | None:
    """`A (a.md), B (b.md)` → [(label, href)], or None when the value is not such a list."""
    found: list[tuple[str, str]] = []
    pos = 0
    while pos < len(value):
        match = _RELATION.match(value, pos)
        if match is None or match.end() == pos:
            return None
        found.append((match.group(1).strip(), match.group(2)))
        pos = match.end()
    return found or None


def path_items(value: str) -> list[str]:
    """A files cell's parts: URL-encoded paths without spaces, separated by `, ` (may be none)."""
    parts = [part.strip() for part in value.split(", ")]
    if not parts or any(not part or " " in part or "://" in part for part in parts):
        return []
    return parts


def parse_date(value: str) -> str | None:
    """`YYYY-MM-DD` of a Notion date (the start of a range), or None for a format we do not know."""
    start = value.split("→", 1)[0].strip()
    if not start:
        return None
    for fmt in _DATE_FORMATS:
        try:
            return dt.datetime.strptime(start, fmt).date().isoformat()
        except ValueError:
            continue
    if re.match(r"\d{4}-\d{2}-\d{2}T", start):
        try:
            return dt.datetime.fromisoformat(start.replace("Z", "+00:00")).date().isoformat()
        except ValueError:
            return None
    return None
