"""mem0 exports: what `Memory.get_all()` / `MemoryClient.get_all()` return, saved as JSON.

Shapes read (from mem0's documentation; no real export was at hand): `{"results": [memory, …]}`
(with `"relations": […]` when graph memory is on, and `count`/`next` on the platform's pages), or
a bare list of memories. A memory is `{"id", "memory", "hash", "metadata", "categories",
"created_at", "updated_at", "user_id" | "agent_id" | "app_id" | "run_id"}`; a relation is
`{"source", "relationship", "target" | "destination"}`.

Decisions:
- Whose memory it is: `user_id` names a person entity (`people/<user_id>.md`). mem0 is a store
  for many users (its own export guide holds three), so a user_id is not necessarily the person
  migrating; filing it under `core/user.md` would merge several people into the corpus's owner and
  write into hand-kept pages that every wake loads. The owner keeps the claims by giving their
  own person page the user_id as an alias before migrating (an existing page keeps its page and
  gets the claims). Without a user_id, `agent_id` (then `app_id`) names a concept entity (an
  agent is not a person); with none of them, the person "user".
- Each memory is one claim. Its kind: `preference` when its categories or `metadata.type` say so
  (mem0's `user_preferences`, the export guide's `{"type": "preference"}`) or when the memory opens
  the way mem0 writes preferences ("Prefers …", "Likes …", "Dislikes …"); `decision` when they say
  decision; otherwise `fact`. Its date: `updated_at`, else `created_at`.
- One item (kind `memory`, no files of its own) per memory, keyed by mem0's id, so the same memory
  in a later export is recognised; its digest is the record, so an updated memory is imported again.
  A graph relation is an item of kind `relation`: "<relationship> <target>" on its source entity,
  a link when the target is an entity, plain text when not.
- The file is kept as markdown evidence, linked from every claim artifact; `--llm` does not read it.
- A memory without text is one `bad_record` problem (with its index); the rest goes on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from dory.migrate.entities import name_key
from dory.migrate.formats.generic import evidence, read_file
from dory.migrate.formats.sniff import sniff
from dory.migrate.model import (
    Item,
    ItemProblem,
    Observation,
    ReadContext,
    SourceFile,
    SourceTreeLike,
    Yielded,
    digest_of,
)
from dory.migrate.text import NotText, decode

_PREFERS = re.compile(r"^(prefers|likes|loves|dislikes|hates|enjoys|favou?rite)\b", re.IGNORECASE)
_OWNERS = (("user_id", "person"), ("agent_id", "concept"), ("app_id", "concept"))


class Mem0Reader:
    name = "mem0"
    folder = "references/mem0"

    def detect(self, tree: SourceTreeLike) -> int:
        return 20 if sniff(tree, ("json",), lambda file: _export(file) is not None) else 0

    def read(self, tree: SourceTreeLike, ctx: ReadContext) -> Iterator[Yielded]:
        for file in tree.files():
            found = _export(file) if file.suffix == "json" else None
            if found is None:
                yield read_file(file, ctx.into, ctx)
            else:
                yield from read_export(file, *found, ctx)


def read_export(
    file: SourceFile, data: bytes, memories: list[Any], relations: list[Any], ctx: ReadContext
) -> Iterator[Yielded]:
    """The file as evidence, then one item per memory and per relation."""
    kept = evidence(file, data, ctx.into, f"file:{file.rel}", ctx)
    evidence_path = None
    if isinstance(kept, Item):
        kept.llm = False
        evidence_path = kept.outputs[0].path
    yield kept
    people: set[str] = set()
    for i, record in enumerate(memories):
        found = _memory(file.rel, i, record, evidence_path)
        if isinstance(found, Item) and found.observations[0].family == "person":
            people.add(name_key(found.observations[0].name))
        yield found
    for i, record in enumerate(relations):
        yield _relation(file.rel, i, record, evidence_path, people)


def owner_of(record: dict[str, Any]) -> tuple[str, str]:
    """(entity name, family) of whoever the memory is about."""
    for field, family in _OWNERS:
        value = record.get(field)
        if isinstance(value, str) and name_key(value):
            return " ".join(value.split()), family
    return "user", "person"


def kind_of(record: dict[str, Any]) -> str:
    """The claim kind a memory's categories, metadata type or wording make clear; else fact."""
    metadata = record.get("metadata")
    labels = [c for c in record.get("categories") or [] if isinstance(c, str)]
    if isinstance(metadata, dict):
        labels += [v for k in ("type", "category", "kind") if isinstance(v := metadata.get(k), str)]
    words = " ".join(labels).lower()
    if "preference" in words:
        return "preference"
    if "decision" in words:
        return "decision"
    text = record.get("memory")
    return "preference" if isinstance(text, str) and _PREFERS.match(text.strip()) else "fact"


def _memory(rel: str, index: int, record: Any, evidence_path: str | None) -> Yielded:
    where = f"{rel}#results[{index}]"
    text = record.get("memory") if isinstance(record, dict) else None
    if not isinstance(text, str) or not text.strip():
        return ItemProblem(where, "bad_record", "a memory without text; skipped")
    assert isinstance(record, dict)
    name, family = owner_of(record)
    at = next((v for k in ("updated_at", "created_at") if isinstance(v := record.get(k), str) and v), None)
    memory_id = record.get("id")
    ident = memory_id if isinstance(memory_id, str) and memory_id.strip() else digest_of(name, text)[:16]
    source = f"{rel}#{ident}"
    obs = Observation(name, family, text, kind=kind_of(record), at=at, source=source, evidence=evidence_path)
    canonical = json.dumps(record, ensure_ascii=False, sort_keys=True, default=str)
    return Item(f"mem0:{ident}", "memory", source, digest_of(canonical), observations=[obs], llm=False)


def _relation(rel: str, index: int, record: Any, evidence_path: str | None, people: set[str]) -> Yielded:
    where = f"{rel}#relations[{index}]"
    values = record if isinstance(record, dict) else {}
    source, relationship = _text(values.get("source")), _text(values.get("relationship"))
    target = _text(values.get("target") or values.get("destination"))
    if not (name_key(source) and name_key(target) and relationship):
        return ItemProblem(where, "bad_record", "a relation needs source, relationship and target; skipped")
    family = "person" if name_key(source) in people else "concept"
    statement = f"{relationship.replace('_', ' ')} {target}"
    obs = Observation(source, family, statement, links=(target,), source=where, evidence=evidence_path)
    key = f"mem0:{rel}#relation:{digest_of(name_key(source), relationship, name_key(target))[:16]}"
    return Item(key, "relation", where, digest_of(source, relationship, target), observations=[obs], llm=False)


def _text(value: Any) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def _export(file: SourceFile) -> tuple[bytes, list[Any], list[Any]] | None:
    """(bytes, memories, relations) when the file is a mem0 export, else None."""
    try:
        data = file.read()
        value = json.loads(decode(data)[0])
    except (OSError, ValueError, NotText, RecursionError):
        return None
    relations: Any = []
    if isinstance(value, dict):
        relations = value.get("relations") or []
        value = value.get("results", value.get("memories"))
    if not isinstance(value, list) or not isinstance(relations, list):
        return None
    first = next((v for v in value if isinstance(v, dict)), None)
    if first is None or not isinstance(first.get("memory"), str):
        return None
    if not any(k in first for k in ("id", "hash", "user_id", "agent_id", "created_at")):
        return None
    return data, value, relations
