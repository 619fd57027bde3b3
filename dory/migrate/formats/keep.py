"""Google Keep, as Google Takeout exports it: `Takeout/Keep/<note>.json` (+ `.html`, attachments).

Each note's JSON holds `title`, `textContent` or a `listContent` checklist, `labels`, the flags
`isPinned`/`isArchived`/`isTrashed`, `color`, `annotations` (links Keep attached), `sharees`,
`attachments` (by `filePath`, beside the JSON) and microsecond timestamps
(`createdTimestampUsec`, `userEditedTimestampUsec`). Decisions:
- The title is Keep's; an untitled note takes its first line of text (or first checklist item),
  else the JSON's file name (Takeout names untitled notes by their time). The file name comes
  from the title made safe, so odd characters in Takeout's names never reach a path.
- Checklist items become `- [ ]`/`- [x]`; labels become tags (their text kept as written).
- Pinned and archived notes stay with the others (`pinned: true`, `archived: true`); trashed
  notes go to `Trash/` marked `trashed: true`, `status: superseded` (noteapp.py).
- An attachment found in the export is copied beside the note (Takeout sometimes changes a
  `.jpeg` into `.jpg`: the same name with another extension is accepted); one that is missing
  is named in the note, so nothing disappears without a word.
- The `.html` Takeout writes beside each JSON is the same note: skipped. An `.html` with no
  JSON (older Takeouts) is read as HTML. Other files go to the generic reader.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterator
from typing import Any

from dory.migrate.formats import noteapp
from dory.migrate.formats.generic import read_file
from dory.migrate.formats.htmlmd import to_markdown
from dory.migrate.model import Item, ItemProblem, ReadContext, SourceFile, SourceTreeLike, Yielded, digest_of
from dory.migrate.text import NotText, decode

MAX_NOTE_BYTES = 20_000_000
TITLE_CHARS = 80
MARKERS = ("createdTimestampUsec", "userEditedTimestampUsec", "textContent", "listContent")


class KeepReader:
    name = "keep"

    def detect(self, tree: SourceTreeLike) -> int:
        jsons = [file for file in tree.files() if file.suffix == "json"]
        if any(_in_keep_folder(file.rel) for file in jsons):
            return 25
        return 25 if any(_looks_like_keep(file) for file in jsons[:5]) else 0

    def read(self, tree: SourceTreeLike, ctx: ReadContext) -> Iterator[Yielded]:
        names = noteapp.Names()
        files = list(tree.files())
        jsons = {f.rel[:-5] for f in files if f.suffix == "json" and _in_keep_folder(f.rel)}
        owned: set[str] = set()  # attachments a note took
        by_stem = _stems(files)
        notes = [f for f in files if f.suffix == "json" and _is_note_file(f, jsons)]
        for file in notes:
            yield from _note(file, tree, by_stem, owned, names, ctx)
        owned.update(f.rel for f in notes)
        for file in files:
            if file.rel in owned:
                continue
            if file.suffix == "html" and file.rel[:-5] in jsons:
                continue  # Takeout's HTML copy of a note read from its JSON
            if file.suffix == "html" and _in_keep_folder(file.rel):
                yield _html_note(file, names, ctx)
            else:
                yield read_file(file, ctx.into, ctx)


def _in_keep_folder(rel: str) -> bool:
    return "Keep" in rel.replace("!/", "/").split("/")[:-1]


def _looks_like_keep(file: SourceFile) -> bool:
    if file.size > MAX_NOTE_BYTES:
        return False
    try:
        head = file.read()[:4096]
    except (OSError, ValueError):
        return False
    return head.lstrip().startswith(b"{") and any(marker.encode() in head for marker in MARKERS)


def _is_note_file(file: SourceFile, jsons: set[str]) -> bool:
    return file.rel[:-5] in jsons or _looks_like_keep(file)


def _stems(files: list[SourceFile]) -> dict[str, SourceFile]:
    """Files by folder and name without extension, to find an attachment Takeout renamed."""
    return {posixpath.splitext(f.rel)[0]: f for f in files if f.suffix not in ("json", "html")}


def _load(file: SourceFile) -> dict[str, Any] | ItemProblem:
    if file.size > MAX_NOTE_BYTES:
        return ItemProblem(file.rel, "file_too_large", f"{file.size} bytes (limit {MAX_NOTE_BYTES})")
    try:
        text, _ = decode(file.read())
        data = json.loads(text)
    except (OSError, ValueError, NotText, RecursionError) as exc:
        return ItemProblem(file.rel, "bad_json", f"not valid JSON: {str(exc).splitlines()[0][:200]}")
    if not isinstance(data, dict):
        return ItemProblem(file.rel, "not_a_note", f"a Keep note is a JSON object, this is a {type(data).__name__}")
    if not any(key in data for key in (*MARKERS, "title")):
        return ItemProblem(file.rel, "not_a_note", "a JSON object without a Keep note's fields")
    return data


def _note(
    file: SourceFile,
    tree: SourceTreeLike,
    by_stem: dict[str, SourceFile],
    owned: set[str],
    names: noteapp.Names,
    ctx: ReadContext,
) -> Iterator[Yielded]:
    data = _load(file)
    if isinstance(data, ItemProblem):
        yield data
        return
    title = _title(data, file)
    trashed = data.get("isTrashed") is True
    path = names.note(posixpath.join(ctx.into, noteapp.TRASH) if trashed else ctx.into, title)
    key = f"keep:{file.rel}"
    attachments: list[Item] = []
    lines = _body(data)
    missing: list[str] = []
    for entry in _list(data.get("attachments")):
        name = _text(entry.get("filePath")).strip() if isinstance(entry, dict) else ""
        found = _attachment_file(file, name, tree, by_stem)
        if found is None:
            mime = _text(entry.get("mimetype")) if isinstance(entry, dict) else ""
            missing.append(name or "(unnamed)")
            lines.append(f"Attachment not in the export: `{name or '(unnamed)'}`" + (f" ({mime})" if mime else ""))
            continue
        try:
            blob = found.read()
        except (OSError, ValueError) as exc:
            yield ItemProblem(found.rel, "unreadable", str(exc))
            continue
        owned.add(found.rel)
        target = names.attachment(path, found.name)
        attachments.append(noteapp.attachment(f"{key}/{found.name}", found.rel, target, blob))
        lines.append(noteapp.link(target, found.name))
    fm = _frontmatter(data, title, file.rel, ctx)
    why = f"attachments not in the export: {', '.join(missing)}" if missing else ""
    digest = digest_of(json.dumps(data, sort_keys=True, default=str))
    yield noteapp.note_item(key, file.rel, digest, path, fm, "\n\n".join(lines), why)
    yield from attachments


def _title(data: dict[str, Any], file: SourceFile) -> str:
    title = " ".join(_text(data.get("title")).split())
    if title:
        return title
    first = _text(data.get("textContent")).strip().split("\n", 1)[0].strip()
    if not first:
        items = [_text(i.get("text")) for i in _list(data.get("listContent")) if isinstance(i, dict)]
        first = next((text.strip().split("\n", 1)[0] for text in items if text.strip()), "")
    first = " ".join(first.split())
    if len(first) > TITLE_CHARS:
        first = first[:TITLE_CHARS].rsplit(" ", 1)[0] + "…"
    return first or posixpath.splitext(file.name)[0]


def _body(data: dict[str, Any]) -> list[str]:
    parts: list[str] = []
    text = _text(data.get("textContent")).strip("\n")
    if text.strip():
        parts.append(text)
    checklist = [_check(item) for item in _list(data.get("listContent")) if isinstance(item, dict)]
    if checklist:
        parts.append("\n".join(checklist))
    links = [_annotation(a) for a in _list(data.get("annotations")) if isinstance(a, dict) and _text(a.get("url"))]
    if links:
        parts.append("Links:\n\n" + "\n".join(links))
    return parts


def _check(item: dict[str, Any]) -> str:
    box = "x" if item.get("isChecked") is True else " "
    lines = _text(item.get("text")).strip().split("\n")
    return f"- [{box}] {lines[0].strip()}" + "".join(f"\n  {line.strip()}" for line in lines[1:])


def _annotation(a: dict[str, Any]) -> str:
    url, title = _text(a["url"]).strip(), " ".join(_text(a.get("title")).split())
    label = title.replace("[", "(").replace("]", ")")
    return f"- [{label}](<{url}>)" if label else f"- <{url}>"


def _attachment_file(
    note_file: SourceFile, name: str, tree: SourceTreeLike, by_stem: dict[str, SourceFile]
) -> SourceFile | None:
    if not name or name.startswith("/") or ".." in name.split("/"):
        return None
    rel = posixpath.join(posixpath.dirname(note_file.rel), name)
    return tree.get(rel) or by_stem.get(posixpath.splitext(rel)[0])


def _frontmatter(data: dict[str, Any], title: str, rel: str, ctx: ReadContext) -> dict[str, Any]:
    created = noteapp.day_of_usec(data.get("createdTimestampUsec"))
    updated = noteapp.day_of_usec(data.get("userEditedTimestampUsec"))
    fm = noteapp.base_frontmatter(title, "keep", rel, created or updated, updated, ctx.now)
    labels = [_text(label.get("name")).strip() for label in _list(data.get("labels")) if isinstance(label, dict)]
    fm["tags"] = [label for label in dict.fromkeys(labels) if label]
    fm["pinned"] = True if data.get("isPinned") is True else None
    fm["archived"] = True if data.get("isArchived") is True else None
    color = _text(data.get("color")).strip().lower()
    fm["color"] = color if color and color != "default" else None
    sharees = [
        _text(s.get("email")) for s in _list(data.get("sharees")) if isinstance(s, dict) and _text(s.get("email"))
    ]
    fm["shared_with"] = sharees or None
    return noteapp.trashed(fm) if data.get("isTrashed") is True else fm


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: object) -> str:
    """A field that should be text: anything else (a list where a title goes) counts as missing."""
    return value if isinstance(value, str) else ""


def _html_note(file: SourceFile, names: noteapp.Names, ctx: ReadContext) -> Yielded:
    """A Keep note Takeout wrote only as HTML: its text, titled by the file name."""
    try:
        data = file.read()
        html, _ = decode(data)
    except (OSError, ValueError, NotText) as exc:
        return ItemProblem(file.rel, "unreadable", str(exc))
    title = posixpath.splitext(file.name)[0]
    path = names.note(ctx.into, title)
    fm = noteapp.base_frontmatter(title, "keep", file.rel, None, None, ctx.now)
    return noteapp.note_item(f"keep:{file.rel}", file.rel, digest_of(data), path, fm, to_markdown(html))
