"""Dreaming: new digests and often-recalled notes → proposals a person reviews (never direct writes).

Two sources of candidates:
- the bullets of daily digests not dreamed yet (a digest is dreamed again only when its bytes
  change): each bullet's cited session turn is read back, and a bullet that states a decision, a
  preference or a "remember that…" becomes a proposed semantic write, on the page the rules of
  dory.sessions.facts give it (a decision page, a person's or the project's page, a thing's page;
  core/user.md only for what the user said about themselves in two sessions, or asked to remember);
- notes that searches keep returning (recall events): a note that is not already a canonical page,
  returned by at least `[digest] recall_min_queries` distinct queries, is proposed as a concept
  page holding the passage recalled most often.

Gates, in order, each counted in the run's outputs when it stops a candidate: the source must be
readable and still say it (grounded in the cited line: at least half of the statement's words in
the cited turn or passage), must not come from quarantined material or a deleted session, must be
said again in another session when it is about the user and not an explicit "remember" (said_once),
must not match a claim that was retired (forgotten), and must not already be an active claim (the
semantic write's own dry run says "unchanged"). Proposals are idempotent by content and source (the
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
from dory.corpus.roots import output_root, read_root
from dory.errors import DoryError
from dory.index.store import IndexStore
from dory.jobs.digest import Source, cited, sections_of
from dory.jobs.digest_daily import FOLDER as DAILY_FOLDER
from dory.jobs.digest_daily import SECTIONS as DAILY_SECTIONS
from dory.jobs.job import JobContext, JobResult
from dory.memory import claims
from dory.models import MemoryWriteRequest
from dory.search.recall_log import Recalled, RecallLog
from dory.sessions import extract, facts
from dory.sessions.store import SessionStore
from dory.sessions.transcript import Message, Session, message_at_line, parse_session

AGENT = "dory dream"
GROUNDED = 0.5  # share of a statement's words its cited source must contain
CANONICAL = re.compile(r"^(?:people/[^/]+|concepts/[^/]+|decisions/[^/]+|projects/[^/]+/state|core/[^/]+)\.md$")
# Generated and raw areas: a digest or a report recalled often is not knowledge of its own.
NOT_PROMOTED = ("digests/", "inbox/", "wiki/", "sources/")
# Important Values list values: they state no fact on their own. A Sessions line is read for its gist,
# the sentence after its label (the digest keeps that sentence out of the other sections).
STATEMENT_SECTIONS = frozenset(DAILY_SECTIONS) - {"Important Values"}
_SESSION_LABEL = re.compile(r"^\*\*.*?\*\* \([^()\n]*· \d+ turns\)(?:: |$)")
_SPEAKER = re.compile(r"^[A-Z][\w .'-]{0,30}: ")


@dataclass
class Candidate:
    write: MemoryWriteRequest
    origin: str  # "digest" or "recall"


class Dream:
    """One dreaming run: gathers candidates, gates them, proposes what passes."""

    def __init__(self, ctx: JobContext, store: IndexStore, log: RecallLog, sessions: SessionStore | None) -> None:
        self.ctx, self.store, self.log, self.sessions = ctx, store, log, sessions
        self.output = output_root(ctx.settings, "proposals")  # the dailies and the transcripts they cite
        self.stopped: Counter[str] = Counter()
        self.warnings: list[str] = []
        self.created: list[str] = []
        self.existing = 0

    # -- from digests ------------------------------------------------------------------------
    def from_digests(self) -> tuple[list[Candidate], list[tuple[str, str]]]:
        """Candidates from the dailies not dreamed yet, and (path, sha256) of those read."""
        out: list[Candidate] = []
        read: list[tuple[str, str]] = []
        for file in sorted((self.output / DAILY_FOLDER).glob("*.md")):
            rel = file.relative_to(self.output).as_posix()
            try:
                data = file.read_bytes()
            except OSError as exc:
                self.warnings.append(f"skipped {rel}: {exc}")
                continue
            if self.log.dreamed(rel, sha256_of(data)):
                continue
            read.append((rel, sha256_of(data)))
            out += self._from_digest(rel, data.decode("utf-8", "replace"))
        return out, read

    def _from_digest(self, rel: str, text: str) -> list[Candidate]:
        """Candidates from one daily digest's statement bullets, each (text, turn) read once: a session's
        gist may also be one of its decisions."""
        out: list[Candidate] = []
        seen: set[tuple[str, Source]] = set()
        for title, lines in sections_of(text).items():
            if title not in STATEMENT_SECTIONS:
                continue
            for line in lines:
                item = cited(line)
                if item is None:
                    continue
                said = _SESSION_LABEL.sub("", item[0]) if title == "Sessions" else item[0]
                if not said or (said, item[1]) in seen:
                    continue
                seen.add((said, item[1]))
                if candidate := self._from_bullet(rel, said, item[1]):
                    out.append(candidate)
        return out

    def _from_bullet(self, digest: str, text: str, source: Source) -> Candidate | None:
        statement = _SPEAKER.sub("", text.replace("**", "").replace("`", ""))
        if source.line is None or not source.path.startswith("logs/sessions/"):
            return None
        turn = self._turn(source.path, source.line)
        if turn is None:
            return None
        session, message = turn
        speaker, _ = extract.split_speaker(message.text)
        found = facts.classify(statement, message.role, speaker, facts.project_of(session))
        if found is None:
            return None
        if not _grounded(statement, message.text):
            self.stopped["not_grounded"] += 1
            return None
        settled, why = facts.settle(found, self.sessions, statement, source.path)
        if settled is None:  # about the user, said once, and no project to file it under
            self.stopped["said_once"] += 1
            return None
        found, reason = settled, f"from the daily digest {digest}" + (f"; {why}" if why else "")
        write = MemoryWriteRequest(
            subject=found.subject,
            content=text[:2000],
            kind=found.kind,
            scope=found.scope,
            agent=AGENT,
            source=f"{source.path}#L{source.line}",
            reason=reason,
        )
        return Candidate(write, "digest")

    def _turn(self, rel: str, line: int) -> tuple[Session, Message] | None:
        """The session and its turn at `line`; None (and counted) when it cannot be used."""
        try:
            session = parse_session(rel, (self.output / rel).read_bytes())
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
        return session, message

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
            doc = read_document(
                read_root(self.ctx.settings, item.path), item.path, self.ctx.settings.index.max_file_bytes
            )
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
    sessions = None
    if ctx.settings.sessions_db_path.exists():  # where dreaming looks for a statement said again
        sessions = SessionStore(ctx.settings.sessions_db_path, ctx.settings.index.tokenizer, readonly=True)
    try:
        dream = Dream(ctx, store, log, sessions)
        from_digests, read = dream.from_digests()
        from_recall = dream.from_recall()
        dream.propose(from_digests + from_recall)
        if not ctx.dry_run:
            for rel, sha in read:
                log.mark_dreamed(rel, sha)
    finally:
        log.close()
        if sessions is not None:
            sessions.close()
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
