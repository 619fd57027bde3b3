"""File names for imported notes: readable (case and spaces kept, as note apps show them), safe on
every file system Dory runs on, and short enough for any name limit."""

from __future__ import annotations

import posixpath
import re
import unicodedata

MAX_NAME_BYTES = 120  # leaves room for a clash suffix and a temp prefix under NAME_MAX (255)
_UNSAFE = re.compile(r'[\x00-\x1f\x7f/\\:*?"<>|#^\[\]]')


def safe_name(text: str, fallback: str = "untitled", limit: int = MAX_NAME_BYTES) -> str:
    """One path part from a title: no separators, no characters Windows or wikilinks refuse, no
    leading dot, at most `limit` bytes of UTF-8 (MAX_NAME_BYTES unless an extension follows)."""
    name = unicodedata.normalize("NFC", text)
    name = _UNSAFE.sub(" ", name)
    name = " ".join(name.split()).strip(" .")
    encoded = name.encode("utf-8")
    if len(encoded) > limit:
        name = encoded[:limit].decode("utf-8", "ignore").strip(" .")
    return name or fallback


def safe_path(parts: list[str], fallback: str = "untitled") -> str:
    """A corpus-relative path from source path parts, each made safe."""
    return "/".join(safe_name(part, fallback) for part in parts if part not in ("", ".", ".."))


def with_suffix(path: str, n: int) -> str:
    """`a/b.md` → `a/b (n).md`: the name a clash moves to. Canonical pages (`people/x.md`) and
    files without an extension get the number before the extension the same way."""
    stem, ext = posixpath.splitext(path)
    return f"{stem} ({n}){ext}"


def md_path(folder: str, title: str) -> str:
    return posixpath.join(folder, safe_name(title) + ".md")
