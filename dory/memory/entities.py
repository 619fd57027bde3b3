"""The entity registry: the people, projects, concepts, decisions and core files the corpus has.

An entity is a canonical page found by its place in the layout (SPEC §2). The registry is read
from the index's `files` rows every time it is asked for, never cached across calls, so a
long-running daemon sees an entity the moment its page is indexed and forgets it the moment the
page is deleted or superseded.
"""

from __future__ import annotations

import difflib
import json
import re
import sqlite3
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field

FAMILIES = ("core", "person", "project", "concept", "decision")
# Where each family's canonical page lives, as (pattern over the corpus-relative path, family).
_LAYOUT = (
    (re.compile(r"^people/([^/]+)\.md$"), "person"),
    (re.compile(r"^projects/([^/]+)/state\.md$"), "project"),
    (re.compile(r"^concepts/([^/]+)\.md$"), "concept"),
    (re.compile(r"^decisions/(?:canonical/)?([^/]+)\.md$"), "decision"),
    (re.compile(r"^core/([^/]+)\.md$"), "core"),
)
FAMILY_FOLDERS = {
    "person": "people",
    "project": "projects",
    "concept": "concepts",
    "decision": "decisions",
    "core": "core",
}
_RETIRED = ("superseded", "retired", "tombstoned")


def normalise_name(text: str) -> str:
    """Case, accents, punctuation and `-`/`_` do not matter when naming an entity."""
    # Punctuation and symbols of any script separate words ("Alice—Smith" is two words).
    spaced = "".join(" " if unicodedata.category(ch)[0] in "PSZ" else ch for ch in unicodedata.normalize("NFKD", text))
    folded = spaced.encode("ascii", "ignore").decode("ascii").lower()
    return " ".join(re.sub(r"[^a-z0-9]+", " ", folded).split())


def slugify(text: str) -> str:
    return normalise_name(text).replace(" ", "-")[:80].strip("-")


def page_path(family: str, slug: str) -> str:
    """Where a new canonical page for this entity goes."""
    if family == "project":
        return f"projects/{slug}/state.md"
    return f"{FAMILY_FOLDERS[family]}/{slug}.md"


def is_retired(path: str, status: object, frontmatter: Mapping[str, object]) -> bool:
    """A superseded, retired or tombstoned page is not an entity (it stays on disk as history)."""
    text = status.strip().lower() if isinstance(status, str) else ""
    return text in _RETIRED or path.endswith(".tombstone.md") or "superseded_by" in frontmatter


def layout_family(path: str) -> tuple[str, str] | None:
    """(family, slug) when `path` is a canonical page by its place in the layout."""
    for pattern, family in _LAYOUT:
        match = pattern.match(path)
        if match:
            return family, match.group(1)
    return None


@dataclass(frozen=True)
class Entity:
    id: str  # "<family>:<slug>"
    family: str
    slug: str
    path: str
    title: str
    aliases: tuple[str, ...] = ()

    def names(self) -> dict[str, str]:
        """Normalised name → how it matched (id, slug, title or alias)."""
        found = {normalise_name(alias): "alias" for alias in self.aliases}
        found[normalise_name(self.title)] = "title"
        found[normalise_name(self.slug)] = "slug"
        found.pop("", None)
        return found


@dataclass
class Resolution:
    """What a subject resolved to: one entity, or the candidates a caller should choose from."""

    subject: str
    entity: Entity | None = None
    matched_by: str | None = None
    candidates: list[Entity] = field(default_factory=list)

    @property
    def ambiguous(self) -> bool:
        return self.entity is None and len(self.candidates) > 1 and self.matched_by == "ambiguous"


class Registry:
    def __init__(self, entities: list[Entity]) -> None:
        self.entities = sorted(entities, key=lambda e: (e.family, e.slug, e.path))
        self.by_id = {e.id: e for e in self.entities}
        self.by_path = {e.path: e for e in self.entities}

    @classmethod
    def load(cls, conn: sqlite3.Connection) -> Registry:
        rows = conn.execute(
            "SELECT path, title, aliases, status, frontmatter FROM files WHERE path GLOB 'people/*' "
            "OR path GLOB 'projects/*/state.md' OR path GLOB 'concepts/*' OR path GLOB 'decisions/*' "
            "OR path GLOB 'core/*'"
        )
        entities: list[Entity] = []
        for row in rows:
            place = layout_family(row["path"])
            if place is None or is_retired(row["path"], row["status"], json.loads(row["frontmatter"] or "{}")):
                continue
            family, slug = place
            entities.append(
                Entity(
                    f"{family}:{slug}",
                    family,
                    slug,
                    row["path"],
                    row["title"],
                    tuple(json.loads(row["aliases"] or "[]")),
                )
            )
        return cls(entities)

    def resolve(self, subject: str, families: tuple[str, ...] = FAMILIES) -> Resolution:
        """Match by id or path, then slug, then title, then alias; several equal matches are
        ambiguous (reported with candidates, never guessed)."""
        result = Resolution(subject)
        pool = [e for e in self.entities if e.family in families]
        direct = self.by_id.get(subject.strip()) or self.by_path.get(subject.strip())
        if direct is not None and direct.family in families:
            result.entity, result.matched_by = direct, "id"
            return result
        key = normalise_name(subject)
        for how in ("slug", "title", "alias"):
            hits = [e for e in pool if e.names().get(key) == how]
            if len(hits) == 1:
                result.entity, result.matched_by = hits[0], how
                return result
            if len(hits) > 1:
                result.candidates, result.matched_by = hits, "ambiguous"
                return result
        result.candidates = self.nearest(key, pool)
        return result

    @staticmethod
    def nearest(key: str, pool: list[Entity], limit: int = 5) -> list[Entity]:
        """Entities whose names look like `key` (for "did you mean" lists)."""
        scored: list[tuple[float, Entity]] = []
        for entity in pool:
            best = max((difflib.SequenceMatcher(None, key, name).ratio() for name in entity.names()), default=0.0)
            if best >= 0.6 or any(key and key in name.split() for name in entity.names()):
                scored.append((best, entity))
        scored.sort(key=lambda item: (-item[0], item[1].id))
        return [entity for _, entity in scored[:limit]]
