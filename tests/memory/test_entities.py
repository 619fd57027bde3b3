"""The entity registry: found from the layout, read fresh from the index, ambiguity reported."""

from __future__ import annotations

from collections.abc import Callable

from dory.memory.entities import Registry, layout_family, normalise_name, slugify
from dory.models import ReindexRequest
from dory.service import DoryService


def test_layout_names_the_families() -> None:
    assert layout_family("people/ada-lovelace.md") == ("person", "ada-lovelace")
    assert layout_family("projects/atlas/state.md") == ("project", "atlas")
    assert layout_family("projects/atlas/notes.md") is None
    assert layout_family("decisions/canonical/use-x.md") == ("decision", "use-x")
    assert layout_family("people/team/ada.md") is None
    assert normalise_name("Zoë  O'Brien_Smith") == "zoe o brien smith" and slugify("Zoë O'Brien") == "zoe-o-brien"


def test_registry_follows_the_index(lexical_service: Callable[[dict[str, str | bytes]], DoryService]) -> None:
    svc = lexical_service(
        {
            "people/ada.md": "---\ntitle: Ada Lovelace\naliases: [Countess]\n---\nx\n",
            "people/old.md": "---\ntitle: Old Friend\nstatus: superseded\n---\nx\n",
            "projects/engine/state.md": "---\ntitle: Analytical Engine\naliases: [Countess]\n---\nx\n",
            "knowledge/ada.md": "# Not an entity\n",
        }
    )
    svc.reindex(ReindexRequest())
    registry = Registry.load(svc.store.conn)
    assert [e.id for e in registry.entities] == ["person:ada", "project:engine"]  # superseded pages drop out
    assert registry.resolve("ada lovelace").entity.id == "person:ada"
    assert registry.resolve("ADA").matched_by == "slug"
    assert registry.resolve("people/ada.md").matched_by == "id"
    clash = registry.resolve("Countess")
    assert clash.entity is None and clash.ambiguous and len(clash.candidates) == 2
    assert registry.resolve("Countess", ("project",)).entity.id == "project:engine"
    assert [e.id for e in registry.resolve("Ada Lovelac").candidates] == ["person:ada"]

    (svc.settings.corpus / "people/ada.md").unlink()
    svc.reindex(ReindexRequest())
    assert [e.id for e in Registry.load(svc.store.conn).entities] == ["project:engine"]  # no stale entry
