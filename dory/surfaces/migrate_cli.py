"""`dory migrate SRC`, `dory migrate runs`, `dory migrate undo RUN`: bring in what people already have.

`migrate` is a group whose first argument is either a subcommand (`runs`, `undo`) or the source to
migrate, so `dory migrate ~/export.zip --dry-run` reads as people expect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from dory.errors import UsageError
from dory.surfaces.clikit import Result, command, service
from dory.surfaces.progress import terminal_progress

if TYPE_CHECKING:
    from dory.models import MigrateResponse, MigrateUndoResponse, MigrationRunsResponse

RUN = "run"


class _SourceOrCommand(click.Group):
    """`dory migrate SRC …` runs the hidden `run` command; `dory migrate runs|undo …` the named one."""

    default_command = RUN

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # `dory migrate --from keep SRC` too: anything but a subcommand or --help goes to `run`.
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = [RUN, *args]
        return super().parse_args(ctx, args)


@click.group(cls=_SourceOrCommand)
def migrate() -> None:
    """Import notes, chats and memories from other tools (SRC: a folder, a zip or a file).

    \b
      dory migrate ~/Downloads/notion-export.zip --dry-run
      dory migrate ~/vault                       (Obsidian, Logseq, any markdown folder)
      dory migrate conversations.json            (ChatGPT or Claude.ai: sessions)
      dory migrate runs
      dory migrate undo RUN

    Each run is recorded with a manifest: running it again creates nothing new, an interrupted
    run resumes, and `undo` removes exactly what the run created that nobody edited since.
    """


@migrate.command(RUN, hidden=True)
@click.argument("source")
@click.option("--from", "from_format", help="the source's format (default: detected); see `dory migrate formats`")
@click.option("--into", help="corpus folder for imported notes (default: knowledge/<source name>)")
@click.option("--dry-run", is_flag=True, help="print the plan; write nothing")
@click.option("--estimate", is_flag=True, help="with the plan: LLM calls and tokens an --llm run would spend")
@click.option("--llm", is_flag=True, help="also extract claims from notes with the configured LLM")
@click.pass_context
@command
def run(
    ctx: click.Context, source: str, from_format: str | None, into: str | None, dry_run: bool, estimate: bool, llm: bool
) -> Result:
    """Import notes, chats and memories from another tool (SOURCE: a folder, a zip or a file) as one
    run: idempotent, resumable and undoable; --dry-run shows the plan first."""
    from dory.models import MigrateRequest  # pydantic models: loaded only when a command runs

    req = MigrateRequest(
        source=source, from_format=from_format, into=into, dry_run=dry_run or estimate, estimate=estimate, llm=llm
    )
    with service(ctx) as svc, terminal_progress() as progress:
        migrations = getattr(svc, "migrations", None)
        if migrations is None:
            raise UsageError("migrate reads files on this machine: run it without --server / DORY_URL")
        res = migrations.migrate(req, progress)
    return res.model_dump(mode="json"), lambda: render_migration(res)


@migrate.command()
@click.pass_context
@command
def runs(ctx: click.Context) -> Result:
    """List migration runs, oldest first."""

    with service(ctx) as svc:
        res: MigrationRunsResponse = _local(svc).runs()
    lines = [f"{r.run}  {r.state:<11} {r.created:>6} files  {r.format:<10} {r.source}" for r in res.runs]
    return res.model_dump(mode="json"), lambda: "\n".join(lines) or "no migration runs yet"


@migrate.command()
@click.argument("run_id", metavar="RUN")
@click.option("--dry-run", is_flag=True, help="list what would be removed; remove nothing")
@click.pass_context
@command
def undo(ctx: click.Context, run_id: str, dry_run: bool) -> Result:
    """Remove the files run RUN created, except those edited since (they are listed and kept)."""
    from dory.models import MigrateUndoRequest  # pydantic models: loaded only when a command runs

    with service(ctx) as svc:
        res = _local(svc).undo(MigrateUndoRequest(run=run_id, dry_run=dry_run))
    return res.model_dump(mode="json"), lambda: render_undo(res)


@migrate.command()
@command
def formats() -> Result:
    """The formats migrate reads."""
    from dory.migrate import formats as known

    # A reader's class docstring's first line describes it; a reader without one is listed by name.
    listed = {reader.name: next(iter((reader.__doc__ or "").strip().splitlines()), "") for reader in known.READERS}
    return listed, lambda: "\n".join(f"{name:<14} {text}" for name, text in listed.items())


def _local(svc: Any) -> Any:
    migrations = getattr(svc, "migrations", None)
    if migrations is None:
        raise UsageError("migrate works on the corpus on this machine: run it without --server / DORY_URL")
    return migrations


def render_migration(res: MigrateResponse) -> str:
    head = (
        "plan (dry run, nothing written)" if res.dry_run else f"run {res.run}" + (" (resumed)" if res.resumed else "")
    )
    lines = [f"{head}: {res.source} as {res.format} → {res.into}/"]
    lines.append("  items: " + ", ".join(f"{k} {v}" for k, v in sorted(res.items.items())))
    lines.append("  files by folder: " + ", ".join(f"{k}/ {v}" for k, v in sorted(res.destinations.items())))
    if not res.dry_run:
        lines.append(f"  created {res.created} files")
    lines.append(
        f"  already imported (skipped): {res.skipped_unchanged}; changed since (imported again): {res.changed_since}"
    )
    lines += [f"  clash: {c.wanted} → {c.used}" for c in res.clashes[:50]]
    lines += [f"  quarantined: {q.path}: {q.reason}" for q in res.quarantined[:50]]
    if res.entities:
        lines.append(f"  entities: {len(res.entities)}")
        lines += [f"    {e.name} ({e.family}) {e.path}: {e.claims} claims" for e in res.entities[:30]]
    if res.estimate:
        e = res.estimate
        lines.append(f"  LLM: {e.llm_calls} calls, ~{e.input_tokens} input and ~{e.output_tokens} output tokens")
    lines += [f"  note: {n.source}: {n.note}" for n in res.notes[:50]]
    lines += [f"  ! {p.source}: {p.code}: {p.message}" for p in res.problems[:50]]
    if len(res.problems) > 50:
        lines.append(f"  ! … {len(res.problems) - 50} more problems (see the report)")
    if res.report:
        lines.append(f"  report: {res.report}")
    return "\n".join(lines)


def render_undo(res: MigrateUndoResponse) -> str:
    verb = "would remove" if res.dry_run else "removed"
    lines = [f"{verb} {len(res.removed)} files of {res.run}; {len(res.already_gone)} were already gone"]
    lines += [f"  kept (edited since the run): {p}" for p in res.kept_edited]
    return "\n".join(lines)


COMMANDS = [migrate]
