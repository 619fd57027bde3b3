"""Human-readable output for the CLI (the --json output is the models themselves).

Over ~400 lines because it renders every response model, one small function each; splitting it by
command family would scatter the shared layout helpers.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

from dory.index.eta import ESTIMATING, duration_text, rate_text

if TYPE_CHECKING:  # the models are only annotations here: rendering must not load pydantic
    from dory.models import (
        CaptureStatus,
        CompactResponse,
        ContextPackResponse,
        DaemonStatus,
        EmbeddingProgress,
        EvalResponse,
        GetResponse,
        InboxImport,
        JobRun,
        JobsResponse,
        LinkLintResponse,
        LinkResponse,
        MemoryWriteResponse,
        Proposal,
        ProposalListResponse,
        ReindexResponse,
        RemindResponse,
        ResearchResponse,
        SearchResponse,
        SessionImportResponse,
        SessionInfo,
        SessionIngestResponse,
        SessionListResponse,
        SessionShowResponse,
        StatusResponse,
        TokenCreated,
        TokenListResponse,
        WriteResponse,
    )

SHOWN_IMPORTS = 5  # entries of inbox/import/ listed by `dory status` (--json lists the last 20)


def search(res: SearchResponse) -> str:
    out = [f"! {w}" for w in res.warnings]
    if res.assist is not None:
        a = res.assist
        added = ", ".join(a.expanded_lists) or "no lists"
        out.append(
            f"llm: expansion added {added}"
            + (f" (variants: {'; '.join(a.variants)})" if a.variants else "")
            + (f"; rerank moved {a.rerank_moved} hits" if a.reranked else "; no rerank")
        )
    if not res.hits:
        out.append(f"no results for {res.query!r} ({res.mode})")
    for n, hit in enumerate(res.hits, start=1):
        out.append(
            f"{n:>2}. {hit.path}:{hit.start_line}-{hit.end_line}  {hit.title}  [{hit.evidence_class}, {hit.confidence}"
            + (", weak]" if hit.weak else "]")
        )
        if hit.turn:
            out.append(
                f"    § {hit.turn.role} · {hit.turn.time or 'no time'} · {hit.turn.message_id} "
                f"({hit.turn.agent}, session {hit.turn.session_id})"
            )
        elif hit.heading_path:
            out.append(f"    § {' › '.join(hit.heading_path)}")
        if hit.snippet:
            out.append(f"    {hit.snippet}")
        if hit.stale_warning:
            out.append(f"    ! {hit.stale_warning}")
        if hit.explain:
            e = hit.explain
            out.append(
                f"    score {e.final:.5f} = fused × policy {e.policy_factor} {e.policy_rules}; "
                f"bm25 #{e.bm25_rank} ({e.bm25_score}), vector #{e.vector_rank} ({e.vector_score})"
                + (f", expanded #{e.expanded_rank}" if e.expanded_rank else "")
                + (f", hyde #{e.hyde_rank} ({e.hyde_score})" if e.hyde_rank else "")
                + (f"; was #{e.rerank_from} before rerank" if e.rerank_from else "")
            )
    return "\n".join(out)


def research(res: ResearchResponse) -> str:
    out = [f"! {w}" for w in res.warnings]
    out.append(res.markdown.rstrip("\n"))
    if res.saved:
        out.append(f"\nsaved to {res.saved}")
    return "\n".join(out)


def _inbox_import(done: InboxImport) -> str:
    """One entry the migrate-inbox job took: what became of it and where its report is."""
    head = f"{done.entry}: {done.outcome.replace('_', ' ')} at {done.at}"
    if done.outcome == "failed":
        return f"{head}: {done.reason} → {done.moved_to or 'still in inbox/import/'}"
    counts = f"{done.created} files" + (f", {done.problems} problems" if done.problems else "")
    return f"{head} ({counts}) report {done.report}" if done.report else head


def get(res: GetResponse) -> str:
    header = f"# {res.path}  lines {res.from_line}-{res.to_line} of {res.total_lines}  {res.hash}"
    if res.frontmatter_error:
        header += f"\n# frontmatter not parsed: {res.frontmatter_error}"
    return f"{header}\n{res.content}"


def status(res: StatusResponse) -> str:
    lines = [
        f"corpus       {res.corpus}"
        + (f"  ({res.name})" if res.name else "")
        + ("  read-only" if res.read_only else ""),
        *([f"output       {res.output or 'none'}"] if res.output != res.corpus else []),
        f"files        {res.files_indexed} indexed / {res.files_on_disk} on disk"
        f"  ({res.pending_changes} changed since last reindex)",
        f"chunks       {res.chunks}  vectors {res.vectors} ({res.vectors_stale} stale)  pending {res.vectors_pending}"
        f"  ({res.vector_index})",
        f"embedder     {res.embedder}  fingerprint {'ok' if res.fingerprint_matches else 'MISMATCH/none'}",
        f"last reindex {res.last_reindex or 'never'}  index size {res.index_bytes / 1e6:.1f} MB",
        *_daemon_lines(res.daemon),
        *([_embedding_line(res.embedding)] if res.embedding else []),
    ]
    if res.sessions:
        got = res.sessions
        lines.append(
            f"sessions     {got.get('sessions', 0)} indexed / {got.get('on_disk', 0)} on disk, "
            f"{got.get('messages', 0)} turns"
            + (f", {res.sessions['vectors_pending']} turn vectors pending" if "vectors_pending" in res.sessions else "")
        )
    lines += [f"job          {run.job}: {run.status} for {run.period} (ended {run.ended or '-'})" for run in res.jobs]
    lines += [f"import       {_inbox_import(done)}" for done in res.imports[:SHOWN_IMPORTS]]
    if res.skipped:
        lines.append(f"skipped      {len(res.skipped)} files:")
        lines += [f"  {s.path}: {s.reason} ({s.detail})" for s in res.skipped[:50]]
        if len(res.skipped) > 50:
            lines.append(f"  … and {len(res.skipped) - 50} more (--json lists all)")
    if res.broken_frontmatter:
        lines.append(f"indexed as plain text (frontmatter not parsed): {len(res.broken_frontmatter)} files:")
        lines += [f"  {s.path}: {s.detail}" for s in res.broken_frontmatter[:50]]
    lines += [f"! {w}" for w in res.warnings]
    return "\n".join(lines)


def _embedding_line(progress: EmbeddingProgress) -> str:
    """`embedding    5,120 chunks pending · 41.3 chunks/s · 2 min 04 s left`."""
    pending = f"embedding    {progress.chunks_pending:,} chunks pending"
    if progress.rate_per_s is None or progress.eta_s is None:
        return f"{pending} · {ESTIMATING}"
    return f"{pending} · {rate_text(progress.rate_per_s, 'chunks')} · {duration_text(progress.eta_s)} left"


def _daemon_lines(daemon: DaemonStatus) -> list[str]:
    if daemon.exit_reason:
        return [f"daemon       not running: exited at {daemon.exited_at}: {daemon.exit_reason}"]
    if not daemon.running:
        return ["daemon       not running (start it with `dory ops watch`)"]
    watcher = daemon.watcher
    parts = {
        "writer": daemon.writer,
        "embedder": daemon.embedder,
        "scheduler": daemon.scheduler,
        "control socket": daemon.control,
        "capture": daemon.capture,
    }
    return [
        f"daemon       pid {daemon.pid}, up {daemon.uptime_s} s, {'idle' if daemon.idle else 'working'}; "
        f"{daemon.pending_paths} paths waiting, {daemon.vectors_pending} chunks waiting for vectors",
        f"watcher      {'alive' if watcher.get('alive') else 'DOWN'}; {watcher.get('events_seen', 0)} events, "
        f"last {watcher.get('last_event_at') or 'never'}; {watcher.get('overflows', 0)} queue overflows, "
        f"re-armed {watcher.get('rearmed', 0)} times",
        "threads      " + ", ".join(f"{name} {_thread_state(part)}" for name, part in parts.items()),
        *(
            f"last error   {name} at {part['last_error_at']}: {part['last_error']}"
            for name, part in {"watcher": watcher, **parts}.items()
            if part.get("last_error")
        ),
    ]


def _thread_state(part: dict[str, Any]) -> str:
    if part.get("enabled") is False:
        return "off"
    return "alive" if part.get("alive") else "DEAD"


def jobs(res: JobsResponse) -> str:
    lines = [f"daemon {'running' if res.daemon_running else 'not running'}"]
    for job in res.jobs:
        last = job.last_run
        last_text = (
            f"{last.status} for {last.period} at {last.ended or last.started} ({last.trigger})" if last else "never ran"
        )
        lines.append(f"{job.name:12} {job.schedule if job.enabled else 'off':16} next {job.next_run or '-'}")
        lines.append(f"{'':12} last: {last_text}")
        lines += [f"{'':12}       {run.status} for {run.period} ({run.trigger})" for run in job.recent_runs[1:]]
        lines += [f"{'':12} ! {w}" for w in job.warnings]
    return "\n".join(lines)


def capture_status(st: CaptureStatus) -> str:
    state = "on" if st.enabled else "off"
    written = f" ({st.config_file} updated)" if st.changed else ""
    lines = [f"capture {state}{written}; device {st.device}; sweep every {st.sweep_s:g} s"]
    for root in st.roots:
        where = f"{root.followed} transcripts followed" if root.exists else "not there (yet)"
        lines.append(f"  {root.harness:12} {root.path}: {where}")
    if st.server:
        lines.append(f"sessions are shipped to {st.server}")
    elif st.sessions_folder:
        lines.append(f"sessions are saved under {st.sessions_folder}")
    if st.server:
        lines.append(f"  spool: {st.spool_pending} waiting, {st.spool_refused} refused by the server")
    if st.shipping_error:
        lines.append(f"  ! {st.shipping_error} (next try {st.next_try})")
    if st.last_run:
        lines.append(
            f"last run: {st.last_run.status} at {st.last_run.ended or st.last_run.started} ({st.last_run.trigger})"
        )
    lines += [f"! {w}" for w in st.warnings]
    return "\n".join(lines)


def job_run(run: JobRun) -> str:
    if run.status == "skipped":
        return f"{run.job} {run.period}: not run ({run.reason})"
    outputs = ", ".join(f"{k} {v}" for k, v in run.outputs.items()) or "no outputs"
    lines = [f"{run.job} {run.period}: {run.status} ({outputs})"]
    lines += [f"! {w}" for w in run.warnings]
    return "\n".join(lines)


def reindex(res: ReindexResponse) -> str:
    verb = "would change" if res.planned_paths is not None else "indexed"
    lines = [
        f"{verb}: {res.new} new, {res.changed} changed, {res.renamed} renamed, {res.deleted} deleted, "
        f"{res.touched} touched, {res.unchanged} unchanged, {len(res.skipped)} skipped  ({res.seconds}s)"
    ]
    if res.planned_paths is not None:
        for kind, paths in res.planned_paths.items():
            lines += [f"  {kind:8} {p}" for p in paths[:200]]
    else:
        lines.append(
            f"chunks written {res.chunks_written}; vectors embedded {res.vectors_embedded}, "
            f"reused {res.vectors_reused}, pending {res.vectors_pending}"
        )
    lines += [f"  skipped {s.path}: {s.reason} ({s.detail})" for s in res.skipped[:20]]
    lines += [f"! {w}" for w in res.warnings]
    return "\n".join(lines)


def evaluation(res: EvalResponse) -> str:
    lines = [f"{res.queries} queries, k={res.k}", f"{'mode':8} {'R@' + str(res.k):>8} {'MRR@10':>8} {'nDCG@10':>8}"]
    lines += [f"{m.mode:8} {m.recall_at_k:8.4f} {m.mrr_at_10:8.4f} {m.ndcg_at_10:8.4f}" for m in res.modes]
    lines += [f"! {w}" for w in res.warnings]
    return "\n".join(lines)


def model(status: dict[str, Any]) -> str:
    state = "ok" if status["verified"] else "NOT READY"
    lines = [f"{status['model']} ({status['package']}): {state}"]
    if status["path"]:
        lines.append(f"  path {status['path']}")
    if status["problem"]:
        lines.append(f"  problem: {status['problem']}")
    return "\n".join(lines)


def init_summary(payload: dict[str, Any]) -> str:
    created = payload["created"]
    lines = [f"corpus ready at {payload['corpus']} ({len(created)} files created)"]
    lines.append(model(payload["model"]))
    lines.append(
        f'next: dory --corpus {payload["corpus"]} reindex && dory --corpus {payload["corpus"]} search "what is dory"'
    )
    return "\n".join(lines)


def write(res: WriteResponse) -> str:
    verb = f"would be {res.action}" if res.dry_run else res.action
    lines = [f"{res.path}: {verb}  {res.hash}  ({res.bytes} bytes)"]
    if res.previous_hash:
        lines.append(f"  was {res.previous_hash}")
    if res.tombstone:
        lines.append(f"  tombstone {res.tombstone}")
    if res.reason:
        lines.append(f"  reason: {res.reason}")
    return _with_warnings_and_preview(lines, res.warnings, res.preview)


def memory_write(res: MemoryWriteResponse) -> str:
    verb = f"would be {res.action}" if res.dry_run else res.action
    if res.action == "quarantined":
        return f"{res.subject}: {verb} → {res.quarantine}\n  reason: {res.reason}"
    entity = res.entity
    lines = [
        f"{res.subject}: {verb} → {res.target_path}  ({entity.id if entity else '?'}, matched by {res.matched_by})"
    ]
    if res.claim_id:
        lines.append(f"  claim {res.claim_id}  evidence {res.evidence_path}")
    if res.ended_claims:
        lines.append(f"  ends {', '.join(res.ended_claims)}")
    if res.page_hash:
        lines.append(f"  page {res.page_hash}")
    return _with_warnings_and_preview(lines, res.warnings, res.preview)


def proposal(p: Proposal, state: str, detail: bool = False, current: str | None = None) -> str:
    """One proposal; with `detail`, where it came from and why, and its change as a diff against
    `current` (the page now; None: the page would be created)."""
    w = p.write
    lines = [f"{p.id}  [{state}]  {w.action} {w.kind} about {w.subject!r} → {p.plan.target_path}", f"  {w.content}"]
    if detail:
        lines.append(f"  source: {w.source or 'not recorded'}" + (f"  (agent {w.agent})" if w.agent else ""))
        lines.append(f"  reason: {w.reason or 'not given'}")
    risks = [name for name, on in p.risk.items() if on]
    if risks:
        lines.append(f"  risk: {', '.join(risks)}")
    if p.result is not None:
        lines.append(f"  applied: {p.result.action}, evidence {p.result.evidence_path}")
    if p.rejected_reason:
        lines.append(f"  rejected: {p.rejected_reason}")
    if detail and p.plan.preview:
        lines += ["", *_diff(current, p.plan.preview, p.plan.target_path or "page")]
    return "\n".join(lines)


def _diff(current: str | None, preview: str, path: str) -> list[str]:
    """The planned page against the page now, as a unified diff (a new page: every line added)."""
    before = (current or "").splitlines()
    after = preview.rstrip("\n").splitlines()
    # The preview holds the whole file; `get` returns the body lines as stored, so compare like with like.
    label = path if current is not None else "/dev/null"
    diff = difflib.unified_diff(before, after, label, path, lineterm="")
    return list(diff) or ["(no change to the page as it is now)"]


def proposal_list(res: ProposalListResponse) -> str:
    counts = ", ".join(f"{n} {s}" for s, n in res.counts.items())
    lines = [proposal(p, p.status) for p in res.proposals]
    return "\n".join([*lines, counts])


def links(res: LinkResponse) -> str:
    lines = [f"{e.source}:{e.line} → {e.target}  ({e.kind}{'' if e.resolved else ', broken'})" for e in res.edges]
    more = f" (truncated; {res.total} in all)" if res.truncated else ""
    return "\n".join([*lines, f"{res.count} edges{more}"])


def link_lint(res: LinkLintResponse) -> str:
    lines = [
        f"{b.source}:{b.line}  {f'[[{b.target}]]' if b.kind == 'wikilink' else f'({b.target})'}  {b.reason}"
        for b in res.broken
    ]
    lines += [f"orphan  {path}" for path in res.orphans]
    lines.append(
        f"{res.files} notes, {res.edges} edges, {res.broken_total} broken links, "
        f"{res.orphans_total} orphans" + (" (lists truncated)" if res.truncated else "")
    )
    return "\n".join(lines)


def _with_warnings_and_preview(lines: list[str], warnings: list[str], preview: str | None) -> str:
    """A write's report: its lines, its warnings, then (on a dry run) the would-be file."""
    lines = [*lines, *(f"! {w}" for w in warnings)]
    if preview is not None:
        lines += ["", preview.rstrip("\n")]
    return "\n".join(lines)


def ingest(res: SessionIngestResponse) -> str:
    verb = "would import" if res.dry_run else "imported"
    out = [
        f"{verb} {len(res.sessions)} session(s) from {res.source or 'stdin'} ({res.format}); "
        f"{res.redactions} secret(s) redacted"
    ]
    out += [f"  {s.action:<12} {s.path}  (+{s.added}, {s.messages} turns)  {s.title}" for s in res.sessions]
    out += [f"  ! line {p.line}: {p.message}" if p.line else f"  ! {p.message}" for p in res.problems]
    return "\n".join(out)


def import_local(res: SessionImportResponse) -> str:
    out = [f"{name}: {root or 'not found on this machine'}" for name, root in res.roots.items()]
    out.append(", ".join(f"{key} {value}" for key, value in res.counts.items()))
    for result in res.files:
        out += [f"  {s.action:<12} {s.path} (+{s.added})" for s in result.sessions if s.action != "unchanged"]
        out += [f"  ! {result.source}:{p.line}: {p.message}" for p in result.problems]
    out += [f"! {w}" for w in res.warnings]
    return "\n".join(out)


def session_info(s: SessionInfo) -> str:
    return (
        f"{s.session_id}  [{s.status}]  {s.agent}@{s.device}  {s.updated or s.started or 'undated'}  "
        f"{s.messages} turns\n  {s.title}\n  {s.path}"
    )


def session_list(res: SessionListResponse) -> str:
    if not res.sessions:
        return "no sessions"
    out = [session_info(s) for s in res.sessions]
    if res.total > len(res.sessions):
        out.append(f"… {res.total - len(res.sessions)} more (use -n)")
    return "\n".join(out)


def session_show(res: SessionShowResponse) -> str:
    out = [session_info(res.session)]
    if res.summary:
        out += ["", res.summary.rstrip()]
    if len(res.turns) < res.total_turns:
        out.append(f"(last {len(res.turns)} of {res.total_turns} turns)")
    for turn in res.turns:
        kind = "" if turn.kind == "message" else f" · {turn.kind}"
        out += [
            "",
            f"## {turn.role} · {turn.time or 'no time'} · {turn.id}{kind}  (lines {turn.start_line}-{turn.end_line})",
            turn.text,
        ]
        out += [f"  → {call}" for call in turn.tool_calls]
    return "\n".join(out)


def context_pack(res: ContextPackResponse) -> str:
    out = [
        f"lane {res.lane}: {res.tokens} of {res.available} tokens ({res.fill_ratio:.0%}); "
        f"{len(res.archived)} archived range(s), {len(res.recalled)} recalled chunk(s)"
    ]
    out += [f"! {w}" for w in res.warnings]
    for item in res.items:
        label = f"[{item.kind}] {item.role}" + (f" · {item.id}" if item.id else "") + f" · {item.tokens} tok"
        out += ["", label, item.text]
    return "\n".join(out)


def remind(res: RemindResponse) -> str:
    out = []
    for item in res.items:
        out += [f"## {item.id} · {item.role} · {item.time or 'no time'} ({item.path})", item.text, ""]
    out += [f"! not found: {missing}" for missing in res.missing]
    return "\n".join(out).rstrip("\n")


def compact(res: CompactResponse) -> str:
    verb = "would write" if res.dry_run else "wrote"
    out = [
        f"{verb} {res.summary_path} ({res.method}, {res.words} words): {res.messages_before} messages / "
        f"{res.tokens_before} tokens → {res.messages_after} / {res.tokens_after}",
        f"proposals: {len(res.proposals)} new, {res.proposals_existing} already proposed",
    ]
    out += [f"! {w}" for w in res.warnings]
    return "\n".join([*out, "", res.summary])


def token_created(res: TokenCreated) -> str:
    expires = f", expires {res.info.expires_at}" if res.info.expires_at else ""
    return "\n".join(
        [
            f"token {res.info.name} ({', '.join(res.info.scopes)}{expires}); it is shown this once:",
            res.token,
            "use it as: Authorization: Bearer <token>",
        ]
    )


def tokens(res: TokenListResponse) -> str:
    if not res.tokens:
        return "no tokens (a server on 127.0.0.1 is then open to local callers only)"
    rows = []
    for t in res.tokens:
        state = "active" if t.active else (f"revoked {t.revoked_at}" if t.revoked_at else "expired")
        rows.append(f"{t.name:24} {','.join(t.scopes):24} {state:32} created {t.created_at} expires {t.expires_at}")
    return "\n".join(rows)
