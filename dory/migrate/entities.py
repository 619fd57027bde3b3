"""Entities found across a source, clustered and compiled into canonical pages and claim artifacts.

Readers yield `Observation`s ("Ada Lovelace: wrote the first program"); here they meet. Names are
clustered when any of their spellings or aliases normalise alike (case, accents, punctuation, `-`
and `_`: entities.normalise_name), so "D3.js", "d3-js" and "D3 JS" are one entity. The cluster is
named by its most frequent spelling and filed in its most frequent family. An entity the corpus
already has (by id, slug, title or alias) keeps its page untouched: its new claims arrive as
evidence artifacts, which the claim store reads. A new entity gets a canonical page compiled
from its claims. Each distinct statement is one claim event with one artifact under
`sources/semantic/`, named by a hash of the claim (never by the clock), so a rerun proposes the
very same files and is recognised as already imported.

A statement may name related entities (`Observation.links`): the first mention of each becomes a
wikilink to its page when that entity is in the source or in the corpus, and stays plain text
when it is not (a dangling relation is never a broken link).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field

from dory.memory.claims import ARTIFACT_ROOT, CLAIM_KINDS, ClaimEvent
from dory.memory.entities import Entity, Registry, normalise_name, page_path, slugify
from dory.memory.semantic import artifact_bytes, new_page_bytes
from dory.migrate.model import Item, Observation, Output, ReadContext, digest_of, wikilink
from dory.models import MigrateEntity

FAMILIES = ("person", "project", "concept", "decision")
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}")


@dataclass
class EntityContext:
    """The corpus's entities (None without an index) and, after compiling, what became of each."""

    registry: Registry | None = None
    summary: list[MigrateEntity] = field(default_factory=list)


@dataclass
class _Cluster:
    keys: set[str] = field(default_factory=set)
    spellings: Counter[str] = field(default_factory=Counter)
    families: Counter[str] = field(default_factory=Counter)
    observations: list[Observation] = field(default_factory=list)


def cluster(observations: list[Observation]) -> list[_Cluster]:
    """Observations grouped by entity: two names meet when any normalised spelling is shared."""
    parent: dict[str, str] = {}

    def find(key: str) -> str:
        while parent.setdefault(key, key) != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    for obs in observations:
        keys = [k for k in (normalise_name(n) for n in (obs.name, *obs.aliases)) if k]
        for other in keys[1:]:
            parent[find(other)] = find(keys[0])
    groups: dict[str, _Cluster] = {}
    for obs in observations:
        key = normalise_name(obs.name)
        if not key:
            continue
        group = groups.setdefault(find(key), _Cluster())
        group.keys.update(k for k in (normalise_name(n) for n in (obs.name, *obs.aliases)) if k)
        group.spellings[" ".join(obs.name.split())] += 1
        group.families[obs.family if obs.family in FAMILIES else "concept"] += 1
        group.observations.append(obs)
    return [groups[k] for k in sorted(groups)]


def compile_entities(observations: list[Observation], ctx: ReadContext, ectx: EntityContext) -> list[Item]:
    """The items (pages and claim artifacts) for every entity observed; fills `ectx.summary`."""
    groups = cluster(observations)
    placed = [_place(group, ectx.registry) for group in groups]
    by_name = {key: entity for group, (entity, _) in zip(groups, placed, strict=True) for key in group.keys}
    if ectx.registry is not None:
        for entity in ectx.registry.entities:
            for name in entity.names():
                by_name.setdefault(name, entity)
    items: list[Item] = []
    ectx.summary = []
    for group, (entity, existing) in zip(groups, placed, strict=True):
        events, claim_items = _claims(group, entity, by_name, ctx)
        items += claim_items
        aliases = tuple(sorted({s for s in group.spellings if s != entity.title}))
        if not existing and events:
            page = new_page_bytes(entity, events, aliases)
            digest = digest_of("page", entity.id)
            items.append(
                Item(f"entity:{entity.id}", "entity", entity.title, digest, [Output(entity.path, page, "page")])
            )
        ectx.summary.append(
            MigrateEntity(
                name=entity.title,
                family=entity.family,
                path=entity.path,
                claims=len(events),
                merged=list(aliases),
                existing=existing,
            )
        )
    return items


def _place(group: _Cluster, registry: Registry | None) -> tuple[Entity, bool]:
    """The corpus's entity for this cluster (True), or a new one (False)."""
    title = _most_common(group.spellings)
    family = _most_common(group.families)
    if registry is not None:
        for name in [title, *sorted(group.spellings)]:
            found = registry.resolve(name, FAMILIES)
            if found.entity is not None:
                return found.entity, True
    slug = slugify(title) or "entity-" + hashlib.sha256(title.encode()).hexdigest()[:8]
    return Entity(f"{family}:{slug}", family, slug, page_path(family, slug), title), False


def _most_common(counter: Counter[str]) -> str:
    """The most frequent value; ties go to the first seen (Counter keeps insertion order)."""
    return max(counter.items(), key=lambda kv: kv[1])[0]


def _claims(
    group: _Cluster, entity: Entity, by_name: dict[str, Entity], ctx: ReadContext
) -> tuple[list[ClaimEvent], list[Item]]:
    events: list[ClaimEvent] = []
    items: list[Item] = []
    seen: set[tuple[str, str]] = set()
    for obs in group.observations:
        statement = _linked(" ".join(obs.statement.split()), obs.links, by_name, entity)
        kind = obs.kind if obs.kind in CLAIM_KINDS else "fact"
        key = normalise_name(statement)
        if not key or (kind, key) in seen:
            continue
        seen.add((kind, key))
        digest = hashlib.sha256(f"{entity.id}\n{kind}\n{statement}".encode()).hexdigest()
        at = obs.at if obs.at and _DAY.match(obs.at) else ctx.now
        day = at[:10].replace("-", "/")
        path = f"{ARTIFACT_ROOT}{day}/{entity.slug[:60]}-{digest[:12]}-added.md"
        event = ClaimEvent(f"clm-{digest[:12]}", entity.id, kind, "added", statement, at, path=path, agent="migrate")
        events.append(event)
        data = artifact_bytes(event, entity, obs.name, f"migrate:{ctx.into}")
        items.append(
            Item(f"claim:{entity.id}:{digest[:16]}", "claim", obs.name, digest, [Output(path, data, "artifact")])
        )
    return events, items


def _linked(statement: str, links: tuple[str, ...], by_name: dict[str, Entity], own: Entity) -> str:
    for name in links:
        target = by_name.get(normalise_name(name))
        if target is None or target.id == own.id:
            continue
        pattern = re.compile(re.escape(name))
        link = wikilink(target.path, name)
        statement, count = pattern.subn(link, statement, count=1)
        if not count:
            statement += f" ({link})"
    return statement
