"""The link graph: edges around a note and the broken-link and orphan lint."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from dory.models.common import _Model

LinkKind = Literal["wikilink", "markdown", "mention"]


class LinkEdge(_Model):
    source: str = Field(description="the note the link is written in")
    target: str = Field(description="the note it resolves to, or the target as written when broken")
    kind: LinkKind
    line: int = Field(description="1-based line of the link in the source note")
    label: str | None = None
    heading: str | None = None
    resolved: bool = True


class LinkRequest(_Model):
    path: str = Field(..., min_length=1, max_length=4096)
    direction: Literal["out", "in", "both"] = "both"
    depth: int = Field(1, ge=1, le=5)
    max_edges: int = Field(40, ge=1, le=10_000)
    exclude_prefix: list[str] = Field(default_factory=list, description="drop edges touching these path prefixes")
    mentions: bool = Field(True, description="include implicit mentions of known entities")


class LinkResponse(_Model):
    path: str
    direction: str
    depth: int
    edges: list[LinkEdge]
    count: int
    total: int
    truncated: bool


class BrokenLink(_Model):
    source: str
    line: int
    target: str
    kind: LinkKind
    reason: str


class LinkLintRequest(_Model):
    max_items: int = Field(200, ge=1, le=100_000)
    exclude_prefix: list[str] = Field(default_factory=list)


class LinkLintResponse(_Model):
    files: int
    edges: int
    broken: list[BrokenLink]
    broken_total: int
    orphans: list[str] = Field(description="notes with no links in or out")
    orphans_total: int
    truncated: bool
