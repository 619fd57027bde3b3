"""Counting the links of imported notes after a migration: note links as the index resolves them,
and links to attachments (which the index leaves out) by looking for the file they name."""

from __future__ import annotations

import posixpath
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from dory.corpus.document import parse_document
from dory.memory import graph
from dory.memory.links import ATTACHMENTS, code_masked
from dory.service import DoryService

_MARKDOWN = re.compile(r"!?\[[^\[\]\n]*\]\((<[^<>\n]+>|[^()\s<>]+)\)")
_WIKI = re.compile(r"!?\[\[([^\[\]\n]+)\]\]")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass
class Census:
    resolved: int = 0
    broken: int = 0
    broken_targets: Counter[str] = field(default_factory=Counter)


def note_links(service: DoryService, prefix: str) -> Census:
    """Every explicit link (wikilink or markdown link to a note) written in a note under `prefix`,
    resolved the way `dory links` and the lint resolve it."""
    conn = service.resources.store().conn
    table = graph.names(conn)
    census = Census()
    rows = conn.execute("SELECT file_id, kind, target, target_key FROM links WHERE kind != 'mention'")
    for file_id, kind, target, key in rows:
        source = table.path_of.get(file_id, "")
        if not source.startswith(prefix):
            continue
        if table.resolve(source, kind, target, key) is None:
            census.broken += 1
            census.broken_targets[target] += 1
        else:
            census.resolved += 1
    return census


def attachment_links(corpus: Path, prefix: str) -> Census:
    """Links from notes under `prefix` to files that are not notes (`![x](a.png)`, `![[a.png]]`):
    resolved when the file is in the corpus (a wikilink by full path, or by file name anywhere)."""
    census = Census()
    names = {p.name.lower() for p in corpus.rglob("*") if p.is_file()}
    for note in sorted((corpus / prefix).rglob("*.md")):
        rel = note.relative_to(corpus).as_posix()
        doc = parse_document(rel, note.read_bytes())
        for line in code_masked(doc.lines, doc.body_start):  # the frontmatter is no link, as in the index
            for href in _MARKDOWN.findall(line):
                href = href.strip("<>").partition("#")[0]
                if not href or _SCHEME.match(href) or href.lower().endswith(".md"):
                    continue
                target = posixpath.normpath(posixpath.join(posixpath.dirname(rel), unquote(href)))
                _count(census, target, (corpus / target).is_file())
            for inner in _WIKI.findall(line):
                target = inner.partition("|")[0].partition("#")[0].strip()
                if posixpath.splitext(target)[1][1:].lower() not in ATTACHMENTS:
                    continue
                found = (corpus / target).is_file() if "/" in target else target.lower() in names
                _count(census, target, found)
    return census


def _count(census: Census, target: str, found: bool) -> None:
    if found:
        census.resolved += 1
    else:
        census.broken += 1
        census.broken_targets[target] += 1
