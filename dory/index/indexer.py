"""Bring the index in line with the corpus: the lexical pass, then the vector pass.

Reconcile compares each note's size and mtime with its row; only files that differ are read and
hashed. Same hash → only the stat is updated; a deleted path whose hash reappears under a new path
is a rename (rows move, nothing is re-chunked or re-embedded); otherwise the file is re-chunked.
The lexical pass commits in batches, so new text is searchable before any vector exists; the
vector pass embeds only chunks whose content hash is not in the embedding cache.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from dory.config import Settings
from dory.corpus.chunking import CHUNKER_VERSION, CountMany, chunk_lines
from dory.corpus.document import Document, ReadProblem, read_document
from dory.corpus.paths import IgnoreRules
from dory.corpus.roots import read_root, scan_notes
from dory.corpus.scan import FileStat, ScanResult, Skip
from dory.index.eta import Progress, no_progress
from dory.index.store import IndexedFile, IndexStore, now_iso
from dory.index.vectors import VectorStore

log = logging.getLogger("dory.index")

# Skips that judge a file's bytes: while its size and mtime stay the same it is not read again. A
# permission, a file type or a link count changes without touching either, so those are retried. So
# is `index_failed`: the failure may have been transient, and a note that never changes (a claim
# artifact) would otherwise stay out of the index until a full reindex.
BYTES_VERDICTS = frozenset({"too_large", "empty", "not_utf8", "nul_bytes"})


@dataclass
class Plan:
    new: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    renamed: list[tuple[str, str]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    touched: list[str] = field(default_factory=list)  # stat changed, bytes did not
    unchanged: int = 0
    skipped: list[Skip] = field(default_factory=list)
    deletions_withheld: str | None = None  # why a scan's missing files were not deleted


@dataclass
class LexicalReport:
    plan: Plan
    chunks_written: int = 0
    chunker: str = ""


def _still_bad(skip: Skip, st: FileStat) -> bool:
    """A file skipped for its bytes whose size and mtime have not changed since."""
    return skip.reason in BYTES_VERDICTS and (skip.size, skip.mtime_ns) == (st.size, st.mtime_ns)


class Indexer:
    def __init__(self, settings: Settings, store: IndexStore, count_many: CountMany, counter_id: str) -> None:
        self.settings = settings
        self.store = store
        self.count_many = count_many
        self.chunker_id = f"{CHUNKER_VERSION}:{counter_id}:{settings.index.chunk_tokens}:{settings.index.chunk_overlap}"
        self.rules = IgnoreRules.durable(settings.index.ignore)

    # -- planning ----------------------------------------------------------------------------
    def scan(self) -> ScanResult:
        return scan_notes(self.settings, self.rules)

    def plan(self, scan: ScanResult, full: bool = False) -> tuple[Plan, dict[str, Document]]:
        """Classify every path; returns the documents already read while hashing candidates."""
        plan = Plan(skipped=list(scan.skipped))
        indexed = self.store.indexed_files(scan.scope)
        full = full or self.store.meta("chunker") != self.chunker_id
        docs: dict[str, Document] = {}
        missing = [path for path in indexed if path not in scan.files]
        by_hash: dict[str, list[str]] = {}
        for path in missing:
            by_hash.setdefault(indexed[path].sha256, []).append(path)
        skipped_before = {} if full else self.store.skipped_files(scan.scope)
        for path, st in scan.files.items():
            old = indexed.get(path)
            if old and not full and old.size == st.size and old.mtime_ns == st.mtime_ns:
                plan.unchanged += 1
                continue
            known_bad = skipped_before.get(path)
            if known_bad and _still_bad(known_bad, st):
                plan.skipped.append(known_bad)
                continue
            doc = self._read(st, plan)
            if doc is None:
                if old:
                    plan.deleted.append(path)
                continue
            docs[path] = doc
            self._classify(plan, path, doc, old, by_hash, full)
        self._plan_deletions(plan, scan, indexed, missing, by_hash)
        return plan, docs

    def _read(self, st: FileStat, plan: Plan) -> Document | None:
        try:
            return read_document(read_root(self.settings, st.path), st.path, self.settings.index.max_file_bytes)
        except ReadProblem as problem:
            plan.skipped.append(Skip(st.path, problem.reason, problem.detail, st.size, st.mtime_ns))
            return None

    @staticmethod
    def _classify(
        plan: Plan, path: str, doc: Document, old: IndexedFile | None, by_hash: dict[str, list[str]], full: bool
    ) -> None:
        if old and old.sha256 == doc.sha256 and not full:
            plan.touched.append(path)
        elif old:
            plan.changed.append(path)
        elif not full and by_hash.get(doc.sha256):
            plan.renamed.append((by_hash[doc.sha256].pop(), path))
        else:
            plan.new.append(path)

    @staticmethod
    def _plan_deletions(
        plan: Plan, scan: ScanResult, indexed: dict[str, IndexedFile], missing: list[str], by_hash: dict[str, list[str]]
    ) -> None:
        renamed_from = {old for old, _ in plan.renamed}
        gone = [path for path in missing if path not in renamed_from]
        if not gone:
            return
        if not scan.complete:
            plan.deletions_withheld = "part of the corpus could not be listed; nothing was deleted"
        elif not scan.files and indexed and scan.scope is None:
            plan.deletions_withheld = "the corpus scan found no notes at all; refusing to empty the index"
        else:
            plan.deleted.extend(gone)

    # -- lexical pass ------------------------------------------------------------------------
    def run_lexical(
        self,
        full: bool = False,
        progress: Progress = no_progress,
        vectors: VectorStore | None = None,
        paths: list[str] | None = None,
    ) -> LexicalReport:
        """Apply a plan in batched transactions. Removed chunk ids leave `vectors` as they go.

        `paths` limits the pass to those files and folders (what the watcher saw change); missing
        ones are deleted, so the caller must only pass paths it has evidence about.
        """
        scan = scan_notes(self.settings, self.rules, paths)
        plan, docs = self.plan(scan, full)
        report = LexicalReport(plan=plan, chunker=self.chunker_id)
        work: list[tuple[str, str | tuple[str, str]]] = [("write", p) for p in plan.new + plan.changed]
        work += [("touch", p) for p in plan.touched]
        work += [("rename", pair) for pair in plan.renamed]
        work += [("delete", p) for p in plan.deleted]
        conn = self.store.conn
        batch = self.settings.index.batch_files
        for start in range(0, max(len(work), 1), batch):
            with conn:
                # The batch is one transaction. Without this BEGIN the first SAVEPOINT would open the
                # transaction and its RELEASE commit it: one commit per file, each flushing FTS5's
                # pending terms into a new segment to be merged later (most of the pass's SQL time).
                conn.execute("BEGIN")
                removed: list[int] = []
                for action, item in work[start : start + batch]:
                    with self._alone(item, scan, plan):
                        removed += self._apply(action, item, docs, scan, report)
                self.store.derived.finish()
                if start + batch >= len(work):
                    self._finish(plan, scan)
            if vectors is not None and removed:
                vectors.remove(np.asarray(removed, dtype=np.int64))
            progress("lexical", min(start + batch, len(work)), len(work))
        return report

    @contextmanager
    def _alone(self, item: str | tuple[str, str], scan: ScanResult, plan: Plan) -> Iterator[None]:
        """One file's change inside the batch's transaction. A note that breaks the indexer in a way
        nobody foresaw is undone alone (a savepoint), reported by path and reason, and the batch goes
        on; a database error (a full or read-only disk, a lock) still stops the batch."""
        conn = self.store.conn
        conn.execute("SAVEPOINT one_file")
        try:
            yield
        except sqlite3.OperationalError:
            conn.execute("ROLLBACK TO one_file")
            raise
        except Exception as exc:
            conn.execute("ROLLBACK TO one_file")
            path = item[1] if isinstance(item, tuple) else item
            st = scan.files.get(path)
            detail = f"{type(exc).__name__}: {exc}"[:300]
            plan.skipped.append(
                Skip(path, "index_failed", detail, st.size if st else None, st.mtime_ns if st else None)
            )
            log.warning("indexing %s failed: %s", path, detail)
        conn.execute("RELEASE one_file")

    def _apply(
        self,
        action: str,
        item: str | tuple[str, str],
        docs: dict[str, Document],
        scan: ScanResult,
        report: LexicalReport,
    ) -> list[int]:
        store = self.store
        if isinstance(item, tuple):  # a rename: (old path, new path)
            old, new = item
            doc = docs.pop(new)
            st = scan.files[new]
            name_title = doc.title if "title" not in doc.frontmatter else None
            store.rename_file(old, new, st.size, st.mtime_ns, name_title)
            return []
        if action == "write":
            doc = docs.pop(item)
            chunks = chunk_lines(
                doc.lines,
                doc.body_start,
                self.count_many,
                self.settings.index.chunk_tokens,
                self.settings.index.chunk_overlap,
            )
            report.chunks_written += len(chunks)
            return store.upsert_file(doc, scan.files[item].mtime_ns, chunks)
        if action == "touch":
            st = scan.files[item]
            store.touch_file(item, st.size, st.mtime_ns)
            return []
        return store.delete_file(item)

    def _finish(self, plan: Plan, scan: ScanResult) -> None:
        for skip in plan.skipped:
            self.store.record_skip(skip)
        self.store.forget_skips({skip.path for skip in plan.skipped}, scan.scope)
        self.store.set_meta("last_change", now_iso())
        if scan.scope is None:
            self.store.set_meta("chunker", self.chunker_id)
            self.store.set_meta("last_reindex", now_iso())
