"""What the notes-app readers (Evernote, Google Keep, Bear) share.

- Names: every path a reader proposes is unique within its read (case-insensitively), so two notes
  titled alike become `Title.md` and `Title (2).md` here, not in the run. This matters for
  attachments: the run redirects links by proposed path, so two attachments proposing one path
  would have their links point at the same file.
- Attachments sit beside their note, in `attachments/<note name>/`, as their own items (kind
  `attachment`, counted in the plan) and are linked from the note with a wikilink (an embed for
  images), which the run follows when a name clash moves the file.
- Trashed notes are imported, never dropped: into a `Trash/` folder beside the others, with
  `trashed: true` and `status: superseded` so search leaves them out until someone restores them.
- Every note says where it came from: `source_kind: imported`, `source: <app>`, `source_path`.
"""

from __future__ import annotations

import datetime as dt
import mimetypes
import posixpath
from typing import Any

from dory.migrate.model import Item, Output, digest_of, wikilink
from dory.migrate.names import safe_name, with_suffix
from dory.migrate.text import note

TRASH = "Trash"
ATTACHMENT_FOLDER = "attachments"
IMAGES = frozenset({"png", "jpg", "jpeg", "gif", "bmp", "svg", "webp", "avif", "tif", "tiff", "ico", "heic"})
# Extensions for the MIME types notes apps write; `mimetypes` answers the rest.
EXTENSIONS = {
    "image/jpeg": "jpg",
    "image/jpg": "jpg",
    "image/png": "png",
    "image/gif": "gif",
    "image/svg+xml": "svg",
    "image/webp": "webp",
    "image/heic": "heic",
    "image/tiff": "tiff",
    "image/bmp": "bmp",
    "application/pdf": "pdf",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/mp4": "m4a",
    "audio/x-m4a": "m4a",
    "audio/m4a": "m4a",
    "audio/amr": "amr",
    "audio/3gp": "3gp",
    "audio/3gpp": "3gp",
    "video/mp4": "mp4",
    "video/quicktime": "mov",
    "text/plain": "txt",
    "text/html": "html",
    "application/zip": "zip",
}


class Names:
    """Proposed corpus paths handed out once each within a read."""

    def __init__(self) -> None:
        self._taken: set[str] = set()

    def claim(self, path: str) -> str:
        final, n = path, 1
        while final.casefold() in self._taken:
            n += 1
            final = with_suffix(path, n)
        self._taken.add(final.casefold())
        return final

    def note(self, folder: str, title: str) -> str:
        return self.claim(posixpath.join(folder, safe_name(title) + ".md"))

    def attachment(self, note_path: str, name: str) -> str:
        stem = posixpath.splitext(posixpath.basename(note_path))[0]
        folder = posixpath.join(posixpath.dirname(note_path), ATTACHMENT_FOLDER, stem)
        return self.claim(posixpath.join(folder, safe_name(name, "attachment")))


def extension(mime: str) -> str:
    mime = mime.split(";", 1)[0].strip().lower()
    if mime in EXTENSIONS:
        return EXTENSIONS[mime]
    guessed = mimetypes.guess_extension(mime) if mime else None
    return guessed[1:] if guessed else "bin"


def file_name(name: str, content_hash: str, mime: str) -> str:
    """The attachment's own name, else its content hash with the extension of its type."""
    name = name.strip().replace("\\", "/").rsplit("/", 1)[-1]
    return name or f"{content_hash}.{extension(mime)}"


def link(path: str, name: str) -> str:
    """How a note points at its attachment: images embedded, other files linked by name."""
    ext = posixpath.splitext(path)[1][1:].lower()
    return "!" + wikilink(path) if ext in IMAGES else wikilink(path, name)


def attachment(key: str, source: str, path: str, data: bytes) -> Item:
    return Item(key, "attachment", source, digest_of(data), [Output(path, data, "attachment")])


def note_item(key: str, source: str, digest: str, path: str, fm: dict[str, Any], body: str, why: str = "") -> Item:
    return Item(key, "note", source, digest, [Output(path, note(fm, body), "note")], note=why)


def base_frontmatter(
    title: str, app: str, source_path: str, created: str | None, updated: str | None, now: str
) -> dict[str, Any]:
    """The fields every imported note starts with (dates as YYYY-MM-DD; the run's day when the app gave none)."""
    return {
        "title": " ".join(title.split()) or "Untitled",
        "type": "note",
        "status": None,  # superseded when trashed
        "source_kind": "imported",
        "source": app,
        "source_path": source_path,
        "created": created or now[:10],
        "updated": updated,
    }


def trashed(fm: dict[str, Any]) -> dict[str, Any]:
    return fm | {"status": "superseded", "trashed": True}


def day_of_usec(value: object) -> str | None:
    """A microsecond Unix timestamp (Google Keep) as a UTC day."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        moment = dt.datetime.fromtimestamp(int(value) / 1_000_000, dt.UTC)
    except (ValueError, OverflowError, OSError):
        return None
    return moment.date().isoformat()


def day_of_iso(value: object) -> str | None:
    """An ISO timestamp (`2023-10-11T08:11:02Z`) as its day, or None."""
    if not isinstance(value, str):
        return None
    try:
        return dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00")).date().isoformat()
    except ValueError:
        return None
