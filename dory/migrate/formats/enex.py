"""Evernote's export file (`.enex`) read a note at a time, safely.

An `.enex` is one XML document: `<en-export>` holding `<note>`s, each with its title, dates, tags,
`<note-attributes>`, the ENML `<content>` (as text, usually CDATA), `<resource>`s (base64 `<data>`,
`<mime>`, `<resource-attributes>`) and, from Evernote 10, `<task>`s with their `<reminder>`.
Exports reach gigabytes (attachments inline), so the file is fed to expat in chunks and each note
is handed on as soon as its `</note>` is read: memory holds one note, never the file.

Safety: expat never fetches the external DTD the file names, and any entity declaration (the
billion-laughs bomb and external entities both need one) stops the file before anything is
expanded: `EnexError("xml_entities_refused")`. Malformed XML is `EnexError("bad_xml")`, raised
after the notes read before the fault were handed on.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO
from xml.parsers import expat

CHUNK = 1 << 16


class EnexError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Resource:
    data: list[str] = field(default_factory=list)  # base64 text as read, in pieces
    mime: str = ""
    attributes: dict[str, str] = field(default_factory=dict)  # resource-attributes: file-name, source-url, …


@dataclass
class Task:
    fields: dict[str, str] = field(default_factory=dict)  # title, taskStatus, dueDate, taskFlag, …
    reminders: list[dict[str, str]] = field(default_factory=list)


@dataclass
class EnexNote:
    title: str = ""
    created: str = ""
    updated: str = ""
    tags: list[str] = field(default_factory=list)
    attributes: dict[str, str] = field(default_factory=dict)  # note-attributes, by element name
    app_data: dict[str, str] = field(default_factory=dict)  # <application-data key=…>
    content: str = ""
    resources: list[Resource] = field(default_factory=list)
    tasks: list[Task] = field(default_factory=list)


class _Collector:
    """Expat handlers that fill one EnexNote at a time; finished notes wait in `done`."""

    def __init__(self) -> None:
        self.path: list[str] = []
        self.note: EnexNote | None = None
        self.text: list[str] | None = None  # character data of the element being read
        self.key = ""  # application-data's key
        self.done: list[EnexNote] = []

    def start(self, name: str, attrs: dict[str, str]) -> None:
        self.path.append(name)
        if name == "note":
            self.note = EnexNote()
            return
        if self.note is None:
            return
        inner = self.path[self.path.index("note") + 1 :]
        if inner == ["resource"]:
            self.note.resources.append(Resource())
        elif inner == ["task"]:
            self.note.tasks.append(Task())
        elif inner == ["task", "reminder"]:
            self.note.tasks[-1].reminders.append({})
        if _wanted(inner):
            self.text = []
            self.key = attrs.get("key", "")

    def data(self, text: str) -> None:
        if self.text is not None:
            self.text.append(text)

    def end(self, name: str) -> None:
        note, text = self.note, self.text
        inner = self.path[self.path.index("note") + 1 :] if "note" in self.path else []
        self.path.pop()
        if note is None:
            return
        if name == "note":
            self.done.append(note)
            self.note = None
        elif text is not None and _wanted(inner):
            self.text = None
            _store(note, inner, text, self.key)


def _wanted(inner: list[str]) -> bool:
    """Elements whose text is kept (a resource's <recognition> index and the like are not)."""
    if len(inner) == 1:
        return inner[0] in ("title", "created", "updated", "tag", "content")
    head = inner[0]
    if head == "note-attributes":
        return len(inner) == 2
    if head == "resource":
        return inner[1:] in (["data"], ["mime"]) or (len(inner) == 3 and inner[1] == "resource-attributes")
    if head == "task":
        return (len(inner) == 2 and inner[1] != "reminder") or (len(inner) == 3 and inner[1] == "reminder")
    return False


def _store(note: EnexNote, inner: list[str], text: list[str], key: str) -> None:
    head, last = inner[0], inner[-1]
    if len(inner) == 1:
        value = "".join(text)
        if head == "tag":
            note.tags.append(value.strip())
        elif head == "content":
            note.content = value
        else:
            setattr(note, head, value.strip())
    elif head == "note-attributes":
        if last == "application-data":
            note.app_data[key] = "".join(text).strip()
        else:
            note.attributes[last] = "".join(text).strip()
    elif head == "resource":
        resource = note.resources[-1]
        if last == "data":
            resource.data = text
        elif last == "mime":
            resource.mime = "".join(text).strip()
        else:
            resource.attributes[last] = "".join(text).strip()
    elif head == "task":
        task = note.tasks[-1]
        target = task.reminders[-1] if len(inner) == 3 else task.fields
        target[last] = "".join(text).strip()


def _refuse_entities(*_: object) -> None:
    raise EnexError("xml_entities_refused", "the file declares XML entities (refused: nothing was expanded)")


def read_notes(stream: IO[bytes]) -> Iterator[EnexNote]:
    """Every note of an `.enex`, in file order. EnexError ends the file (notes before it were yielded)."""
    collector = _Collector()
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.EntityDeclHandler = _refuse_entities
    parser.StartElementHandler = collector.start
    parser.EndElementHandler = collector.end
    parser.CharacterDataHandler = collector.data
    parser.buffer_text = True
    while True:
        chunk = stream.read(CHUNK)
        try:
            parser.Parse(chunk, not chunk)
        except expat.ExpatError as exc:
            yield from collector.done
            raise EnexError(
                "bad_xml", f"not well-formed XML: {expat.ErrorString(exc.code)} at line {exc.lineno}"
            ) from exc
        yield from collector.done
        collector.done.clear()
        if not chunk:
            return
