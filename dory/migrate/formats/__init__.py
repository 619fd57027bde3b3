"""The formats `dory migrate` reads, one module each, and how a source's format is chosen.

`detect(tree)` asks every reader for a score and takes the highest (ties go to the earlier reader
in READERS, most specific first); `generic` reads anything, so it scores 1 and wins only when no
one else claims the tree. `--from FORMAT` skips detection.
"""

from __future__ import annotations

from dory.errors import UsageError
from dory.memory.entities import slugify
from dory.migrate.formats import generic, logseq, obsidian
from dory.migrate.model import Reader, SourceTreeLike

READERS: list[Reader] = [logseq.LogseqReader(), obsidian.ObsidianReader(), generic.GenericReader()]


def names() -> list[str]:
    return [reader.name for reader in READERS]


def get(name: str) -> Reader:
    for reader in READERS:
        if reader.name == name:
            return reader
    raise UsageError(f"unknown format {name!r}; known formats: {', '.join(names())}", format=name)


def detect(tree: SourceTreeLike) -> Reader:
    scored = [(reader.detect(tree), -i, reader) for i, reader in enumerate(READERS)]
    best = max(scored, key=lambda entry: (entry[0], entry[1]))
    return best[2]


def default_into(reader: Reader, tree: SourceTreeLike) -> str:
    """Where a reader's notes go unless `--into` says: `<its folder>/<the source's name>`."""
    base = getattr(reader, "folder", "knowledge")
    return f"{base}/{slugify(tree.label) or 'imported'}"
