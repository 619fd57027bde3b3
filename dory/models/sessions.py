"""The session plane: ingest and import of harness files, list, show, export, update and compaction."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from dory.models.common import MAX_INGEST_BYTES, _Model, iso_day

SessionFormat = Literal["auto", "markdown", "jsonl", "claude-code", "codex"]
Harness = Literal["claude-code", "codex"]
CompactMethod = Literal["llm", "extractive", "kept_previous"]


class SessionIngestRequest(_Model):
    content: str = Field(..., max_length=MAX_INGEST_BYTES, description="the harness file's text")
    format: SessionFormat = "auto"
    source_path: str | None = Field(None, max_length=4096, description="where it came from (format detection, ids)")
    agent: str | None = Field(None, max_length=100)
    device: str | None = Field(None, max_length=100)
    dry_run: bool = False


class IngestedSession(_Model):
    path: str
    session_id: str
    title: str
    status: str
    action: Literal["created", "appended", "updated", "unchanged", "kept_deleted"]
    messages: int
    added: int = Field(description="messages new to the transcript")


class IngestProblem(_Model):
    line: int = Field(description="1-based line of the source; 0 for the whole file")
    message: str


class SessionIngestResponse(_Model):
    source: str | None
    format: str
    sessions: list[IngestedSession]
    problems: list[IngestProblem]
    redactions: int
    dry_run: bool = False
    indexed: bool = False


class SessionInfo(_Model):
    path: str
    session_id: str
    agent: str
    device: str
    title: str
    status: str
    started: str | None = None
    updated: str | None = None
    # When the session took place: its start, else the date its transcript's header line names.
    date: str | None = None
    messages: int


class SessionListRequest(_Model):
    agent: str | None = Field(None, max_length=100)
    since: str | None = Field(None, description="YYYY-MM-DD: sessions updated on or after this day")
    status: str | None = Field(None, max_length=40)
    include_deleted: bool = False
    limit: int = Field(50, ge=1, le=10_000)

    _iso_since = field_validator("since")(lambda cls, value: iso_day(value))


class SessionListResponse(_Model):
    sessions: list[SessionInfo]
    total: int


class Turn(_Model):
    id: str
    role: str
    time: str | None = None
    kind: str = "message"
    text: str
    tool_calls: list[str] = Field(default_factory=list)
    start_line: int | None = None
    end_line: int | None = None


class SessionShowResponse(_Model):
    session: SessionInfo
    turns: list[Turn]
    total_turns: int
    summary: str | None = Field(None, description="the continuation summary, when the session was compacted")


class SessionExportResponse(_Model):
    session: SessionInfo
    format: Literal["markdown", "jsonl"]
    content: str


class SessionUpdateRequest(_Model):
    id: str = Field(..., min_length=1, max_length=300, description="session id, a unique prefix, or its path")
    action: Literal["rename", "delete", "restore"]
    title: str | None = Field(None, max_length=300)


def _all_harnesses() -> list[Harness]:
    return ["claude-code", "codex"]


class SessionImportRequest(_Model):
    since: str | None = Field(None, description="YYYY-MM-DD: only harness files modified on or after this day")
    harnesses: list[Harness] = Field(default_factory=_all_harnesses)
    dry_run: bool = False


class SessionImportResponse(_Model):
    roots: dict[str, str | None] = Field(description="where each harness keeps its sessions (None: not found)")
    files: list[SessionIngestResponse]
    counts: dict[str, int]
    warnings: list[str] = Field(default_factory=list)


class CompactRequest(_Model):
    id: str = Field(..., min_length=1, max_length=300, description="session id, unique prefix or path")
    retain: int = Field(6, ge=0, le=10_000, description="the last N messages stay verbatim, outside the summary")
    dry_run: bool = False


class FlushRequest(_Model):
    id: str = Field(..., min_length=1, max_length=300, description="session id, unique prefix or path")
    dry_run: bool = False


class FlushResponse(_Model):
    """What `flush` proposed: the durable facts of a whole session, as compaction proposes them
    (a Claude Code PreCompact hook flushes before the harness summarises the conversation away)."""

    session_id: str
    path: str
    proposals: list[str] = Field(default_factory=list, description="proposals created from durable facts")
    proposals_existing: int = Field(0, description="facts already proposed before (idempotent)")
    dry_run: bool = False
    warnings: list[str] = Field(default_factory=list)


class CompactResponse(_Model):
    session_id: str
    path: str
    summary_path: str
    method: CompactMethod
    summary: str
    words: int
    messages_before: int
    messages_after: int = Field(description="retained messages + the summary")
    tokens_before: int
    tokens_after: int
    proposals: list[str] = Field(default_factory=list, description="proposals created from durable facts")
    proposals_existing: int = Field(0, description="facts already proposed before (idempotent)")
    llm: dict[str, int] | None = Field(None, description="the LLM client's counters when one is configured")
    dry_run: bool = False
    warnings: list[str] = Field(default_factory=list)
