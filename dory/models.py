"""Request and response models shared by every surface (CLI --json, HTTP, MCP).

One definition each: the CLI builds these from flags, HTTP from JSON bodies, MCP from tool
arguments, and all of them serialise the same response with `model_dump(mode="json")`.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SearchMode = Literal["bm25", "vector", "hybrid", "exact", "recall"]
MODE_ALIASES: dict[str, SearchMode] = {
    "bm25": "bm25",
    "text": "bm25",
    "keyword": "bm25",
    "lexical": "bm25",
    "vector": "vector",
    "semantic": "vector",
    "hybrid": "hybrid",
    "exact": "exact",
    "recall": "recall",
}
SearchCorpus = Literal["durable", "sessions", "all"]
EvidenceClass = Literal["canonical", "core", "note", "inbox", "generated", "raw", "session", "superseded"]
Confidence = Literal["high", "medium", "low"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


def iso_day(value: str | None) -> str | None:
    """A YYYY-MM-DD day (a longer ISO time is cut to its day), for since/until fields."""
    if value is None:
        return None
    try:
        return dt.date.fromisoformat(value[:10]).isoformat()
    except ValueError as exc:
        raise ValueError(f"not a YYYY-MM-DD date: {value!r}") from exc


class Scope(_Model):
    path: str | None = Field(None, description="glob over corpus-relative paths, e.g. 'projects/**'")
    type: list[str] = Field(default_factory=list)
    status: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list, description="all listed tags must be present")
    since: str | None = Field(None, description="YYYY-MM-DD; compares the note's date/updated/created")
    until: str | None = None
    # Session plane only (corpus sessions/all, mode recall); `status` there is the session's status.
    agent: str | None = Field(None, max_length=200)
    device: str | None = Field(None, max_length=200)
    session_id: str | None = Field(None, max_length=200)

    _iso_dates = field_validator("since", "until")(lambda cls, value: iso_day(value))

    def is_empty(self) -> bool:
        """True when nothing narrows a durable search (the session-only fields do not)."""
        return not (self.path or self.type or self.status or self.tags or self.since or self.until)


class SearchRequest(_Model):
    query: str = Field(..., min_length=1, max_length=4000)
    mode: str = "hybrid"
    corpus: SearchCorpus = Field("durable", description="durable memory, the session plane, or both")
    record: bool = Field(
        True,
        description="log the top hits as recall events (dreaming promotes notes that many different queries recall)",
    )
    k: int = Field(10, ge=1, le=200)
    scope: Scope = Field(default_factory=Scope)
    per_file: bool = Field(True, description="at most one result per file (its best chunk)")
    debug: bool = False

    @field_validator("mode")
    @classmethod
    def _known_mode(cls, value: str) -> str:
        mode = MODE_ALIASES.get(value.lower())
        if mode is None:
            raise ValueError(f"unknown mode {value!r}; use one of bm25, vector, hybrid, exact, recall")
        return mode

    @model_validator(mode="after")
    def _recall_reads_sessions(self) -> SearchRequest:
        """`recall` is hybrid search over the session plane; it never reads durable memory alone."""
        if self.mode == "recall" and self.corpus == "durable":
            self.corpus = "sessions"
        if self.mode == "exact" and self.corpus != "durable":
            raise ValueError("exact mode searches durable memory only; use bm25 or recall for sessions")
        return self

    @field_validator("query")
    @classmethod
    def _no_nul(cls, value: str) -> str:
        if "\x00" in value:
            raise ValueError("query contains a NUL byte")
        if not value.strip():
            raise ValueError("query is blank")
        return value


class StageScores(_Model):
    bm25_rank: int | None = None
    bm25_score: float | None = None
    vector_rank: int | None = None
    vector_score: float | None = None
    fused: float | None = None
    policy_factor: float | None = None
    policy_rules: list[str] = Field(default_factory=list)
    final: float


class SessionTurn(_Model):
    """Where a session hit points: the turn, not only the file."""

    session_id: str
    message_id: str = Field(description="the turn's anchor in the transcript (m-<12 hex>)")
    agent: str
    role: str
    time: str | None = None


class SearchHit(_Model):
    path: str
    title: str
    chunk_id: str
    start_line: int
    end_line: int
    heading_path: list[str]
    snippet: str
    evidence_class: EvidenceClass
    confidence: Confidence
    score: float
    stale_warning: str | None = None
    explain: StageScores | None = None
    turn: SessionTurn | None = None


class SearchResponse(_Model):
    query: str
    mode: SearchMode
    corpus: SearchCorpus = "durable"
    hits: list[SearchHit]
    warnings: list[str] = Field(default_factory=list)
    vectors_pending: int = 0


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


class SkippedFile(_Model):
    path: str
    reason: str
    detail: str


class JobRun(_Model):
    """One run of a scheduled job (or why it did not run)."""

    job: str
    period: str
    status: Literal["ok", "warning", "deferred", "failed", "running", "interrupted", "skipped", "dry_run"]
    trigger: str
    started: str | None = None
    ended: str | None = None
    attempts: int = 0
    outputs: dict[str, Any] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    error: str | None = None
    reason: str | None = None  # why a run was skipped


class DaemonStatus(_Model):
    """What `dory ops watch` reports about itself (through `<state>/daemon.json`)."""

    running: bool
    pid: int | None = None
    started_at: str | None = None
    uptime_s: float | None = None
    heartbeat_at: str | None = None
    heartbeat_age_s: float | None = None
    idle: bool = False  # nothing queued, nothing being written or embedded
    pending_paths: int = 0  # changed paths waiting for their debounce
    vectors_pending: int = 0
    watcher: dict[str, Any] = Field(default_factory=dict)
    writer: dict[str, Any] = Field(default_factory=dict)
    embedder: dict[str, Any] = Field(default_factory=dict)
    last_error: str | None = None
    note: str | None = None  # e.g. a stale record left by a daemon that died


class StatusResponse(_Model):
    corpus: str
    state_dir: str
    files_on_disk: int
    files_indexed: int
    chunks: int
    vectors: int
    vectors_pending: int
    pending_changes: int
    embedder: str
    fingerprint: dict[str, object] | None
    fingerprint_matches: bool
    vector_index: str
    skipped: list[SkippedFile]
    broken_frontmatter: list[SkippedFile]
    last_reindex: str | None
    index_bytes: int
    daemon: DaemonStatus = Field(default_factory=lambda: DaemonStatus(running=False))
    jobs: list[JobRun] = Field(default_factory=list)  # each job's last run
    sessions: dict[str, int] = Field(
        default_factory=dict, description="the session plane: sessions, turns, turn vectors still to embed"
    )
    warnings: list[str] = Field(default_factory=list)


class ReindexRequest(_Model):
    full: bool = False
    plan_only: bool = False
    vectors: bool = True
    # How long to wait for another writer (a running reindex) to release the index lock.
    wait_s: float = Field(0.0, ge=0, le=86_400)


class ReindexResponse(_Model):
    new: int
    changed: int
    renamed: int
    deleted: int
    touched: int
    unchanged: int
    skipped: list[SkippedFile]
    chunks_written: int
    vectors_embedded: int
    vectors_reused: int
    vectors_pending: int
    seconds: float
    sessions_indexed: int = Field(0, description="transcripts (re)indexed in the session plane")
    sessions_deleted: int = 0
    session_vectors_embedded: int = 0
    planned_paths: dict[str, list[str]] | None = None
    warnings: list[str] = Field(default_factory=list)


class EvalRequest(_Model):
    queries_file: str
    modes: list[str] = Field(default_factory=lambda: ["bm25", "vector", "hybrid"])
    k: int = Field(10, ge=1, le=200)
    scope_field: str | None = Field(None, description="query field holding a path-prefix scope")
    per_query: bool = False

    @field_validator("modes")
    @classmethod
    def _known_modes(cls, values: list[str]) -> list[str]:
        out = []
        for value in values:
            mode = MODE_ALIASES.get(value.strip().lower())
            if mode is None:
                raise ValueError(f"unknown mode {value!r}")
            out.append(mode)
        return out


class EvalQueryResult(_Model):
    id: str
    query: str
    ranks: dict[str, int | None]


class EvalModeResult(_Model):
    mode: SearchMode
    recall_at_k: float
    mrr_at_10: float
    ndcg_at_10: float
    queries: int
    per_query: list[EvalQueryResult] | None = None


class EvalResponse(_Model):
    k: int
    queries: int
    modes: list[EvalModeResult]
    warnings: list[str] = Field(default_factory=list)


class JobRunRequest(_Model):
    job: str = Field(min_length=1, max_length=64)
    period: str | None = Field(None, min_length=1, max_length=64)
    force: bool = False
    dry_run: bool = False
    fix: bool = Field(False, description="maintain: also make the safe mechanical fixes (implies force)")


class JobInfo(_Model):
    name: str
    description: str
    schedule: str
    enabled: bool
    next_run: str | None
    last_run: JobRun | None
    recent_runs: list[JobRun] = Field(default_factory=list)  # newest first, a handful
    warnings: list[str] = Field(default_factory=list)


class JobsResponse(_Model):
    daemon_running: bool
    jobs: list[JobInfo]


# -- link graph ------------------------------------------------------------------------------
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


# -- writes ----------------------------------------------------------------------------------
WriteKind = Literal["create", "append", "replace", "forget"]
# Content is checked against `[write] max_bytes` by the safety scan (a specific error); this
# bound only stops a request from exhausting memory before that.
MAX_REQUEST_CHARS = 4_000_000


class WriteRequest(_Model):
    path: str = Field(..., min_length=1, max_length=4096, description="corpus-relative .md path")
    kind: WriteKind
    content: str = Field(
        "", max_length=MAX_REQUEST_CHARS, description="markdown body; may start with its own frontmatter block"
    )
    frontmatter: dict[str, Any] | None = None
    expected_hash: str | None = Field(None, description="sha256:… of the file as read; required by replace")
    reason: str | None = Field(None, max_length=2000, description="why; required by forget")
    dry_run: bool = False
    soft: bool = Field(False, description="quarantine unsafe content instead of rejecting it")
    agent: str | None = Field(None, max_length=200)


class WriteResponse(_Model):
    path: str
    action: Literal["created", "appended", "replaced", "forgotten", "quarantined"]
    dry_run: bool
    hash: str = Field(description="hash of the file after the write (or the would-be hash on a dry run)")
    previous_hash: str | None = None
    bytes: int
    files: list[str] = Field(description="every file the write changes")
    indexed: bool = False
    preview: str | None = Field(None, description="dry run: the content that would be written")
    tombstone: str | None = None
    quarantine: str | None = None
    reason: str | None = Field(None, description="why content was quarantined")
    warnings: list[str] = Field(default_factory=list)


# -- semantic writes and proposals -----------------------------------------------------------
ClaimKind = Literal["fact", "preference", "state", "decision", "note"]
Family = Literal["person", "project", "concept", "decision", "core"]


class EntityRef(_Model):
    id: str
    family: str
    path: str
    title: str


class MemoryWriteRequest(_Model):
    subject: str = Field(..., min_length=1, max_length=300, description="who or what: a name, slug, alias or id")
    content: str = Field(..., min_length=1, max_length=MAX_REQUEST_CHARS, description="the statement")
    kind: ClaimKind = "fact"
    action: Literal["write", "replace", "forget"] = "write"
    scope: Family | None = Field(None, description="the family to look in; a new page is made there if none matches")
    reason: str | None = Field(None, max_length=2000)
    allow_canonical: bool = Field(False, description="allow a live write into a canonical page")
    dry_run: bool = False
    soft: bool = Field(False, description="quarantine instead of failing on unsafe content or an unknown subject")
    agent: str | None = Field(None, max_length=200)
    source: str | None = Field(None, max_length=4096, description="where the statement came from (a note or session)")


class MemoryWriteResponse(_Model):
    subject: str
    action: Literal["written", "replaced", "forgotten", "unchanged", "quarantined"]
    dry_run: bool
    entity: EntityRef | None = None
    matched_by: str | None = Field(None, description="id, slug, title, alias, or new (a page is created)")
    target_path: str | None = None
    page_hash: str | None = Field(None, description="the page's hash after the write")
    previous_page_hash: str | None = None
    evidence_path: str | None = None
    claim_id: str | None = None
    ended_claims: list[str] = Field(default_factory=list, description="claims superseded or retired")
    files: list[str] = Field(default_factory=list)
    indexed: bool = False
    preview: str | None = Field(None, description="dry run: the page as it would be rendered")
    quarantine: str | None = None
    reason: str | None = None
    warnings: list[str] = Field(default_factory=list)


ProposalStatus = Literal["proposed", "applied", "rejected"]


class ProposalCreateRequest(_Model):
    write: MemoryWriteRequest
    id: str | None = Field(None, max_length=120, description="an explicit id (slugified); default from the content")


class Proposal(_Model):
    id: str
    status: ProposalStatus
    created_at: str
    digest: str = Field(description="hash of source + subject + kind + action + content: the idempotency key")
    write: MemoryWriteRequest
    plan: MemoryWriteResponse = Field(description="the dry run made when the proposal was created")
    target_hash: str | None = Field(None, description="the target page's hash at creation (None: not yet created)")
    risk: dict[str, bool] = Field(default_factory=dict)
    applied_at: str | None = None
    result: MemoryWriteResponse | None = None
    rejected_at: str | None = None
    rejected_reason: str | None = None
    stale_at: str | None = Field(None, description="when an apply found it stale (it may then be created again)")


class ProposalCreateResponse(_Model):
    proposal: Proposal
    created: bool = Field(description="False when the same proposal already existed")


class ProposalListResponse(_Model):
    proposals: list[Proposal]
    counts: dict[str, int]
    warnings: list[str] = Field(default_factory=list, description="proposal files that could not be read")


class ProposalDecision(_Model):
    id: str = Field(..., min_length=1, max_length=200)
    reason: str | None = Field(None, max_length=2000)


# -- wake ---------------------------------------------------------------------------------------

WakeProfileName = Literal["default", "coding", "writing", "privacy", "casual"]


class WakeRequest(_Model):
    profile: str = Field(
        "default",
        min_length=1,
        max_length=64,
        description="default, coding, writing, privacy, casual, or one defined in dory.toml",
    )
    project: str | None = Field(None, max_length=200, description="a project's slug, title or alias")
    budget: int | None = Field(None, ge=50, le=1500, description="hard token budget (default from [wake])")
    max_chars: int | None = Field(None, ge=500, le=10_000, description="hard character cap of the block")
    agent: str | None = Field(None, max_length=100)


class WakeSection(_Model):
    name: str
    source: str = Field(description="the corpus path the section came from, or the computed section's name")
    tokens: int
    truncated: bool = False


class WakeResponse(_Model):
    profile: str
    block: str
    tokens: int
    chars: int
    budget: int
    max_chars: int
    sections: list[WakeSection]
    omitted: list[str] = Field(default_factory=list, description="sources left out, with why")
    frozen_at: str
    warnings: list[str] = Field(default_factory=list)


# -- sessions -----------------------------------------------------------------------------------

SessionFormat = Literal["auto", "markdown", "jsonl", "claude-code", "codex"]
# A harness file this large is refused before parsing (Claude Code transcripts reach ~15 MB).
MAX_INGEST_BYTES = 64 * 1024 * 1024


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


class IndexPathsRequest(_Model):
    paths: list[str] = Field(..., max_length=100_000)


class SessionImportRequest(_Model):
    since: str | None = Field(None, description="YYYY-MM-DD: only harness files modified on or after this day")
    harnesses: list[Literal["claude-code", "codex"]] = Field(default_factory=lambda: ["claude-code", "codex"])
    dry_run: bool = False


class SessionImportResponse(_Model):
    roots: dict[str, str | None] = Field(description="where each harness keeps its sessions (None: not found)")
    files: list[SessionIngestResponse]
    counts: dict[str, int]
    warnings: list[str] = Field(default_factory=list)


# -- context packing ----------------------------------------------------------------------------


class PackInput(_Model):
    """One message of an in-memory conversation handed to `context pack` (HTTP, MCP, library)."""

    id: str | None = Field(None, max_length=200, description="a stable id (default: computed from the content)")
    role: Literal["user", "assistant", "tool", "system"]
    content: str = Field(..., max_length=MAX_INGEST_BYTES)
    kind: Literal["message", "tool_result", "image", "summary"] = "message"
    time: str | None = None
    weight: float = Field(0.0, ge=0, le=100, description="how much the agent relies on it (see `context mark`)")


class ContextPackRequest(_Model):
    session: str | None = Field(None, max_length=300, description="a stored session's id, prefix or path")
    messages: list[PackInput] | None = Field(None, description="or an in-memory conversation")
    query: str | None = Field(None, max_length=20_000, description="what the next turn is about")
    budget: int = Field(..., ge=256, le=2_000_000, description="tokens the model may see")
    reserve: int | None = Field(None, ge=0, description="tokens kept free for the answer (default [context])")
    min_recent: int | None = Field(None, ge=0, le=1000, description="the last N messages are always kept")
    beta: float | None = Field(None, ge=0, le=1, description="utility = β·relevance + (1−β)·agent weight")
    system: str | None = Field(None, max_length=200_000, description="the system block (protected)")
    wake_profile: str | None = Field(None, max_length=64, description="prepend `dory wake` with this profile")

    @model_validator(mode="after")
    def _one_source(self) -> ContextPackRequest:
        if (self.session is None) == (self.messages is None):
            raise ValueError("give exactly one of session and messages")
        return self


class PackedItem(_Model):
    kind: Literal["system", "summary", "placeholder", "recalled", "message"]
    id: str | None = Field(None, description="message or chunk id (m-<hex> or m-<hex>#<n>)")
    role: str
    time: str | None = None
    text: str
    tokens: int


class ArchivedRange(_Model):
    first_id: str
    last_id: str
    messages: int
    tokens: int
    gist: str
    recalled: list[str] = Field(default_factory=list, description="chunks of this range shown as recalled items")


class ContextPackResponse(_Model):
    lane: Literal["pass_through", "packed"]
    budget: int
    available: int = Field(description="budget minus reserve")
    tokens: int
    fill_ratio: float = Field(description="tokens / available")
    items: list[PackedItem]
    archived: list[ArchivedRange]
    recalled: list[str]
    protected: list[str] = Field(description="ids kept whatever their score (the last N messages)")
    warnings: list[str] = Field(default_factory=list)


class RemindRequest(_Model):
    ids: list[str] = Field(..., min_length=1, max_length=200)
    session: str | None = Field(None, max_length=300, description="narrow the lookup to this session")


class RemindItem(_Model):
    id: str
    session_id: str
    path: str
    role: str
    time: str | None = None
    text: str = Field(description="the archived text exactly as stored")


class RemindResponse(_Model):
    items: list[RemindItem]
    missing: list[str] = Field(default_factory=list)


class MarkRequest(_Model):
    id: str = Field(..., min_length=1, max_length=200, description="a message id (m-<hex>)")
    weight: float = Field(..., ge=0, le=100)
    session: str | None = Field(None, max_length=300)


class MarkResponse(_Model):
    id: str
    session_id: str
    path: str
    weight: float


class CompactRequest(_Model):
    id: str = Field(..., min_length=1, max_length=300, description="session id, unique prefix or path")
    retain: int = Field(6, ge=0, le=10_000, description="the last N messages stay verbatim, outside the summary")
    dry_run: bool = False


class CompactResponse(_Model):
    session_id: str
    path: str
    summary_path: str
    method: Literal["llm", "extractive", "kept_previous"]
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
