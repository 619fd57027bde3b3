"""Wikilinks in a corpus that point at nothing: the link index leaves attachment links (`![[x.png]]`,
`[[x.pdf|x]]`) out of its graph, so migration tests check those against the files themselves."""

from __future__ import annotations

import re
from pathlib import Path

_LINK = re.compile(r"!?\[\[([^\]|#\n]+)")


def unresolved(corpus: Path, under: str = "") -> list[str]:
    """`note: target` for each [[target]] under `under` with no file (as written or with `.md`)."""
    missing: list[str] = []
    for note in sorted((corpus / under).rglob("*.md")):
        for target in _LINK.findall(note.read_text("utf-8")):
            if not ((corpus / target).is_file() or (corpus / f"{target}.md").is_file()):
                missing.append(f"{note.relative_to(corpus).as_posix()}: {target}")
    return missing
