"""The index: reindex, index-these-paths, status, and the files it skipped."""

from __future__ import annotations

from pydantic import Field

from dory.models.common import _Model
from dory.models.jobs import DaemonStatus, JobRun
from dory.models.migrate import InboxImport


class SkippedFile(_Model):
    path: str
    reason: str
    detail: str


class EmbeddingProgress(_Model):
    """The daemon's embedder working through a backlog of chunks."""

    chunks_pending: int = Field(description="chunks waiting for their vector")
    rate_per_s: float | None = Field(
        None, description="chunks the embedder embedded per second over its recent batches; none until measured"
    )
    eta_s: float | None = Field(
        None, description="seconds until the pending chunks have vectors at that rate; none while estimating"
    )


class StatusResponse(_Model):
    corpus: str
    state_dir: str
    name: str | None = Field(None, description="the corpus's name in corpora.toml, when it is listed there")
    read_only: bool = Field(
        False, description="Dory never writes into the corpus folder (`dory add` without --writable)"
    )
    output: str | None = Field(
        None, description="where digests, the wiki, proposals and sessions go; none when the corpus has no output"
    )
    files_on_disk: int
    files_indexed: int
    chunks: int
    vectors: int
    vectors_pending: int = Field(description="chunks waiting for the vector pass: no vector yet, or a stale one")
    vectors_stale: int = Field(
        description="vectors computed from an input that has since changed (a rename); 0 after the vector pass"
    )
    pending_changes: int
    generation: int = Field(0, description="raised by every change of the index; writes return the one holding them")
    embedder: str
    fingerprint: dict[str, object] | None
    fingerprint_matches: bool
    vector_index: str
    skipped: list[SkippedFile]
    broken_frontmatter: list[SkippedFile]
    last_reindex: str | None
    index_bytes: int
    daemon: DaemonStatus = Field(default_factory=lambda: DaemonStatus(running=False))
    embedding: EmbeddingProgress | None = Field(
        None, description="the daemon's embedder and its backlog; none when nothing is pending or no daemon embeds"
    )
    jobs: list[JobRun] = Field(default_factory=list)  # each job's last run
    imports: list[InboxImport] = Field(
        default_factory=list, description="the last entries of inbox/import/ migrated by the daemon, newest first"
    )
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
    generation: int = Field(0, description="the index generation that holds this change (see `status`)")
    warnings: list[str] = Field(default_factory=list)


class IndexPathsRequest(_Model):
    paths: list[str] = Field(..., max_length=100_000)
