"""What daily and weekly digests share: bullets that cite their source, sections, and the page layout.

Every bullet of a digest ends with a link to where it came from: a daily digest's to the session
turn (`[m-0123456789ab](/logs/sessions/….md#L12)`: corpus-rooted, the turn's first line), a weekly
digest's to the daily digest it was carried from. Dreaming reads those links back (`cited`) to
ground what it proposes in a line someone can open.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

from dory.corpus.shorten import shorten

NONE = "- None"
# `text ([label](/path#L12))` at the end of a bullet.
_CITATION = re.compile(r"\s*\(\[(?P<label>[^\]\n]+)\]\((?P<target>/[^)\s]+)\)\)\s*$")


@dataclass(frozen=True)
class Source:
    path: str  # corpus-relative
    label: str  # the message id, or the daily digest's date
    line: int | None = None

    def link(self) -> str:
        anchor = f"#L{self.line}" if self.line else ""
        return f"[{self.label}](/{quote(self.path)}{anchor})"


@dataclass(frozen=True)
class Bullet:
    text: str
    source: Source

    def render(self) -> str:
        return f"- {self.text} ({self.source.link()})"


def one_line(text: str, limit: int = 400) -> str:
    """`text` on one line, cut after a whole word (with `…`) when longer than `limit`."""
    return shorten(text, limit)


def section(title: str, lines: list[str]) -> str:
    return "\n".join([f"## {title}", *(lines or [NONE])])


def cited(line: str) -> tuple[str, Source] | None:
    """A rendered bullet read back: its text and its source, or None when the line cites nothing."""
    if not line.startswith("- "):
        return None
    match = _CITATION.search(line)
    if match is None:
        return None
    target = match["target"][1:]
    path, _, anchor = target.partition("#")
    number = int(anchor[1:]) if re.fullmatch(r"L\d+", anchor) else None
    return line[2 : match.start()].strip(), Source(unquote(path), match["label"], number)


def sections_of(body: str) -> dict[str, list[str]]:
    """A digest's H2 sections → their lines (bullets and text), in order."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in body.splitlines():
        if line.startswith("## "):
            current = out.setdefault(line[3:].strip(), [])
        elif current is not None and line.strip():
            current.append(line)
    return out
