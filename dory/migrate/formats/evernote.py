"""Evernote exports (`.enex`): each note as markdown, its attachments beside it.

An `.enex` is what Evernote writes for a notebook (or a selection of notes); a folder of them is
a set of notebooks. Each file is read a note at a time (enex.py: streaming, no entity expansion).
Decisions:
- A notebook (an `.enex` in a folder of several) becomes a subfolder named after the file; a
  single `.enex` migrated alone fills the destination folder directly. `notebook:` says which.
- The ENML body becomes markdown (htmlmd.py). `<en-media hash=…>` links to the attachment with
  that MD5; data-URL images are saved as attachments too; resources nothing links to are listed
  at the end. A resource whose base64 is broken is a `bad_attachment` problem; its note is still
  imported, saying the attachment is missing.
- `<en-crypt>` is kept as a marked block with its cipher and hint, never decrypted.
- Evernote 10 tasks take the place of their task group (`- [ ]`/`- [x]`, with due date, flag
  and reminder); a note's reminder is written at the end of the body and kept in the frontmatter.
- Tags, created/updated dates and every note attribute go to the frontmatter (Evernote's own
  `source` attribute, like `web.clip7`, as `evernote_source`; latitude/longitude as `location`).
- A note has no id in an `.enex`: its key is the file, its creation time and its title (a
  counter tells apart notes sharing all three), stable across exports of the same notebook.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import posixpath
import re
import urllib.parse
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from dory.migrate.formats import noteapp
from dory.migrate.formats.enex import EnexError, EnexNote, Task, read_notes
from dory.migrate.formats.generic import read_file
from dory.migrate.formats.htmlmd import Hooks, to_markdown
from dory.migrate.model import Item, ItemProblem, ReadContext, SourceFile, SourceTreeLike, Yielded, digest_of
from dory.migrate.names import safe_path
from dory.migrate.text import fence

_STAMP = re.compile(r"^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$")
_DATA_URL = re.compile(r"^data:([^;,]*)((?:;[^;,]*)*),(.*)$", re.DOTALL)


class EvernoteReader:
    name = "evernote"

    def detect(self, tree: SourceTreeLike) -> int:
        return 20 if any(file.suffix == "enex" for file in tree.files()) else 0

    def read(self, tree: SourceTreeLike, ctx: ReadContext) -> Iterator[Yielded]:
        names = noteapp.Names()
        for file in tree.files():
            if file.suffix == "enex":
                yield from _read_enex(file, tree, ctx, names)
            else:
                yield read_file(file, ctx.into, ctx)


def _read_enex(file: SourceFile, tree: SourceTreeLike, ctx: ReadContext, names: noteapp.Names) -> Iterator[Yielded]:
    stem = posixpath.splitext(file.rel.replace("!/", "/"))[0]
    alone = stem == tree.label and "/" not in stem  # the source is this one file
    folder = ctx.into if alone else posixpath.join(ctx.into, safe_path(stem.split("/")))
    seen: Counter[str] = Counter()
    try:
        with file.open() as stream:
            for enex_note in read_notes(stream):
                yield from _note(enex_note, file.rel, posixpath.basename(stem), folder, seen, names, ctx)
    except EnexError as exc:
        yield ItemProblem(file.rel, exc.code, str(exc))
    except (OSError, ValueError, EOFError) as exc:  # a zip member that fails its CRC, a file too large
        yield ItemProblem(file.rel, "unreadable", str(exc))


@dataclass
class _Attachments:
    """The note's attachments, by the MD5 Evernote links them with."""

    note_key: str
    note_path: str
    source: str
    names: noteapp.Names
    items: list[Item] = field(default_factory=list)
    paths: dict[str, tuple[str, str]] = field(default_factory=dict)  # md5 -> (path, name)
    linked: set[str] = field(default_factory=set)

    def add(self, data: bytes, name: str, mime: str) -> str:
        md5 = hashlib.md5(data, usedforsecurity=False).hexdigest()
        if md5 not in self.paths:
            name = noteapp.file_name(name, md5, mime)
            path = self.names.attachment(self.note_path, name)
            self.paths[md5] = (path, name)
            self.items.append(noteapp.attachment(f"{self.note_key}/{md5}", self.source, path, data))
        return md5

    def link(self, md5: str) -> str:
        self.linked.add(md5)
        path, name = self.paths[md5]
        return noteapp.link(path, name)


def _note(
    enex_note: EnexNote,
    rel: str,
    notebook: str,
    folder: str,
    seen: Counter[str],
    names: noteapp.Names,
    ctx: ReadContext,
) -> Iterator[Yielded]:
    title = " ".join(enex_note.title.split()) or "Untitled"
    ident = f"{enex_note.created}:{title}"
    seen[ident] += 1
    key = f"evernote:{rel}#{ident}" + (f"~{seen[ident]}" if seen[ident] > 1 else "")
    source = f"{rel}#{title}"
    path = names.note(folder, title)
    files = _Attachments(key, path, source, names)
    problems = list(_resources(enex_note, files, source))
    tasks_left = list(enex_note.tasks)
    crypts: list[int] = []

    def media(attrs: dict[str, str]) -> str:
        md5 = attrs.get("hash", "").strip().lower()
        if md5 in files.paths:
            return files.link(md5)
        return f"(attachment not in the export: {attrs.get('type') or md5 or 'unknown'})"

    def data_image(src: str, alt: str) -> str:
        decoded = _data_url(src)
        if decoded is None:
            return f"(an inline image that could not be read{': ' + alt if alt else ''})"
        return files.link(files.add(decoded[0], "", decoded[1]))

    def crypt(attrs: dict[str, str], text: str) -> str:
        crypts.append(1)
        return _crypt_block(attrs, text)

    def task_group(group: str) -> str:
        mine = [t for t in tasks_left if t.fields.get("taskGroupNoteLevelID") == group]
        for task in mine:
            tasks_left.remove(task)
        return "\n".join(_task_line(t) for t in mine)

    body = to_markdown(enex_note.content, Hooks(media, data_image, crypt, task_group))
    body += _tail(files, tasks_left, enex_note.attributes)
    fm = _frontmatter(enex_note, title, rel, notebook, ctx) | {"encrypted_blocks": len(crypts) or None}
    yield noteapp.note_item(key, source, _digest(enex_note), path, fm, body)
    yield from files.items
    yield from problems


def _resources(enex_note: EnexNote, files: _Attachments, source: str) -> Iterator[ItemProblem]:
    for n, resource in enumerate(enex_note.resources, 1):
        name = resource.attributes.get("file-name", "")
        try:
            data = base64.b64decode("".join("".join(resource.data).split()), validate=True)
        except (binascii.Error, ValueError) as exc:
            what = name or f"attachment {n} ({resource.mime or 'unknown type'})"
            yield ItemProblem(source, "bad_attachment", f"{what}: not valid base64 ({exc}); left out")
            continue
        files.add(data, name, resource.mime)


def _tail(files: _Attachments, tasks: list[Task], attributes: dict[str, str]) -> str:
    """What the body does not show by itself: unlinked attachments, tasks without a place, the reminder."""
    parts: list[str] = []
    unlinked = [md5 for md5 in files.paths if md5 not in files.linked]
    if unlinked:
        parts.append("Attachments:\n\n" + "\n".join(f"- {files.link(md5)}" for md5 in unlinked))
    if tasks:
        parts.append("Tasks:\n\n" + "\n".join(_task_line(task) for task in tasks))
    reminder = _when(attributes.get("reminder-time", ""))
    if reminder:
        done = _when(attributes.get("reminder-done-time", ""))
        parts.append(f"Reminder: {reminder}" + (f" (done {done})" if done else ""))
    return "".join("\n\n" + part for part in parts)


def _task_line(task: Task) -> str:
    f = task.fields
    box = "x" if f.get("taskStatus", "").lower() == "completed" else " "
    extras = [f"due {_when(f['dueDate'])}"] if f.get("dueDate") else []
    extras += ["flagged"] if f.get("taskFlag", "").lower() == "true" else []
    extras += [f"reminder {_when(r.get('reminderDate', ''))}" for r in task.reminders if r.get("reminderDate")]
    title = " ".join(f.get("title", "").split()) or "(untitled task)"
    return f"- [{box}] {title}" + (f" ({', '.join(extras)})" if extras else "")


def _crypt_block(attrs: dict[str, str], text: str) -> str:
    how = ", ".join(
        part
        for part in (
            f"cipher {attrs['cipher']}" if attrs.get("cipher") else "",
            f"{attrs['length']}-bit key" if attrs.get("length") else "",
            f"hint: {' '.join(attrs['hint'].split())}" if attrs.get("hint") else "",
        )
        if part
    )
    head = "**Encrypted text** (Evernote" + (f"; {how}" if how else "") + "): kept as exported, not decrypted."
    return head + "\n\n" + fence("".join(text.split()), "evernote-encrypted")


def _data_url(src: str) -> tuple[bytes, str] | None:
    """(bytes, mime) of a `data:` URL, None when it is malformed."""
    match = _DATA_URL.match(src.strip())
    if match is None:
        return None
    mime, params, payload = match.group(1) or "text/plain", match.group(2), match.group(3)
    try:
        if ";base64" in params.lower():
            return base64.b64decode("".join(urllib.parse.unquote(payload).split()), validate=True), mime
        return urllib.parse.unquote_to_bytes(payload), mime
    except (binascii.Error, ValueError):
        return None


def _frontmatter(enex_note: EnexNote, title: str, rel: str, notebook: str, ctx: ReadContext) -> dict[str, Any]:
    created, updated = _day(enex_note.created), _day(enex_note.updated)
    fm = noteapp.base_frontmatter(title, "evernote", rel, created, updated, ctx.now)
    fm["notebook"] = notebook
    fm["tags"] = [tag for tag in dict.fromkeys(enex_note.tags) if tag]
    attrs = dict(enex_note.attributes)
    lat, lon = _float(attrs.pop("latitude", "")), _float(attrs.pop("longitude", ""))
    fm["location"] = [lat, lon] if lat is not None and lon is not None else None
    fm["altitude"] = _float(attrs.pop("altitude", ""))
    if attrs.get("reminder-order") == "0":  # Evernote's "no reminder"
        del attrs["reminder-order"]
    for name, value in attrs.items():
        field_name = "evernote_source" if name == "source" else name.replace("-", "_")
        fm.setdefault(field_name, _when(value) or value)
    fm["evernote_app_data"] = dict(sorted(enex_note.app_data.items())) or None
    return fm


def _digest(enex_note: EnexNote) -> str:
    meta = {
        "title": enex_note.title,
        "created": enex_note.created,
        "updated": enex_note.updated,
        "tags": enex_note.tags,
        "attributes": enex_note.attributes,
        "app_data": enex_note.app_data,
        "tasks": [[t.fields, t.reminders] for t in enex_note.tasks],
        "resources": [[r.mime, r.attributes] for r in enex_note.resources],
    }
    data = ["".join(r.data) for r in enex_note.resources]
    return digest_of(json.dumps(meta, sort_keys=True), enex_note.content, *data)


def _day(stamp: str) -> str | None:
    when = _when(stamp)
    return when[:10] if when else None


def _when(stamp: str) -> str:
    """Evernote's `20240129T203941Z` as ISO (`2024-01-29T20:39:41Z`); other ISO text as it is."""
    match = _STAMP.match(stamp.strip())
    if match:
        y, mo, d, h, mi, s = match.groups()
        return f"{y}-{mo}-{d}T{h}:{mi}:{s}Z"
    return stamp.strip() if re.match(r"^\d{4}-\d{2}-\d{2}", stamp.strip()) else ""


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None
