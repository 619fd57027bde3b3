"""`dory migrate`: bring notes, chats and memories from other tools into the corpus, as runs."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from dory.models.common import _Model


class MigrateRequest(_Model):
    source: str = Field(..., min_length=1, max_length=4096, description="a folder, a zip or a file")
    from_format: str | None = Field(None, max_length=40, description="skip detection: the reader to use")
    into: str | None = Field(None, max_length=400, description="corpus folder for notes (default per format)")
    dry_run: bool = False
    estimate: bool = Field(False, description="with the dry run: the LLM calls and tokens a --llm run would spend")
    llm: bool = Field(False, description="extract claims from notes with the configured LLM")


class MigrateProblem(_Model):
    source: str
    code: str
    message: str


class MigrateClash(_Model):
    wanted: str
    used: str
    reason: str


class MigrateQuarantined(_Model):
    path: str = Field(description="where the note went instead of memory (inbox/quarantine/migrations/…)")
    reason: str


class MigrateNote(_Model):
    source: str
    note: str = Field(description="what was done to the item on the way in (re-encoded, kept as text, …)")


class MigrateEntity(_Model):
    name: str
    family: str
    path: str
    claims: int
    merged: list[str] = Field(default_factory=list, description="other spellings clustered into this entity")
    existing: bool = False


class MigrateEstimate(_Model):
    llm_calls: int
    input_tokens: int
    output_tokens: int


class MigrateResponse(_Model):
    run: str | None = Field(None, description="the run id (none for a dry run)")
    source: str
    format: str
    into: str
    dry_run: bool
    resumed: bool = False
    items: dict[str, int] = Field(default_factory=dict, description="items found, by kind")
    destinations: dict[str, int] = Field(default_factory=dict, description="files planned, by top folder")
    created: int = 0
    skipped_unchanged: int = Field(0, description="items an earlier run already imported with the same content")
    changed_since: int = Field(0, description="items imported before whose source has changed (imported again)")
    clashes: list[MigrateClash] = Field(default_factory=list)
    entities: list[MigrateEntity] = Field(default_factory=list)
    quarantined: list[MigrateQuarantined] = Field(default_factory=list)
    notes: list[MigrateNote] = Field(default_factory=list, description="items imported with a remark")
    problems: list[MigrateProblem] = Field(default_factory=list)
    estimate: MigrateEstimate | None = None
    report: str | None = None
    warnings: list[str] = Field(default_factory=list)
    seconds: float = 0.0


class MigrationRun(_Model):
    run: str
    source: str
    format: str
    into: str
    started: str
    state: str = Field(description="finished, interrupted or undone")
    created: int
    problems: int
    report: str


class MigrationRunsResponse(_Model):
    runs: list[MigrationRun]


class MigrateUndoRequest(_Model):
    run: str = Field(..., min_length=1, max_length=100)
    dry_run: bool = False


class MigrateUndoResponse(_Model):
    run: str
    dry_run: bool
    removed: list[str] = Field(default_factory=list)
    kept_edited: list[str] = Field(default_factory=list, description="created by the run, edited since: kept")
    already_gone: list[str] = Field(default_factory=list)


class InboxImport(_Model):
    """One entry of inbox/import/ the migrate-inbox job took, and what became of it (`status`)."""

    entry: str = Field(description="the file or folder name as dropped")
    outcome: Literal["migrated", "already_imported", "failed"]
    at: str = Field(description="when the job took it (UTC)")
    run: str | None = Field(None, description="the migration run, when one ran")
    report: str | None = Field(None, description="the run's report in the corpus")
    created: int = 0
    problems: int = Field(0, description="source things the run could not import (listed in the report)")
    reason: str | None = Field(None, description="why it failed")
    moved_to: str | None = Field(None, description="where the entry went (inbox/import/done/… or failed/…)")
