"""The MCP reference memory server's knowledge graph: `memory.jsonl` (older versions: `memory.json`).

The server writes one JSON object a line: `{"type":"entity","name","entityType","observations":[…]}`
and `{"type":"relation","from","to","relationType"}`. Older files (and some exports of it) are one
JSON document `{"entities":[…],"relations":[…]}`, or a JSON array of the line records; both are read.
`entityType` and `relationType` are free text, and the server never checks that a relation's ends
exist or that a name is written once.

Decisions:
- Each observation of an entity is an `Observation` about it (a claim on its canonical page). The
  family comes from `entityType`: person/people/user → person; project/repo/product → project;
  decision → decision (its observations are claims of kind decision); anything else → concept.
- A relation is an observation on its `from` entity, "<relationType> <to>", linking `to`: the
  first mention becomes a wikilink when `to` is an entity (of this graph or of the corpus) and
  stays plain text when it dangles. A relation whose `from` entity is missing still says something
  about that name, so it is kept: the name becomes an entity of its own.
- A name written on several lines (with different types or observations) is one entity: its
  lines become one item here and one cluster in entities.py, filed in its most frequent family.
- One item (kind `entity-source`, no files of its own) per entity name carries its observations,
  keyed by the file and the folded name, so a rerun knows each entity and an edited one counts as
  changed. The file itself is kept as markdown evidence (generic `evidence()`), which every claim
  artifact links; `--llm` does not read it again (its claims are already typed).
- A line that is not JSON (cut short, edited by hand) is one `bad_json_line` problem with its line
  number; a record missing a name or an end is `bad_record`; an unknown `type` is `unknown_record`.
  Everything else in the file is imported.
- Other files beside the graph are read as the generic reader reads them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
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

SUFFIXES = ("jsonl", "json", "ndjson")
_PERSON = {"person", "persons", "people", "user", "users", "human", "individual", "contact"}
_PROJECT = {"project", "projects", "repo", "repos", "repository", "repositories", "product", "products"}
_DECISION = {"decision", "decisions"}
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@dataclass
class _Entity:
    """Everything the file says about one name (in file order)."""

    name: str
    families: list[str] = field(default_factory=list)
    records: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)  # (where, kind, record)


class McpMemoryReader:
    name = "mcp-memory"
    folder = "references/mcp-memory"

    def detect(self, tree: SourceTreeLike) -> int:
        return 20 if sniff(tree, SUFFIXES, lambda file: _graph_text(file) is not None) else 0

    def read(self, tree: SourceTreeLike, ctx: ReadContext) -> Iterator[Yielded]:
        for file in tree.files():
            found = _graph_text(file) if file.suffix in SUFFIXES else None
            if found is None:
                yield read_file(file, ctx.into, ctx)
            else:
                yield from read_graph(file, *found, ctx)


def family_of(entity_type: str) -> str:
    words = set(name_key(_CAMEL.sub(" ", entity_type)).split())
    if words & _PERSON:
        return "person"
    if words & _PROJECT:
        return "project"
    if words & _DECISION:
        return "decision"
    return "concept"


def read_graph(file: SourceFile, data: bytes, text: str, ctx: ReadContext) -> Iterator[Yielded]:
    """The file as evidence, then one item per entity name, with a problem per unreadable record."""
    kept = evidence(file, data, ctx.into, f"file:{file.rel}", ctx)
    evidence_path = None
    if isinstance(kept, Item):
        kept.llm = False
        evidence_path = kept.outputs[0].path
    yield kept
    entities: dict[str, _Entity] = {}
    for where, record in _records(text):
        problem = record if isinstance(record, tuple) else _collect(record, where, entities)
        if problem is not None:
            yield ItemProblem(f"{file.rel}#{where}", *problem)
    for key, entity in entities.items():
        yield _item(file.rel, key, entity, evidence_path)


def _records(text: str) -> Iterator[tuple[str, dict[str, Any] | tuple[str, str]]]:
    """(where, record or (code, message)) for every record: `L<n>` for a line, `entities[i]` or
    `[i]` in the one-document shapes."""
    whole = _whole_document(text)
    if isinstance(whole, dict):
        for part, kind in (("entities", "entity"), ("relations", "relation")):
            values = whole.get(part)
            for i, value in enumerate(values if isinstance(values, list) else []):
                yield f"{part}[{i}]", ({"type": kind} | value) if isinstance(value, dict) else _not_object(value)
        return
    if isinstance(whole, list):
        for i, value in enumerate(whole):
            yield f"[{i}]", value if isinstance(value, dict) else _not_object(value)
        return
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (ValueError, RecursionError) as exc:
            yield f"L{n}", ("bad_json_line", f"line {n} is not JSON ({_reason(exc)}); skipped")
            continue
        yield f"L{n}", value if isinstance(value, dict) else _not_object(value)


def _whole_document(text: str) -> dict[str, Any] | list[Any] | None:
    """The file as one JSON document (`{"entities", "relations"}` or an array of records), or None
    for a JSON-lines file (a one-line file holding a single record is JSON lines too)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if isinstance(value, dict) and ("entities" in value or "relations" in value):
        return value
    return value if isinstance(value, list) else None


def _not_object(value: Any) -> tuple[str, str]:
    return "bad_record", f"a JSON {type(value).__name__}, not an object; skipped"


def _reason(exc: Exception) -> str:
    return str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__


def _collect(record: dict[str, Any], where: str, entities: dict[str, _Entity]) -> tuple[str, str] | None:
    """Add one record to the entity it is about; (code, message) when it cannot be used."""
    kind = record.get("type")
    if kind is None:  # records written without a type: tell them by their fields
        kind = "relation" if "relationType" in record else "entity" if "entityType" in record else None
    if kind == "entity":
        name = _text(record.get("name"))
        observations = record.get("observations", [])
        if not name_key(name):
            return "bad_record", "an entity without a name; skipped"
        if not isinstance(observations, list):
            return "bad_record", f"entity {name!r}: observations is not a list; skipped"
        entity = entities.setdefault(name_key(name), _Entity(name))
        entity.families.append(family_of(_text(record.get("entityType"))))
        entity.records.append((where, "entity", record))
        if any(not isinstance(o, str) for o in observations):
            return "bad_record", f"entity {name!r}: observations that are not text were left out"
        return None
    if kind == "relation":
        source, target, relation = (_text(record.get(k)) for k in ("from", "to", "relationType"))
        if not (name_key(source) and name_key(target) and relation):
            return "bad_record", "a relation needs from, to and relationType; skipped"
        entities.setdefault(name_key(source), _Entity(source)).records.append((where, "relation", record))
        return None
    return "unknown_record", f"record type {kind!r} is neither entity nor relation; skipped"


def _text(value: Any) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def _item(rel: str, key: str, entity: _Entity, evidence_path: str | None) -> Item:
    family = max(entity.families, key=entity.families.count) if entity.families else "concept"
    observations: list[Observation] = []
    for where, kind, record in entity.records:
        source = f"{rel}#{where}"
        if kind == "relation":
            target = _text(record["to"])
            statement = f"{_text(record['relationType'])} {target}"
            observations.append(
                Observation(entity.name, family, statement, links=(target,), source=source, evidence=evidence_path)
            )
            continue
        name = _text(record["name"])
        claim_kind = "decision" if family == "decision" else "fact"
        for text in record.get("observations", []):
            if isinstance(text, str) and text.strip():
                obs = Observation(name, family, text, kind=claim_kind, source=source, evidence=evidence_path)
                observations.append(obs)
    canonical = [json.dumps(r, ensure_ascii=False, sort_keys=True) for _, _, r in entity.records]
    return Item(
        f"mcp-memory:{rel}#{key}",
        "entity-source",
        f"{rel}#{entity.name}",
        digest_of(*canonical),
        observations=observations,
        llm=False,
    )


def _graph_text(file: SourceFile) -> tuple[bytes, str] | None:
    """(bytes, text) of the file when its first record is an entity or relation of the memory
    server, else None."""
    try:
        data = file.read()
        text, _ = decode(data)
    except (OSError, ValueError, NotText):
        return None
    whole = _whole_document(text)
    first: Any = None
    if isinstance(whole, dict):
        records = [*_list(whole.get("entities")), *_list(whole.get("relations"))]
        first = records[0] if records else None
    elif isinstance(whole, list):
        first = whole[0] if whole else None
    else:
        line = next((line for line in text.splitlines() if line.strip()), "")
        try:
            first = json.loads(line)
        except (ValueError, RecursionError):
            return None
    return (data, text) if isinstance(first, dict) and _is_record(first) else None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _is_record(value: dict[str, Any]) -> bool:
    """An entity (a name and a type or observations) or a relation (a relationType)."""
    entity = isinstance(value.get("name"), str) and ("entityType" in value or "observations" in value)
    return value.get("type") in ("entity", "relation", None) and (entity or "relationType" in value)
