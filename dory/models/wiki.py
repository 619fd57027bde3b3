"""The wiki for people: what its index lists and what one page needs to be rendered."""

from __future__ import annotations

from pydantic import Field

from dory.models.common import _Model
from dory.models.links import LinkEdge


class WikiNote(_Model):
    path: str
    title: str


class WikiCatalogue(_Model):
    compiled: list[WikiNote] = Field(description="the pages the nightly wiki-refresh job compiles under wiki/")
    notes: list[WikiNote] = Field(description="every indexed note, in path order")


class WikiTarget(_Model):
    """Where one `[[...]]` of a page leads."""

    target: str = Field(description="the target as written, without #heading and |label")
    label: str | None = None
    heading: str | None = None
    path: str | None = Field(None, description="the note it resolves to; None when nothing does")


class WikiPage(_Model):
    path: str
    title: str
    frontmatter: dict[str, object]
    frontmatter_error: str | None
    hash: str
    body: str = Field(description="the markdown after the frontmatter block")
    wikilinks: dict[str, WikiTarget] = Field(description="by the text written between the brackets")
    backlinks: list[LinkEdge] = Field(description="links and mentions into this note (none for unindexed notes)")
    backlinks_total: int
