"""Session operations for every surface: ingest, import from this machine's harnesses, list, show,
history, export, rename, delete and restore. Given what it uses (stores, the index owner,
proposals) as SessionDeps."""

from __future__ import annotations

import builtins
import datetime as dt
import json
from pathlib import Path

from dory import llm
from dory.corpus.atomic import write_atomic
from dory.errors import BackendUnavailable, DoryError, LlmBadOutput, UsageError
from dory.index.eta import Progress, no_progress
from dory.index.store import now_iso
from dory.models import (
    CompactMethod,
    CompactRequest,
    CompactResponse,
    FlushRequest,
    FlushResponse,
    IngestProblem,
    MemoryWriteRequest,
    ProposalCreateRequest,
    SessionExportResponse,
    SessionFormat,
    SessionImportRequest,
    SessionImportResponse,
    SessionInfo,
    SessionIngestRequest,
    SessionIngestResponse,
    SessionListRequest,
    SessionListResponse,
    SessionShowResponse,
    SessionUpdateRequest,
    Turn,
)
from dory.models.sessions import Harness
from dory.service.context import read_summary, session_messages
from dory.service.session_deps import SessionDeps
from dory.sessions import compaction, facts
from dory.sessions.files import info
from dory.sessions.harness import harness_root, this_device, transcripts
from dory.sessions.importers import detect_format, parse_source
from dory.sessions.packing import MESSAGE_OVERHEAD, PackMessage
from dory.sessions.transcript import Message, Session

CHANGED = ("created", "appended", "updated")
_JSONL_TYPES = {"user": "user", "assistant": "assistant", "tool": "tool_result", "system": "system"}


class SessionService:
    def __init__(self, deps: SessionDeps) -> None:
        self.deps = deps

    # -- ingest ------------------------------------------------------------------------------
    def ingest(self, req: SessionIngestRequest) -> SessionIngestResponse:
        response = self.save(req)
        self._index(changed_paths(response), response)
        return response

    def save(self, req: SessionIngestRequest) -> SessionIngestResponse:
        """Save the sessions in one harness file; the caller tells the index (see changed_paths)."""
        return self._save(
            req.content.encode("utf-8", "surrogatepass"),
            req.format,
            req.source_path,
            req.agent,
            req.device,
            req.dry_run,
        )

    def _save(
        self,
        data: bytes,
        fmt: SessionFormat,
        source_path: str | None,
        agent: str | None,
        device: str | None,
        dry_run: bool,
    ) -> SessionIngestResponse:
        """Parse one harness file and save its sessions (the index is told by the caller)."""
        fmt = detect_format(data, source_path) if fmt == "auto" else fmt
        result = parse_source(
            data,
            fmt,
            source_path,
            agent,
            device or this_device(),
            now=dt.datetime.now(dt.UTC),
        )
        problems = [IngestProblem(line=p.line, message=p.message) for p in result.problems]
        saved = []
        files = self.deps.session_files()
        for session in result.sessions:
            try:
                saved.append(files.save(session, dry_run))
            except DoryError as exc:  # a transcript with broken frontmatter is never rewritten
                problems.append(IngestProblem(line=0, message=f"session {session.session_id}: {exc.message}"))
        return SessionIngestResponse(
            source=source_path,
            format=fmt,
            sessions=saved,
            problems=problems,
            redactions=result.redactions,
            dry_run=dry_run,
        )

    def _index(self, paths: list[str], response: SessionIngestResponse) -> None:
        if paths and not response.dry_run:
            self.deps.index_paths(paths)
            response.indexed = True

    def import_local(self, req: SessionImportRequest, progress: Progress = no_progress) -> SessionImportResponse:
        """Every Claude Code and Codex transcript on this machine (idempotent: re-running adds only new
        turns); each file read is reported to `progress` ("transcripts", done, total)."""
        since = _day_start(req.since) if req.since else None
        roots: dict[str, str | None] = {}
        results: list[SessionIngestResponse] = []
        warnings: list[str] = []
        changed: list[str] = []
        found: list[tuple[Harness, Path]] = []  # (harness, transcript): all of them first, for the total
        for name in req.harnesses:
            root = harness_root(name, self.deps.settings)
            roots[name] = str(root) if root.is_dir() else None
            found += [(name, path) for path in transcripts(root, name, since, warnings)]
        for done, (harness, path) in enumerate(found, start=1):
            try:
                data = path.read_bytes()
            except OSError as exc:
                warnings.append(f"{path}: {exc.strerror or exc}")
            else:
                one = self._save(data, harness, str(path), None, None, req.dry_run)
                results.append(one)
                changed += changed_paths(one)
            progress("transcripts", done, len(found))
        response = SessionImportResponse(roots=roots, files=results, counts=_counts(results), warnings=warnings)
        if changed and not req.dry_run:
            self.deps.index_paths(changed)
        return response

    # -- reading -----------------------------------------------------------------------------
    def list(self, req: SessionListRequest) -> SessionListResponse:
        rows, total = self.deps.resources.session_store().sessions(
            req.agent, req.status, req.since, req.include_deleted, req.limit
        )
        sessions = [
            SessionInfo(
                path=r[0],
                session_id=r[1],
                agent=r[2],
                device=r[3],
                title=r[4],
                status=r[5],
                started=r[6],
                updated=r[7],
                messages=r[8],
                date=r[9],
            )
            for r in rows
        ]
        return SessionListResponse(sessions=sessions, total=total)

    def show(self, ident: str, last: int | None = None) -> SessionShowResponse:
        files = self.deps.session_files()
        rel = files.resolve(ident)
        session, _ = files.load(rel)
        turns = session.turns()
        shown = turns[-last:] if last else turns
        summary_file = files.corpus / files.summary_path(rel)
        summary = summary_file.read_text(encoding="utf-8", errors="replace") if summary_file.is_file() else None
        return SessionShowResponse(
            session=info(rel, session), turns=[_turn(m) for m in shown], total_turns=len(turns), summary=summary
        )

    def export(self, ident: str, fmt: str) -> SessionExportResponse:
        files = self.deps.session_files()
        rel = files.resolve(ident)
        session, data = files.load(rel)
        if fmt == "markdown":
            content = data.decode("utf-8", errors="replace")
        elif fmt == "jsonl":
            content = "".join(
                json.dumps(_jsonl_record(session.session_id, m), ensure_ascii=False) + "\n" for m in session.turns()
            )
        else:
            raise UsageError(f"unknown export format {fmt!r}; use markdown or jsonl")
        return SessionExportResponse(session=info(rel, session), format=fmt, content=content)

    # -- compaction --------------------------------------------------------------------------
    def compact(self, req: CompactRequest) -> CompactResponse:
        """Flush durable facts into proposals, then write the continuation summary next to the transcript."""
        files = self.deps.session_files()
        rel = files.resolve(req.id)
        session, _ = files.load(rel)
        messages = session_messages(session)
        covered = messages[: max(len(messages) - req.retain, 0)]
        retained = messages[len(covered) :]
        summary_rel = files.summary_path(rel)
        previous = read_summary(files.corpus / summary_rel)
        warnings: list[str] = []
        created, existing = self._flush(rel, session, covered, req.dry_run, warnings)
        method, block, counters = self._summarise(covered, previous, warnings)
        count = self.deps.resources.token_counter().count
        tokens_before = sum(count(m.text) + MESSAGE_OVERHEAD for m in messages)
        tokens_after = count(block) + MESSAGE_OVERHEAD + sum(count(m.text) + MESSAGE_OVERHEAD for m in retained)
        if not req.dry_run and method != "kept_previous":
            stats = {"messages_before": len(messages), "tokens_before": tokens_before, "tokens_after": tokens_after}
            text = compaction.summary_file(
                session.session_id, covered[-1].id if covered else None, method, block, stats, now_iso()
            )
            write_atomic(files.corpus / summary_rel, text.encode("utf-8"))
        return CompactResponse(
            session_id=session.session_id,
            path=rel,
            summary_path=summary_rel,
            method=method,
            summary=block,
            words=len(block.split()),
            messages_before=len(messages),
            messages_after=len(retained) + 1,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            proposals=created,
            proposals_existing=existing,
            llm=counters,
            dry_run=req.dry_run,
            warnings=warnings,
        )

    def flush(self, req: FlushRequest) -> FlushResponse:
        """Only the first step of `compact`: every durable fact of the session becomes a proposal."""
        files = self.deps.session_files()
        rel = files.resolve(req.id)
        session, _ = files.load(rel)
        warnings: builtins.list[str] = []
        created, existing = self._flush(rel, session, session_messages(session), req.dry_run, warnings)
        return FlushResponse(
            session_id=session.session_id,
            path=rel,
            proposals=created,
            proposals_existing=existing,
            dry_run=req.dry_run,
            warnings=warnings,
        )

    def _summarise(
        self, covered: builtins.list[PackMessage], previous: str | None, warnings: builtins.list[str]
    ) -> tuple[CompactMethod, str, dict[str, int] | None]:
        cap = self.deps.settings.context.summary_words
        client = llm.from_settings(self.deps.settings)
        if client is None:
            return "extractive", compaction.render(compaction.extractive(covered, cap), cap), None
        try:
            answer = client.complete_json(
                compaction.PROMPT, compaction.llm_input(covered, previous), compaction.SCHEMA, "compaction"
            )
            parts = compaction.from_llm(answer)
            if compaction.is_empty(parts):
                client.counters.reclassify_empty()
                raise LlmBadOutput("compaction: the model returned only empty sections", reason="empty")
            return "llm", compaction.render(parts, cap), client.counters.as_dict()
        except BackendUnavailable as exc:
            if previous:
                warnings.append(f"{exc.message}; the previous summary was kept")
                return "kept_previous", previous, client.counters.as_dict()
            warnings.append(f"{exc.message}; the summary was extracted without the model")
            return "extractive", compaction.render(compaction.extractive(covered, cap), cap), client.counters.as_dict()

    def _flush(
        self,
        rel: str,
        session: Session,
        covered: builtins.list[PackMessage],
        dry_run: bool,
        warnings: builtins.list[str],
    ) -> tuple[builtins.list[str], int]:
        """Durable facts in the session become proposals (idempotent: the same fact is proposed once).
        A statement about the user goes to core only once said in another session too (facts.settle)."""
        created, existing = [], 0
        store = self.deps.resources.session_store()
        for fact in compaction.durable_facts(covered, facts.project_of(session)):
            settled, reason = facts.settle(fact.found, store, fact.content, rel)
            if settled is None:  # about the user, said once, and no project to file it under
                continue
            write = MemoryWriteRequest(
                subject=settled.subject,
                content=fact.content,
                kind=settled.kind,
                scope=settled.scope,
                source=f"{rel}#{fact.message_id}",
                agent=session.agent,
                reason=reason,
            )
            if dry_run:
                warnings.append(f"would propose ({settled.kind}, {settled.subject}): {fact.content}")
                continue
            try:
                result = self.deps.propose(ProposalCreateRequest(write=write))
            except DoryError as exc:
                warnings.append(f"not proposed ({exc.code}): {fact.content} — {exc.message}")
                continue
            if result.created:
                created.append(result.proposal.id)
            else:
                existing += 1
        return created, existing

    # -- edits -------------------------------------------------------------------------------
    def update(self, req: SessionUpdateRequest) -> SessionInfo:
        files = self.deps.session_files()
        rel = files.update(req)
        self.deps.index_paths([rel])
        session, _ = files.load(rel)
        return info(rel, session)


def changed_paths(response: SessionIngestResponse) -> list[str]:
    """The transcripts an ingest created or changed (what the index must learn about)."""
    return [] if response.dry_run else [s.path for s in response.sessions if s.action in CHANGED]


def _day_start(day: str) -> float:
    try:
        return dt.datetime.fromisoformat(day[:10]).astimezone().timestamp()
    except ValueError as exc:
        raise UsageError(f"--since must be YYYY-MM-DD, not {day!r}") from exc


def _counts(results: list[SessionIngestResponse]) -> dict[str, int]:
    counts = {"files": len(results), "sessions": 0, "created": 0, "appended": 0, "unchanged": 0, "problems": 0}
    for result in results:
        counts["problems"] += len(result.problems)
        for session in result.sessions:
            counts["sessions"] += 1
            counts[session.action] = counts.get(session.action, 0) + 1
    return counts


def _turn(message: Message) -> Turn:
    return Turn(
        id=message.id,
        role=message.role,
        time=message.time,
        kind=message.kind,
        text=message.text,
        tool_calls=message.tool_calls,
        start_line=message.start_line,
        end_line=message.end_line,
    )


def _jsonl_record(session_id: str, message: Message) -> dict[str, object]:
    """One line of the generic JSONL format `dory sessions ingest --format jsonl` reads back."""
    kind = message.kind if message.kind in ("tool_result", "summary") else _JSONL_TYPES[message.role]
    record: dict[str, object] = {
        "type": kind,
        "content": message.text,
        "timestamp": message.time,
        "session_id": session_id,
    }
    if message.tool_calls:
        record["tool_calls"] = message.tool_calls
    return record
