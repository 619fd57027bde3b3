"""Entities found across a source, clustered and compiled into canonical pages and claim artifacts.

Readers yield `Observation`s ("Ada Lovelace: wrote the first program"); here they meet. Names are
clustered when any of their spellings or aliases fold alike (`name_key`: case, accents,
punctuation, `-` and `_` do not count), so "D3.js", "d3-js" and "D3 JS" are one entity. The
cluster is named by its most frequent spelling (counted once per place in the source, so a record
with many observations does not outvote the others; ties go to the first seen) and filed in its
most frequent family.

`name_key` is `normalise_name` (dory.memory.entities) for Latin script, but it keeps the letters of
every other script: normalise_name folds to ASCII (the index's mention matcher depends on that),
which turns "Проект" into "" and "зонтичный-issue-7" into "issue 7", so an export written in
Russian would lose every entity and merge unrelated ones. New pages of such names get slugs in
their own script (`concepts/зонтичныи-issue-7.md`).

An entity the corpus already has (by slug, then title, then alias, as the registry resolves
subjects; several equal matches are ambiguous and never guessed) keeps its page untouched: its
new claims arrive as evidence artifacts, which the claim store reads. Clusters that land on the
same entity (two spellings the corpus knows as aliases of one page) are merged. A new entity gets
a canonical page compiled from its claims. Each distinct statement is one claim event with one
artifact under `sources/semantic/`, named by a hash of the claim (never by the clock), so a rerun
proposes the very same files and is recognised as already imported. The artifact records where
the statement came from (`source`) and links the imported note that holds it (`evidence`).

A statement may name related entities (`Observation.links`): the first mention of each becomes a
wikilink to its page when that entity is in the source or in the corpus, and stays plain text
when it is not (a dangling relation is never a broken link).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field

from dory.memory.claims import ARTIFACT_ROOT, CLAIM_KINDS, ClaimEvent
from dory.memory.entities import Entity, Registry, page_path
from dory.memory.semantic import artifact_bytes, new_page_bytes
from dory.migrate.model import Item, Observation, Output, ReadContext, digest_of, wikilink
from dory.models import MigrateEntity

FAMILIES = ("person", "project", "concept", "decision")
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}")
_WIKILINK = re.compile(r"\[\[[^\]\n]*\]\]")
_MATCH_RANK = {"slug": 0, "title": 1, "alias": 2}
_SUFFIX_SIGNS = {"+": " plus", "#": " sharp"}  # the registry's order: slug, then title, then alias


def name_key(text: str) -> str:
    """A name folded for clustering: accents dropped, letters and digits of any script lowercased,
    everything else a word break, except `+` and `#` written right after a word ("C++", "C#",
    "F#" are not "C")."""
    chars: list[str] = []
    for char in unicodedata.normalize("NFKD", text):
        category = unicodedata.category(char)
        if category == "Mn":
            continue
        if char in _SUFFIX_SIGNS and chars and chars[-1] not in " ":
            chars.append(_SUFFIX_SIGNS[char])
            continue
        chars.append(char.lower() if category[0] in "LN" else " ")
    return " ".join("".join(chars).split())


def slug_of(title: str) -> str:
    return name_key(title).replace(" ", "-")[:80].strip("-")


@dataclass
class EntityContext:
    """The corpus's entities (None without an index) and, after compiling, what became of each."""

    registry: Registry | None = None
    summary: list[MigrateEntity] = field(default_factory=list)


@dataclass
class _Cluster:
    keys: set[str] = field(default_factory=set)
    spellings: Counter[str] = field(default_factory=Counter)
    aliases: set[str] = field(default_factory=set)
    families: Counter[str] = field(default_factory=Counter)
    observations: list[Observation] = field(default_factory=list)
    sources: set[tuple[str, str]] = field(default_factory=set)  # (spelling, source place) counted

    def absorb(self, other: _Cluster) -> None:
        self.keys |= other.keys
        self.spellings.update(other.spellings)
        self.aliases |= other.aliases
        self.families.update(other.families)
        self.observations += other.observations
        self.sources |= other.sources


def cluster(observations: list[Observation]) -> list[_Cluster]:
    """Observations grouped by entity: two names meet when any folded spelling is shared."""
    parent: dict[str, str] = {}

    def find(key: str) -> str:
        while parent.setdefault(key, key) != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    for obs in observations:
        keys = [k for k in (name_key(n) for n in (obs.name, *obs.aliases)) if k]
        for other in keys[1:]:
            parent[find(other)] = find(keys[0])
    groups: dict[str, _Cluster] = {}
    for obs in observations:
        key = name_key(obs.name)
        if not key:
            continue
        group = groups.setdefault(find(key), _Cluster())
        group.keys.update(k for k in (name_key(n) for n in (obs.name, *obs.aliases)) if k)
        spelling = " ".join(obs.name.split())
        if not obs.source or (spelling, obs.source) not in group.sources:  # a spelling counts once a place
            group.spellings[spelling] += 1
            group.sources.add((spelling, obs.source))
        group.aliases.update(" ".join(a.split()) for a in obs.aliases if name_key(a))
        group.families[obs.family if obs.family in FAMILIES else "concept"] += 1
        group.observations.append(obs)
    return [groups[k] for k in sorted(groups)]


def compile_entities(observations: list[Observation], ctx: ReadContext, ectx: EntityContext) -> list[Item]:
    """The items (pages and claim artifacts) for every entity observed; fills `ectx.summary`."""
    known = _known(ectx.registry, FAMILIES)
    placed: dict[str, tuple[Entity, bool, _Cluster]] = {}
    for group in cluster(observations):
        entity, existing = _place(group, known)
        if entity.id in placed:  # two clusters the corpus knows as one entity
            placed[entity.id][2].absorb(group)
        else:
            placed[entity.id] = (entity, existing, group)
    by_name = {key: entity for entity, _, group in placed.values() for key in group.keys}
    for key, entity in _known(ectx.registry, None).items():
        by_name.setdefault(key, entity)
    items: list[Item] = []
    ectx.summary = []
    for entity, existing, group in placed.values():
        events, claim_items = _claims(group, entity, by_name, ctx)
        items += claim_items
        aliases = tuple(sorted({*group.spellings, *group.aliases} - {entity.title}))
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


def _known(registry: Registry | None, families: tuple[str, ...] | None) -> dict[str, Entity]:
    """The corpus's entities by folded name, resolved as the registry resolves a subject: a slug
    match beats a title match beats an alias match; several equal matches are ambiguous (left out)."""
    if registry is None:
        return {}
    found: dict[str, tuple[int, list[Entity]]] = {}
    for entity in registry.entities:
        if families is not None and entity.family not in families:
            continue
        names = [(entity.slug, "slug"), (entity.title, "title"), *((alias, "alias") for alias in entity.aliases)]
        for name, how in names:
            key, rank = name_key(name), _MATCH_RANK[how]
            if not key:
                continue
            best = found.get(key)
            if best is None or rank < best[0]:
                found[key] = (rank, [entity])
            elif rank == best[0] and entity not in best[1]:
                best[1].append(entity)
    return {key: hits[0] for key, (_, hits) in found.items() if len(hits) == 1}


def _place(group: _Cluster, known: dict[str, Entity]) -> tuple[Entity, bool]:
    """The corpus's entity for this cluster (True), or a new one (False)."""
    title = _most_common(group.spellings)
    family = _most_common(group.families)
    for name in [title, *sorted(group.spellings), *sorted(group.aliases)]:
        entity = known.get(name_key(name))
        if entity is not None:
            return entity, True
    slug = slug_of(title) or "entity-" + hashlib.sha256(title.encode()).hexdigest()[:8]
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
        key = name_key(statement)
        if not key or (kind, key) in seen:
            continue
        seen.add((kind, key))
        digest = hashlib.sha256(f"{entity.id}\n{kind}\n{statement}".encode()).hexdigest()
        at = obs.at if obs.at and _DAY.match(obs.at) else ctx.now
        day = at[:10].replace("-", "/")
        path = f"{ARTIFACT_ROOT}{day}/{entity.slug[:60]}-{digest[:12]}-added.md"
        event = ClaimEvent(f"clm-{digest[:12]}", entity.id, kind, "added", statement, at, path=path, agent="migrate")
        events.append(event)
        evidence = wikilink(obs.evidence, obs.evidence.rsplit("/", 1)[-1].removesuffix(".md")) if obs.evidence else None
        data = artifact_bytes(event, entity, obs.name, obs.source or f"migrate:{ctx.into}", evidence)
        items.append(
            Item(f"claim:{entity.id}:{digest[:16]}", "claim", obs.name, digest, [Output(path, data, "artifact")])
        )
    return events, items


def _linked(statement: str, links: tuple[str, ...], by_name: dict[str, Entity], own: Entity) -> str:
    """`statement` with the first mention of each linked entity as a wikilink (a name not found in
    the text is linked after it); names of no known entity stay as written."""
    for name in links:
        target = by_name.get(name_key(name))
        if target is None or target.id == own.id:
            continue
        link = wikilink(target.path, name)
        statement, found = _replace_first(statement, name, link)
        if not found:
            statement += f" ({link})"
    return statement


def _replace_first(text: str, name: str, link: str) -> tuple[str, bool]:
    """The first mention of `name` as a whole word outside any wikilink, replaced by `link`."""
    before = r"(?<!\w)" if re.match(r"\w", name) else ""
    after = r"(?!\w)" if re.search(r"\w$", name) else ""
    pattern = re.compile(before + re.escape(name) + after)
    start = 0
    for span in [*_WIKILINK.finditer(text), None]:
        end = span.start() if span is not None else len(text)
        match = pattern.search(text, start, end)
        if match is not None:
            return text[: match.start()] + link + text[match.end() :], True
        if span is not None:
            start = span.end()
    return text, False
