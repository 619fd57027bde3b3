"""Notes: reading one file (get) and raw file writes (create, append, replace, forget)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from dory.models.common import MAX_REQUEST_CHARS, _Model, check_nesting


class GetRequest(_Model):
    path: str = Field(..., min_length=1, max_length=4096)
    from_line: int = Field(1, ge=1)
    lines: int | None = Field(None, ge=1)


class GetResponse(_Model):
    path: str
    title: str
    frontmatter: dict[str, object]
    frontmatter_error: str | None
    hash: str
    total_lines: int
    from_line: int
    to_line: int
    content: str


WriteKind = Literal["create", "append", "replace", "forget"]


class WriteRequest(_Model):
    path: str = Field(..., min_length=1, max_length=4096, description="corpus-relative .md path")
    kind: WriteKind
    content: str = Field(
        "", max_length=MAX_REQUEST_CHARS, description="markdown body; may start with its own frontmatter block"
    )
    frontmatter: Annotated[dict[str, Any] | None, AfterValidator(check_nesting)] = None
    expected_hash: str | None = Field(None, description="sha256:… of the file as read; required by replace")
    reason: str | None = Field(None, max_length=2000, description="why; required by forget")
    dry_run: bool = False
    soft: bool = Field(False, description="quarantine unsafe content instead of rejecting it")
    agent: str | None = Field(None, max_length=200)
    source: str | None = Field(None, max_length=4096, description="where the content came from (a note, session, URL)")


class WriteResponse(_Model):
    path: str
    action: Literal["created", "appended", "replaced", "forgotten", "quarantined"]
    dry_run: bool
    hash: str = Field(description="hash of the file after the write (or the would-be hash on a dry run)")
    previous_hash: str | None = None
    bytes: int
    files: list[str] = Field(description="every file the write changes")
    indexed: bool = False
    generation: int | None = Field(None, description="the index generation that holds this write (None: dry run)")
    preview: str | None = Field(None, description="dry run: the content that would be written")
    tombstone: str | None = None
    quarantine: str | None = None
    reason: str | None = Field(None, description="why content was quarantined")
    provenance: str | None = Field(None, description="the write log that records who wrote this (logs/writes/)")
    warnings: list[str] = Field(default_factory=list)
