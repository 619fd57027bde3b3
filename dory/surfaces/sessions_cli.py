"""`dory sessions …`: ingest and import agent transcripts, list, show, history, export, rename,
delete (a tombstone), restore, search (recall) and compact. Each builds one request model and calls
the service."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from dory.errors import InvalidInput, UsageError
from dory.surfaces import render
from dory.surfaces.clikit import Partial, Result, command, hook_target, service
from dory.surfaces.hooks import capture
from dory.surfaces.progress import terminal_progress

if TYPE_CHECKING:
    from dory.models import SessionUpdateRequest


@click.group()
def sessions() -> None:
    """Agent session transcripts (logs/sessions/): ingest, browse, recall, compact."""


def read_source(source: str) -> tuple[str, str | None]:
    """A harness file's text (`-` reads stdin) and its path; bytes that are not UTF-8 become U+FFFD."""
    if source == "-":
        return sys.stdin.buffer.read().decode("utf-8", errors="replace"), None
    path = Path(source)
    if path.is_dir():
        raise UsageError(f"{source} is a folder; give one transcript file (or use `dory sessions import-local`)")
    try:
        return path.read_bytes().decode("utf-8", errors="replace"), str(path)
    except OSError as exc:
        raise UsageError(f"cannot read {source}: {exc.strerror}") from exc


@sessions.command()
@click.argument("source")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["auto", "markdown", "jsonl", "claude-code", "codex"]),
    default="auto",
    show_default=True,
)
@click.option("--agent", help="agent name when the file does not say (default: from the format)")
@click.option("--device", help="device name (default: this machine's host name)")
@click.option("--dry-run", is_flag=True, help="parse and report; write nothing")
@click.pass_context
@command
def ingest(ctx: click.Context, source: str, fmt: str, agent: str | None, device: str | None, dry_run: bool) -> Result:
    """Import one transcript file (SOURCE: its path, or - for stdin). Re-importing adds only new turns."""
    from dory.models import SessionIngestRequest  # pydantic models: loaded only when a command runs

    content, source_path = read_source(source)
    req = SessionIngestRequest(
        content=content,
        format=fmt,
        source_path=source_path,
        agent=agent,
        device=device,
        dry_run=dry_run,
    )
    with service(ctx) as svc:
        res = svc.sessions.ingest(req)
    result: Result = (res.model_dump(mode="json"), lambda: render.ingest(res))
    if not res.sessions:
        why = res.problems[-1].message if res.problems else "no messages"
        raise Partial(result, InvalidInput(f"nothing imported from {source_path or 'stdin'}: {why}"))
    return result


@sessions.command("import-local")
@click.option("--since", help="YYYY-MM-DD: only transcripts modified since")
@click.option(
    "--harness",
    "harnesses",
    multiple=True,
    type=click.Choice(["claude-code", "codex"]),
    help="only this harness (repeatable; default both)",
)
@click.option("--dry-run", is_flag=True)
@click.pass_context
@command
def import_local(ctx: click.Context, since: str | None, harnesses: tuple[str, ...], dry_run: bool) -> Result:
    """Import this machine's Claude Code (~/.claude/projects) and Codex (~/.codex/sessions) transcripts."""
    from dory.models import SessionImportRequest  # pydantic models: loaded only when a command runs

    req = SessionImportRequest(since=since, dry_run=dry_run, harnesses=list(harnesses) or ["claude-code", "codex"])
    with service(ctx) as svc, terminal_progress() as progress:
        res = svc.sessions.import_local(req, progress)
    return res.model_dump(mode="json"), lambda: render.import_local(res)


@sessions.command("list")
@click.option("--agent")
@click.option("--since", help="YYYY-MM-DD")
@click.option("--status", help="active, done, interrupted or deleted")
@click.option("--all", "include_deleted", is_flag=True, help="include deleted sessions")
@click.option("-n", "--limit", default=50, show_default=True, type=int)
@click.pass_context
@command
def list_sessions(
    ctx: click.Context, agent: str | None, since: str | None, status: str | None, include_deleted: bool, limit: int
) -> Result:
    """Sessions, most recently updated first."""
    from dory.models import SessionListRequest  # pydantic models: loaded only when a command runs

    req = SessionListRequest(agent=agent, since=since, status=status, include_deleted=include_deleted, limit=limit)
    with service(ctx) as svc:
        res = svc.sessions.list(req)
    return res.model_dump(mode="json"), lambda: render.session_list(res)


@sessions.command()
@click.argument("session_id")
@click.pass_context
@command
def show(ctx: click.Context, session_id: str) -> Result:
    """A whole session: every turn with its id and line range."""
    with service(ctx) as svc:
        res = svc.sessions.show(session_id)
    return res.model_dump(mode="json"), lambda: render.session_show(res)


@sessions.command()
@click.argument("session_id")
@click.option("-n", "last", default=10, show_default=True, type=click.IntRange(1, 100_000), help="last N turns")
@click.pass_context
@command
def history(ctx: click.Context, session_id: str, last: int) -> Result:
    """The last N turns of a session."""
    with service(ctx) as svc:
        res = svc.sessions.show(session_id, last)
    return res.model_dump(mode="json"), lambda: render.session_show(res)


@sessions.command()
@click.argument("session_id")
@click.option("--format", "fmt", type=click.Choice(["markdown", "jsonl"]), default="markdown", show_default=True)
@click.pass_context
@command
def export(ctx: click.Context, session_id: str, fmt: str) -> Result:
    """Print a session as Dory markdown or as generic JSONL (which `ingest --format jsonl` reads back)."""
    with service(ctx) as svc:
        res = svc.sessions.export(session_id, fmt)
    return res.model_dump(mode="json"), lambda: res.content.rstrip("\n")


@sessions.command()
@click.argument("session_id")
@click.argument("title")
@click.pass_context
@command
def rename(ctx: click.Context, session_id: str, title: str) -> Result:
    """Give a session a title (kept when the session is imported again)."""
    from dory.models import SessionUpdateRequest  # pydantic models: loaded only when a command runs

    return _update(ctx, SessionUpdateRequest(id=session_id, action="rename", title=title))


@sessions.command()
@click.argument("session_id")
@click.pass_context
@command
def delete(ctx: click.Context, session_id: str) -> Result:
    """Tombstone a session: hidden from list, search and recall; its text stays; `restore` undoes it."""
    from dory.models import SessionUpdateRequest  # pydantic models: loaded only when a command runs

    return _update(ctx, SessionUpdateRequest(id=session_id, action="delete"))


@sessions.command()
@click.argument("session_id")
@click.pass_context
@command
def restore(ctx: click.Context, session_id: str) -> Result:
    """Undo `delete`."""
    from dory.models import SessionUpdateRequest  # pydantic models: loaded only when a command runs

    return _update(ctx, SessionUpdateRequest(id=session_id, action="restore"))


def _update(ctx: click.Context, req: SessionUpdateRequest) -> Result:
    with service(ctx) as svc:
        res = svc.sessions.update(req)
    return res.model_dump(mode="json"), lambda: render.session_info(res)


@sessions.command("search")
@click.argument("query")
@click.option("--agent")
@click.option("--device")
@click.option("--session", "session_id")
@click.option("--status")
@click.option("--since", help="YYYY-MM-DD")
@click.option("--until", help="YYYY-MM-DD")
@click.option("-k", "--limit", "k", default=10, show_default=True, type=int)
@click.pass_context
@command
def search_sessions(
    ctx: click.Context,
    query: str,
    agent: str | None,
    device: str | None,
    session_id: str | None,
    status: str | None,
    since: str | None,
    until: str | None,
    k: int,
) -> Result:
    """Recall: the past turns that best match QUERY (keywords and meaning), newest favoured."""
    from dory.models import Scope, SearchRequest  # pydantic models: loaded only when a command runs

    scope = Scope(
        agent=agent, device=device, session_id=session_id, status=[status] if status else [], since=since, until=until
    )
    req = SearchRequest(query=query, mode="recall", k=k, scope=scope)
    with service(ctx) as svc:
        res = svc.search(req)
    return res.model_dump(mode="json", exclude_none=True), lambda: render.search(res)


@sessions.command()
@click.argument("session_id")
@click.option(
    "--retain",
    default=6,
    show_default=True,
    type=click.IntRange(0, 10_000),
    help="the last N messages stay verbatim, outside the summary",
)
@click.option("--dry-run", is_flag=True, help="show the summary and the facts it would propose; write nothing")
@click.pass_context
@command
def compact(ctx: click.Context, session_id: str, retain: int, dry_run: bool) -> Result:
    """Write the session's continuation summary (facts worth keeping go to proposals first)."""
    from dory.models import CompactRequest  # pydantic models: loaded only when a command runs

    with service(ctx) as svc:
        res = svc.sessions.compact(CompactRequest(id=session_id, retain=retain, dry_run=dry_run))
    return res.model_dump(mode="json"), lambda: render.compact(res)


@sessions.group()
def hook() -> None:
    """Claude Code hooks that capture the session as it goes (installed by `dory connect claude-code`)."""


DEADLINE = click.option(
    "--deadline",
    "deadline_s",
    type=float,
    default=capture.DEADLINE_S,
    show_default=True,
    help="seconds before the hook gives up (and says why on stderr)",
)


@hook.command("ingest")
@DEADLINE
@click.pass_context
def hook_ingest(ctx: click.Context, deadline_s: float) -> None:
    """Import the transcript a hook event names (Stop, SessionEnd): only its new turns; always exits 0."""
    capture.run("ingest", hook_target(ctx), deadline_s, sys.stdin.buffer)


@hook.command("precompact")
@DEADLINE
@click.pass_context
def hook_precompact(ctx: click.Context, deadline_s: float) -> None:
    """Before the harness compacts: import the transcript, then propose its durable facts; always exits 0."""
    capture.run("precompact", hook_target(ctx), deadline_s, sys.stdin.buffer)


COMMANDS = [sessions]
