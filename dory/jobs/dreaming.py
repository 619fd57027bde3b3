"""Dreaming: new digests and often-recalled notes → proposals a person reviews (never direct writes).

Two sources of candidates:
- the bullets of daily digests not dreamed yet (a digest is dreamed again only when its bytes
  change): each bullet's cited session turn is read back, and a bullet that states a preference,
  a "remember that…" (said by the user) or a decision becomes a proposed semantic write;
- notes that searches keep returning (recall events): a note that is not already a canonical page,
  returned by at least `[digest] recall_min_queries` distinct queries, is proposed as a concept
  page holding the passage recalled most often.

Gates, in order, each counted in the run's outputs when it stops a candidate: the source must be
readable and still say it (grounded in the cited line: at least half of the statement's words in
the cited turn or passage), must not come from quarantined material or a deleted session, must not
match a claim that was retired (forgotten), and must not already be an active claim (the semantic
write's own dry run says "unchanged"). Proposals are idempotent by content and source (the
proposal store), so nothing proposed, applied or rejected is ever proposed again.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from dory.corpus.atomic import sha256_of
from dory.corpus.document import ReadProblem, read_document
from dory.corpus.paths import QUARANTINE_DIR
from dory.errors import DoryError
from dory.index.store import IndexStore
from dory.jobs.digest import Source, cited, sections_of
from dory.jobs.digest_daily import FOLDER as DAILY_FOLDER
from dory.jobs.digest_daily import SECTIONS as DAILY_SECTIONS
from dory.jobs.job import JobContext, JobResult
from dory.memory import claims
from dory.models import MemoryWriteRequest
from dory.search.recall_log import Recalled, RecallLog
from dory.sessions import extract
from dory.sessions.compaction import fact_of
from dory.sessions.transcript import message_at_line, parse_session

AGENT = "dory dream"
GROUNDED = 0.5  # share of a statement's words its cited source must contain
CANONICAL = re.compile(r"^(?:people/[^/]+|concepts/[^/]+|decisions/[^/]+|projects/[^/]+/state|core/[^/]+)\.md$")
# Generated and raw areas: a digest or a report recalled often is not knowledge of its own.
NOT_PROMOTED = ("digests/", "inbox/", "wiki/", "sources/")
# Sessions lines summarise and Important Values list values: neither states a fact on its own.
STATEMENT_SECTIONS = frozenset(DAILY_SECTIONS) - {"Sessions", "Important Values"}
_SPEAKER = re.compile(r"^[A-Z][\w .'-]{0,30}: ")


@dataclass
class Candidate:
    write: MemoryWriteRequest
    origin: str  # "digest" or "recall"


class Dream:
    """One dreaming run: gathers candidates, gates them, proposes what passes."""

    def __init__(self, ctx: JobContext, store: IndexStore, log: RecallLog) -> None:
        self.ctx, self.store, self.log = ctx, store, log
        self.corpus = ctx.settings.corpus
        self.stopped: Counter[str] = Counter()
        self.warnings: list[str] = []
        self.created: list[str] = []
        self.existing = 0

    # -- from digests ------------------------------------------------------------------------
    def from_digests(self) -> tuple[list[Candidate], list[tuple[str, str]]]:
        """Candidates from the dailies not dreamed yet, and (path, sha256) of those read."""
        out: list[Candidate] = []
        read: list[tuple[str, str]] = []
        for file in sorted((self.corpus / DAILY_FOLDER).glob("*.md")):
            rel = file.relative_to(self.corpus).as_posix()
            try:
                data = file.read_bytes()
            except OSError as exc:
                self.warnings.append(f"skipped {rel}: {exc}")
                continue
            if self.log.dreamed(rel, sha256_of(data)):
                continue
            read.append((rel, sha256_of(data)))
            for title, lines in sections_of(data.decode("utf-8", "replace")).items():
                if title in STATEMENT_SECTIONS:
                    out += [c for line in lines if (item := cited(line)) and (c := self._from_bullet(rel, *item))]
        return out, read

    def _from_bullet(self, digest: str, text: str, source: Source) -> Candidate | None:
        statement = _SPEAKER.sub("", text.replace("**", "").replace("`", ""))
        if source.line is None or not source.path.startswith("logs/sessions/"):
            return None
        turn = self._turn(source.path, source.line)
        if turn is None:
            return None
        role, said = turn
        found = fact_of(statement, role)
        if found is None:
            return None
        if not _grounded(statement, said):
            self.stopped["not_grounded"] += 1
            return None
        kind, subject = found
        write = MemoryWriteRequest(
            subject=subject,
            content=text[:2000],
            kind=kind,
            scope="decision" if kind == "decision" else None,
            agent=AGENT,
            source=f"{source.path}#L{source.line}",
            reason=f"from the daily digest {digest}",
        )
        return Candidate(write, "digest")

    def _turn(self, rel: str, line: int) -> tuple[str, str] | None:
        """(role, text) of the session turn at `line`; None (and counted) when it cannot be used."""
        try:
            session = parse_session(rel, (self.corpus / rel).read_bytes())
        except (OSError, ValueError):
            self.stopped["source_unreadable"] += 1
            return None
        if session.status == "deleted":
            self.stopped["tombstoned"] += 1
            return None
        message = message_at_line(session, line)
        if message is None:
            self.stopped["not_grounded"] += 1
            return None
        return message.role, message.text

    # -- from recall -------------------------------------------------------------------------
    def from_recall(self) -> list[Candidate]:
        out = []
        for item in self.log.frequent(self.ctx.settings.digest.recall_min_queries):
            if item.path.startswith(QUARANTINE_DIR + "/"):
                self.stopped["quarantined"] += 1
                continue
            if CANONICAL.match(item.path) or item.path.startswith(NOT_PROMOTED):
                continue  # already durable memory, or generated
            candidate = self._from_recalled(item)
            if candidate is not None:
                out.append(candidate)
        return out

    def _from_recalled(self, item: Recalled) -> Candidate | None:
        try:
            doc = read_document(self.corpus, item.path, self.ctx.settings.index.max_file_bytes)
        except (ReadProblem, OSError):
            self.stopped["source_unreadable"] += 1
            return None
        passage = [line.strip() for line in doc.lines[item.start_line - 1 : item.end_line]]
        prose = [line.lstrip("-*> ").strip() for line in passage if line and not line.startswith(("#", "```"))]
        statement = " ".join(" ".join(prose).split())[:600]
        if not statement:
            self.stopped["not_grounded"] += 1
            return None
        samples = "; ".join(item.samples[:3])
        write = MemoryWriteRequest(
            subject=doc.title[:300] or item.path,
            content=statement,
            kind="fact",
            scope="concept",
            agent=AGENT,
            source=f"{item.path}#L{item.start_line}",
            reason=f"recalled by {item.queries} distinct queries (e.g. {samples})",
        )
        return Candidate(write, "recall")

    # -- gates and proposals -----------------------------------------------------------------
    def propose(self, candidates: list[Candidate]) -> None:
        retired = {_norm(c["statement"]) for c in claims.dump(self.store.conn) if c["status"] == "retired"}
        # The same statement from another source (a repeated sentence, another day) is one proposal.
        seen = {_norm(p.write.content) for p in self.ctx.api.proposals().proposals}
        for candidate in candidates:
            write = candidate.write
            if _norm(write.content) in retired:
                self.stopped["tombstoned"] += 1
                continue
            if _norm(write.content) in seen:
                self.existing += 1
                continue
            seen.add(_norm(write.content))
            try:
                plan = self.ctx.api.plan_memory_write(write.model_copy(update={"dry_run": True}))
            except DoryError as exc:
                self.stopped[exc.code] += 1
                continue
            if plan.action == "unchanged":
                self.stopped["already_active"] += 1
                continue
            if self.ctx.dry_run:
                self.created.append(f"(dry run) {write.subject}: {write.content[:80]}")
                continue
            result = self.ctx.api.propose(write)
            if result.created:
                self.created.append(result.proposal.id)
            else:
                self.existing += 1


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _grounded(statement: str, source: str) -> bool:
    wanted = set(extract.words(statement))
    return bool(wanted) and len(wanted & set(extract.words(source))) / len(wanted) >= GROUNDED


def run(ctx: JobContext) -> JobResult:
    if not ctx.dry_run:
        ctx.api.index_paths([DAILY_FOLDER])  # digests written by hand or just now count
    store = ctx.api.read_index()
    if store is None:
        return JobResult(warnings=["the corpus has not been indexed yet; run `dory reindex` (or `dory ops watch`)"])
    log = RecallLog(ctx.settings.recall_log_path)
    try:
        dream = Dream(ctx, store, log)
        from_digests, read = dream.from_digests()
        from_recall = dream.from_recall()
        dream.propose(from_digests + from_recall)
        if not ctx.dry_run:
            for rel, sha in read:
                log.mark_dreamed(rel, sha)
    finally:
        log.close()
    outputs: dict[str, Any] = {
        "digests_read": len(read),
        "candidates": len(from_digests) + len(from_recall),
        "from_digests": len(from_digests),
        "from_recall": len(from_recall),
        "written": len(dream.created),
        "existing": dream.existing,
        "stopped": dict(sorted(dream.stopped.items())),
        "proposals": dream.created[:50],
    }
    return JobResult(outputs=outputs, warnings=dream.warnings)
