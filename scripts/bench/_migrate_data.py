"""Generated exports for bench_migrate.py: markdown notes with wikilinks, and ChatGPT conversations.

Everything is a function of a seed, so two runs migrate the same bytes. Texts are made of a fixed
vocabulary of invented words (realistic lengths and term frequencies for the lexical index, no
prompt-injection phrasing for the migration's screening to quarantine).
"""

from __future__ import annotations

import json
import random
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

FOLDERS = 50
SYLLABLES = ("ka", "lo", "mi", "ren", "to", "sa", "vel", "dra", "nu", "pe", "quo", "zim", "ha", "ri", "ost", "ble")


def vocabulary(rng: random.Random, size: int = 3000) -> list[str]:
    words = {"".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(size * 2)}
    return sorted(words)[:size]


def sentence(rng: random.Random, words: list[str]) -> str:
    # Zipf-like: low indexes are common words, as in real prose.
    picked = [words[min(int(rng.paretovariate(1.1)) - 1, len(words) - 1)] for _ in range(rng.randint(6, 18))]
    return " ".join(picked).capitalize() + "."


def paragraph(rng: random.Random, words: list[str]) -> str:
    return " ".join(sentence(rng, words) for _ in range(rng.randint(2, 6)))


def note_rel(n: int) -> str:
    return f"topic-{n % FOLDERS:02d}/Note {n:05d}.md"


def note_text(n: int, total: int, rng: random.Random, words: list[str]) -> str:
    """One note: frontmatter on a third of them, a title, paragraphs, and three to five wikilinks
    to other notes of the export (by name, some by path with a label)."""
    parts = []
    if n % 3 == 0:
        parts.append(f"---\ntags: [{words[n % 50]}, bench]\naliases: [{words[n % 997].title()} {n}]\n---\n")
    parts.append(f"# Note {n:05d}\n")
    for _ in range(rng.randint(2, 6)):
        parts.append(paragraph(rng, words) + "\n")
    links = []
    for target in rng.sample(range(total), rng.randint(3, 5)):
        if target % 4 == 0:
            links.append(f"[[{note_rel(target)[:-3]}|{words[target % 300]}]]")
        else:
            links.append(f"[[Note {target:05d}]]")
    parts.append("See also " + ", ".join(links) + ".\n")
    return "\n".join(parts)


def write_notes(folder: Path, total: int, seed: int = 7) -> int:
    """`total` notes under `folder` (FOLDERS sub-folders); returns the bytes written."""
    rng = random.Random(seed)
    words = vocabulary(rng)
    written = 0
    for n in range(total):
        path = folder / note_rel(n)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = note_text(n, total, rng, words).encode("utf-8")
        path.write_bytes(data)
        written += len(data)
    return written


def zip_folder(folder: Path, target: Path) -> None:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for path in sorted(folder.rglob("*.md")):
            archive.write(path, f"{folder.name}/{path.relative_to(folder).as_posix()}")


# -- ChatGPT --------------------------------------------------------------------------------------
def _message(node: str, role: str, text: str, at: float) -> dict[str, Any]:
    return {
        "id": node,
        "author": {"role": role, "name": None, "metadata": {}},
        "create_time": at,
        "update_time": None,
        "content": {"content_type": "text", "parts": [text]},
        "status": "finished_successfully",
        "end_turn": role == "assistant" or None,
        "weight": 1.0,
        "metadata": {},
        "recipient": "all",
    }


def conversation(n: int, rng: random.Random, words: list[str]) -> dict[str, Any]:
    """One conversation as ChatGPT exports it: a `mapping` tree from a root without a message,
    `current_node` at the visible leaf; one in five has a regenerated answer (an abandoned branch)."""

    def new_id() -> str:
        return str(uuid.UUID(int=rng.getrandbits(128)))

    start = 1_700_000_000 + n * 3600 + rng.random()
    root = new_id()
    mapping: dict[str, Any] = {root: {"id": root, "message": None, "parent": None, "children": []}}
    parent, at = root, start
    for turn in range(rng.randint(2, 5)):
        for role in ("user", "assistant"):
            node = new_id()
            text = sentence(rng, words) if role == "user" else paragraph(rng, words)
            if role == "assistant" and turn == 0 and n % 5 == 0:  # regenerated: the first answer abandoned
                old = new_id()
                draft = _message(old, role, "draft " + text, at)
                mapping[old] = {"id": old, "message": draft, "parent": parent, "children": []}
                mapping[parent]["children"].append(old)
            mapping[node] = {"id": node, "message": _message(node, role, text, at), "parent": parent, "children": []}
            mapping[parent]["children"].append(node)
            parent, at = node, at + rng.uniform(5, 120)
    conv_id = new_id()
    return {
        "title": f"Conversation {n}: {words[n % 700]} {words[n % 211]}",
        "create_time": start,
        "update_time": at,
        "mapping": mapping,
        "moderation_results": [],
        "current_node": parent,
        "conversation_id": conv_id,
        "id": conv_id,
        "default_model_slug": "gpt-4o",
        "is_archived": False,
    }


def conversations(total: int, seed: int = 11) -> Iterator[dict[str, Any]]:
    rng = random.Random(seed)
    words = vocabulary(rng)
    for n in range(total):
        yield conversation(n, rng, words)


def write_conversations(path: Path, total: int) -> int:
    """`conversations.json` (one JSON array, as ChatGPT writes it) streamed to disk; returns its size."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        handle.write("[")
        for n, item in enumerate(conversations(total)):
            handle.write(("," if n else "") + json.dumps(item, ensure_ascii=False))
        handle.write("]")
    return path.stat().st_size


def visible_text(item: dict[str, Any]) -> list[tuple[str, str]]:
    """(role, text) along current_node's path: what the baseline writes for a conversation."""
    mapping, node, turns = item["mapping"], item["current_node"], []
    while node is not None:
        entry = mapping[node]
        message = entry.get("message")
        if message is not None:
            turns.append((message["author"]["role"], "".join(message["content"]["parts"])))
        node = entry.get("parent")
    return turns[::-1]
