"""Small sources for the `dory migrate SRC` examples of the docs, made where an example names one.

A reader runs `dory migrate ~/Obsidian/Vault` on their own vault; the example runs
(support/example_runner.py) make a small one of the kind the example shows, at the path it names,
when nothing is there yet. The kind comes from `--from FORMAT` when the example gives it, else from
the path (`…notion….zip` or `Export-….zip`, `conversations.json`, `…logseq…`, `….enex`,
`Takeout/Keep`, `….bear2bk`, `memory.jsonl`, `mem0….json`, `…obsidian…` or `…vault…`); anything
else is a folder of markdown notes (a zip of them for a `.zip`). Each is a few items in the layout
the tool exports, enough for the reader of that format to recognise it.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

NOTES = {
    "Home.md": "# Home\n\nProjects: [[Garden]]. Reading list in [[Books]].\n",
    "Garden.md": "---\ntags: [outdoors]\n---\n# Garden\n\nTomatoes go in after the last frost.\n",
    "Books.md": "# Books\n\n- The Overstory\n- Piranesi\n",
}


@dataclass(frozen=True)
class Kind:
    fmt: str
    what: str
    matches: Callable[[Path], bool]
    make: Callable[[Path], None]


def migration_source(path: Path, from_format: str | None) -> str:
    """Make a source at `path` for a migrate example; returns what it made (for the report)."""
    name = path.name.lower()
    kind = next((k for k in KINDS if (k.fmt == from_format if from_format else k.matches(path))), None)
    if kind is None:
        kind = ZIPPED if name.endswith(".zip") else MARKDOWN
    path.parent.mkdir(parents=True, exist_ok=True)
    kind.make(path)
    return kind.what


def _files(path: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            (path / rel).write_bytes(content)
        else:
            (path / rel).write_text(content, encoding="utf-8")


def _zip(path: Path, files: dict[str, str]) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for rel, text in files.items():
            archive.writestr(rel, text)


def _notion(path: Path) -> None:
    home, sub = "104d4deadd2c803a935ef9917447529e", "7dd41ab5869e464a88fc21637efb50f3"
    export = "Export-99d4faad-5bc1-4fef-82ac-5f6c7a957b12"
    _zip(
        path,
        {
            f"{export}/Home {home}.md": f"# Home\n\nSee [Garden](Home%20{home}/Garden%20{sub}.md).\n",
            f"{export}/Home {home}/Garden {sub}.md": f"# Garden\n\nBack to [Home](../Home%20{home}.md).\n",
        },
    )


def _chatgpt(path: Path) -> None:
    def node(nid: str, role: str | None, text: str, parent: str | None, child: str | None) -> dict[str, object]:
        message = None
        if role is not None:
            content = {"content_type": "text", "parts": [text]}
            message = {"author": {"role": role}, "content": content, "create_time": 1.7e9}
        return {"id": nid, "message": message, "parent": parent, "children": [child] if child else []}

    mapping = {
        "root": node("root", None, "", None, "q"),
        "q": node("q", "user", "How long do tomato seeds take to sprout?", "root", "a"),
        "a": node("a", "assistant", "Five to ten days at 21-27 °C.", "q", None),
    }
    path.write_text(json.dumps([{"title": "Tomato seeds", "create_time": 1.7e9, "mapping": mapping, "id": "c1"}]))


def _logseq(path: Path) -> None:
    _files(
        path,
        {
            "logseq/config.edn": "{:meta/version 1}\n",
            "pages/Garden.md": "tags:: outdoors\n\n- Tomatoes go in after the last frost\n- see [[Books]]\n",
            "pages/Books.md": "- The Overstory\n- Piranesi\n",
            "journals/2026_11_20.md": "- Planted garlic in [[Garden]]\n",
        },
    )


def _obsidian(path: Path) -> None:
    notes = {
        "Kitchen.md": "# Kitchen\n\nThe [[Pantry]] list lives here. ![[seed.png]]\n",
        "Pantry.md": "---\naliases: [larder]\n---\n# Pantry\n\nRice, lentils, [[Kitchen|back]].\n",
    }
    _files(path, {".obsidian/app.json": "{}", **notes, "Attachments/seed.png": b"\x89PNG\r\n\x1a\nseed"})


def _enex(path: Path) -> None:
    note = (
        "<note><title>Garden</title><created>20230102T030405Z</created><updated>20230304T050607Z</updated>"
        '<content><![CDATA[<?xml version="1.0" encoding="UTF-8"?>'
        '<!DOCTYPE en-note SYSTEM "http://xml.evernote.com/pub/enml2.dtd">'
        "<en-note><div>Tomatoes go in after the last frost.</div></en-note>]]></content>"
        "<tag>outdoors</tag></note>"
    )
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<!DOCTYPE en-export SYSTEM "http://xml.evernote.com/pub/evernote-export4.dtd">\n'
        f'<en-export export-date="20240101T000000Z" application="Evernote" version="10.70">\n{note}\n</en-export>\n',
        encoding="utf-8",
    )


def _keep_note(title: str, **fields: object) -> str:
    stamps = {"createdTimestampUsec": 1690367892000000, "userEditedTimestampUsec": 1690864508000000}
    return json.dumps({"title": title, "isTrashed": False, "isPinned": False, "isArchived": False, **stamps, **fields})


def _keep(path: Path) -> None:
    checklist = [{"text": "oat milk", "isChecked": True}, {"text": "rye bread", "isChecked": False}]
    _files(
        path,
        {
            "Shopping.json": _keep_note("Shopping", listContent=checklist, labels=[{"name": "home"}]),
            # The folder's name in the text: two Keep sources are two exports, not one seen twice.
            "Garden.json": _keep_note("Garden", textContent=f"Tomatoes go in after the last frost ({path.name})."),
        },
    )


def _bear(path: Path) -> None:
    info = {
        "type": "net.daringfireball.markdown",
        "version": 2,
        "net.shinyfrog.bear": {"uniqueIdentifier": "ID-1", "creationDate": "2023-10-11T05:43:33Z", "pinned": 0},
    }
    top = f"{path.stem}/Garden.textbundle/"
    _zip(path, {top + "info.json": json.dumps(info), top + "text.md": "# Garden\n\nTomatoes, see #outdoors\n"})


def _mcp_memory(path: Path) -> None:
    records = [
        {"type": "entity", "name": "Maria", "entityType": "person", "observations": ["Grows tomatoes"]},
        {"type": "entity", "name": "Garden", "entityType": "project", "observations": ["Started in 2026"]},
        {"type": "relation", "from": "Maria", "to": "Garden", "relationType": "tends"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _mem0(path: Path) -> None:
    memories = [
        {"id": "0b1c2d3e-0000-4000-8000-000000000001", "memory": "Grows tomatoes", "hash": "a1"}
        | {"created_at": "2024-08-01T10:00:00Z", "user_id": "Maria"},
    ]
    path.write_text(json.dumps(memories, indent=2), encoding="utf-8")


def _in(*words: str) -> Callable[[Path], bool]:
    return lambda path: any(word in part.lower() for part in path.parts[-2:] for word in words)


def _ends(suffix: str) -> Callable[[Path], bool]:
    return lambda path: path.name.lower().endswith(suffix)


KINDS = [
    Kind(
        "notion",
        "a Notion export zip (two linked pages)",
        lambda p: _ends(".zip")(p) and (_in("notion")(p) or p.name.lower().startswith("export-")),
        _notion,
    ),
    Kind("chatgpt", "a ChatGPT conversations.json (one conversation)", _in("conversations", "chatgpt"), _chatgpt),
    Kind("logseq", "a Logseq graph (config.edn, pages, a journal)", _in("logseq"), _logseq),
    Kind("evernote", "an Evernote .enex export (one note)", _ends(".enex"), _enex),
    Kind("keep", "a Google Keep Takeout folder (a checklist and a note)", _in("keep"), _keep),
    Kind("bear", "a Bear .bear2bk backup (one text bundle)", _ends(".bear2bk"), _bear),
    Kind("mcp-memory", "an MCP memory server's memory.jsonl (two entities)", _in("memory.jsonl"), _mcp_memory),
    Kind("mem0", "a mem0 export (one memory)", _in("mem0"), _mem0),
    Kind(
        "obsidian", "an Obsidian vault (.obsidian/, [[wikilinks]], an attachment)", _in("obsidian", "vault"), _obsidian
    ),
]
MARKDOWN = Kind("generic", "a folder of markdown notes with [[wikilinks]]", lambda p: True, lambda p: _files(p, NOTES))
ZIPPED = Kind("generic", "a zip of markdown notes", lambda p: True, lambda p: _zip(p, NOTES))
