"""Helpers every reader shares: decoding text of unknown encoding, and rendering an imported note."""

from __future__ import annotations

import codecs
from typing import Any

from dory.memory import frontmatter


class NotText(ValueError):
    """The bytes are not text in any encoding we try (binary, or NUL bytes inside)."""


def decode(data: bytes) -> tuple[str, str | None]:
    """(text, note): UTF-8 (a BOM dropped), UTF-16 with a BOM, else Windows-1252 with a note saying
    so. NotText for binary data."""
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16"), "decoded from UTF-16"
        except UnicodeDecodeError as exc:
            raise NotText(f"broken UTF-16: {exc.reason}") from exc
    if b"\x00" in data:
        raise NotText("binary data (NUL bytes)")
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        pass
    text = data.decode("cp1252", errors="replace")
    return text, "not UTF-8: decoded as Windows-1252"


def note(fm: dict[str, Any], body: str) -> bytes:
    """An imported note: frontmatter (None and empty values dropped) and body, as Dory writes notes."""
    kept = {key: value for key, value in fm.items() if value not in (None, "", [], {})}
    return frontmatter.render(kept, body)


def fence(text: str, info: str = "") -> str:
    """`text` in a code fence longer than any backtick run inside it."""
    longest = 2
    run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    ticks = "`" * (longest + 1)
    return f"{ticks}{info}\n{text.rstrip(chr(10))}\n{ticks}"
