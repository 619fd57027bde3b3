"""Names in a Notion "Markdown & CSV" export: the 32-hex ids Notion appends, and where a file sits.

Notion names every page, database and their folders `<Title> <id>` (`Design 104d4deadd2c803a935ef9917447529e.md`,
`Design 104d4dea…/`, `Tasks 76aaf8a4….csv`, `Tasks 76aaf8a4…_all.csv`); the id is 32 hex digits (time-ordered
ids like `104d4deadd2c80…` and random v4-like ones alike), sometimes written as a dashed UUID. A page, its
folder of subpages and a database with the same id are one Notion block.

Where a file sits in the export (its *logical* path) ignores how the export was packed: a zip inside
the source is transparent (its members sit where the zip sits, so `Export-…-Part-1.zip` and `-Part-2.zip`
merge into one tree), Notion's `Export-<uuid>/` top folder goes, and so does one wrapping folder
without an id that holds everything (`design/` when a user zipped the export folder again).
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass

NESTED = "!/"  # as source.NESTED: joins a zip's path and a member's path inside it
_HEX_ID = r"[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_ID_AT_END = re.compile(rf"^(.*?)\s*\b({_HEX_ID})$", re.IGNORECASE)
_ANY_ID = re.compile(rf"\s*(?<![0-9a-f-])(?:{_HEX_ID})(?![0-9a-f-])", re.IGNORECASE)
_EXPORT_FOLDER = re.compile(r"^Export-[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}(?:-Part-\d+)?$", re.IGNORECASE)


@dataclass(frozen=True)
class Name:
    """A file or folder name taken apart: `Tasks 76aa…_all.csv` → stem `Tasks`, id, ext `csv`, all."""

    stem: str  # the title part, id removed (may be empty)
    id: str | None  # 32 lowercase hex digits
    ext: str  # lowercase, no dot; "" for folders and files without one
    all: bool = False  # Notion's `_all.csv`: every row of the database, not only the exported view


def split_name(name: str, folder: bool = False) -> Name:
    base, ext = (name, "") if folder else _split_ext(name)
    is_all = ext == "csv" and base.endswith("_all") and _ID_AT_END.match(base[:-4]) is not None
    if is_all:
        base = base[:-4]
    match = _ID_AT_END.match(base)
    if match is None:
        return Name(base.strip(), None, ext, is_all)
    return Name(match.group(1).strip(), match.group(2).replace("-", "").lower(), ext, is_all)


def _split_ext(name: str) -> tuple[str, str]:
    stem, ext = posixpath.splitext(name)
    if not stem:  # `.hidden`
        return name, ""
    return stem, ext[1:].lower()


def strip_ids(text: str) -> str:
    """`Projects 58b8…` → `Projects`, anywhere in a text (labels, the export's own name)."""
    return " ".join(_ANY_ID.sub("", text).split())


def find_id(text: str) -> str | None:
    """The last Notion id in a text (a notion.so URL), as 32 lowercase hex digits."""
    found = [m.group(0).strip() for m in _ANY_ID.finditer(text)]
    return found[-1].replace("-", "").lower() if found else None


def export_name(label: str) -> str:
    """The export's name for the default folder: ids gone; `Export-<uuid>` names nothing, so 'notion'."""
    if _EXPORT_FOLDER.match(label):
        return "notion"
    return strip_ids(label) or "notion"


def logical_paths(rels: list[str]) -> dict[str, str]:
    """Each source path → its path in the export (see the module docstring); first wins on a tie."""
    # NFC: a zip made on a Mac stores names decomposed, while links in the pages are composed.
    flat = {rel: unicodedata.normalize("NFC", _unzipped(rel)) for rel in rels}
    flat = {rel: path for rel, path in flat.items() if path}
    while True:
        tops = Counter(path.split("/", 1)[0] if "/" in path else "" for path in flat.values())
        if len(tops) != 1:
            break
        top = next(iter(tops))
        if not top or (split_name(top, folder=True).id is not None and not _EXPORT_FOLDER.match(top)):
            break
        flat = {rel: path.split("/", 1)[1] for rel, path in flat.items()}
    flat = {rel: _without_export_folder(path) for rel, path in flat.items()}
    seen: set[str] = set()
    out: dict[str, str] = {}
    for rel in sorted(flat):
        if flat[rel] not in seen:
            seen.add(flat[rel])
            out[rel] = flat[rel]
    return out


def _unzipped(rel: str) -> str:
    """`a/export.zip!/b/c.md` → `a/b/c.md`: a zip's members sit where the zip sits."""
    parts = rel.split(NESTED)
    path = ""
    for n, part in enumerate(parts):
        if n < len(parts) - 1:  # a zip's own path: keep its folder, drop its name
            part = posixpath.dirname(part)
        path = posixpath.join(path, part) if part else path
    return path


def _without_export_folder(path: str) -> str:
    head, _, rest = path.partition("/")
    return rest if rest and _EXPORT_FOLDER.match(head) else path
