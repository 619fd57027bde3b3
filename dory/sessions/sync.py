"""Keep the session index in line with the transcripts under `logs/sessions/`.

Like the durable indexer: size and mtime first, then the hash; a transcript that cannot be read
(or whose frontmatter is broken) is reported with its reason and keeps its old rows; an incomplete
scan never deletes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from dory.corpus.atomic import sha256_of
from dory.corpus.document import ReadProblem, read_regular
from dory.corpus.paths import SESSIONS_ROOT, IgnoreRules
from dory.corpus.scan import Skip, scan_paths
from dory.errors import DoryError
from dory.models.common import MAX_INGEST_BYTES
from dory.sessions.store import SessionStore
from dory.sessions.transcript import SUMMARY_SUFFIX, parse_session


@dataclass
class SyncReport:
    indexed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: int = 0
    skipped: list[Skip] = field(default_factory=list)


def sync_sessions(corpus: Path, store: SessionStore, rules: IgnoreRules, paths: list[str] | None = None) -> SyncReport:
    """Index new and changed transcripts and drop vanished ones, under `paths` (default: all of
    `logs/sessions/`); paths outside it are ignored."""
    roots = [SESSIONS_ROOT] if paths is None else sorted({r for r in map(_session_root, paths) if r is not None})
    report = SyncReport()
    if not roots:
        return report
    scan = scan_paths(corpus, rules, roots)
    known = store.indexed()
    with store.conn:
        for rel, st in scan.files.items():
            if rel.endswith(SUMMARY_SUFFIX):
                continue
            old = known.get(rel)
            if old and (old[0], old[1]) == (st.size, st.mtime_ns):
                report.unchanged += 1
                continue
            _index_one(corpus, store, rel, (st.size, st.mtime_ns), old, report)
        report.skipped += scan.skipped
        if scan.complete:
            for rel in known:
                if scan.in_scope(rel) and (rel not in scan.files or rel.endswith(SUMMARY_SUFFIX)):
                    store.delete(rel)
                    report.deleted.append(rel)
    return report


def _index_one(
    corpus: Path,
    store: SessionStore,
    rel: str,
    stat: tuple[int, int],
    old: tuple[int, int, str] | None,
    report: SyncReport,
) -> None:
    try:
        # As a note is read: a FIFO swapped in after the scan, a hard link or an endless file is refused.
        data = read_regular(corpus / rel, MAX_INGEST_BYTES)
    except ReadProblem as problem:
        report.skipped.append(Skip(rel, problem.reason, problem.detail, *stat))
        return
    except OSError as exc:
        report.skipped.append(Skip(rel, "unreadable", exc.strerror or str(exc), *stat))
        return
    digest = sha256_of(data)
    if old and old[2] == digest:
        report.unchanged += 1
        return
    try:
        session = parse_session(rel, data)
    except DoryError as exc:
        report.skipped.append(Skip(rel, exc.code, exc.message, *stat))
        return
    store.upsert(rel, session, stat[0], stat[1], digest)
    report.indexed.append(rel)


def _session_root(rel: str) -> str | None:
    """The part of the session plane a changed path covers (a moved `logs/` folder covers all of it)."""
    if is_session_path(rel) or rel == SESSIONS_ROOT:
        return rel
    return SESSIONS_ROOT if SESSIONS_ROOT.startswith(rel.rstrip("/") + "/") else None


def is_session_path(rel: str) -> bool:
    return rel.startswith(SESSIONS_ROOT + "/")
