"""Search: the scope, the request, per-stage scores and the hits it returns (durable memory and sessions)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from dory.models.common import MODE_ALIASES, SearchMode, _Model, iso_day

SearchCorpus = Literal["durable", "sessions", "all"]
EvidenceClass = Literal["canonical", "core", "note", "inbox", "generated", "raw", "session", "superseded"]
Confidence = Literal["high", "medium", "low"]


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
    min_score: float | None = Field(None, ge=0, description="leave out hits scoring below this")
    include_weak: bool = Field(
        False,
        description="also return weak hits: no keyword match and a cosine below search.vector_floor "
        "(marked weak; never logged as recalled)",
    )
    debug: bool = False
    expand: bool | None = Field(
        None,
        description="ask the configured LLM for keyword variants and a hypothetical answer, searched as extra "
        "lists (default: search.expand); without an LLM, or when it fails or is late, the plain result and a warning",
    )
    rerank: bool | None = Field(
        None,
        description="let the configured LLM reorder the top search.rerank_top results (default: search.rerank); "
        "a clear top hit stays first; on failure the plain order and a warning",
    )

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
    # Lists added by LLM query expansion: the model's keyword variants, and its hypothetical answer.
    expanded_rank: int | None = None
    expanded_score: float | None = None
    hyde_rank: int | None = None
    hyde_score: float | None = None
    rerank_from: int | None = Field(None, description="the hit's position before the LLM rerank")


class AssistReport(_Model):
    """What the optional LLM did for one search (shown with debug)."""

    expanded_lists: list[str] = Field(default_factory=list, description="lists expansion added: expanded, hyde")
    variants: list[str] = Field(default_factory=list, description="the keyword variants searched")
    hypothetical: str | None = None
    reranked: bool = False
    rerank_moved: int = Field(0, description="hits whose position the rerank changed")


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
    weak: bool | None = Field(None, description="true when no retriever found real evidence (include_weak)")
    explain: StageScores | None = None
    turn: SessionTurn | None = None


class SearchResponse(_Model):
    query: str
    mode: SearchMode
    corpus: SearchCorpus = "durable"
    hits: list[SearchHit]
    warnings: list[str] = Field(default_factory=list)
    vectors_pending: int = 0
    assist: AssistReport | None = Field(None, description="with debug, when expansion or rerank was asked for")
