"""The formats `dory migrate` reads, one module each, and how a source's format is chosen.

`detect(tree)` asks every reader for a score and takes the highest (ties go to the earlier reader
in READERS, most specific first); `generic` reads anything, so it scores 1 and wins only when no
one else claims the tree. `--from FORMAT` skips detection.
"""

from __future__ import annotations

from dory.errors import UsageError
from dory.memory.entities import slugify
from dory.migrate.formats import (
    bear,
    chatgpt,
    claude_ai,
    evernote,
    generic,
    keep,
    logseq,
    mcp_memory,
    mem0,
    notion,
    obsidian,
    sessions_jsonl,
)
from dory.migrate.model import Reader, SourceTreeLike

READERS: list[Reader] = [
    chatgpt.ChatGPTReader(),
    claude_ai.ClaudeAIReader(),
    notion.NotionReader(),
    mcp_memory.McpMemoryReader(),
    mem0.Mem0Reader(),
    bear.BearReader(),
    evernote.EvernoteReader(),
    keep.KeepReader(),
    logseq.LogseqReader(),
    obsidian.ObsidianReader(),
    sessions_jsonl.SessionsJsonlReader(),
    generic.GenericReader(),
]


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
    """Where a reader's notes go unless `--into` says: `<its folder>/<the source's name>`. A reader
    whose output has a fixed place (chat exports go to the session plane) names it as `into`; a
    reader may name the source itself (`source_name(tree)`: Notion drops the ids from an export's name)."""
    fixed = getattr(reader, "into", None)
    if isinstance(fixed, str):
        return fixed
    base = getattr(reader, "folder", "knowledge")
    source_name = getattr(reader, "source_name", None)
    label = source_name(tree) if callable(source_name) else tree.label
    return f"{base}/{slugify(label) or 'imported'}"
