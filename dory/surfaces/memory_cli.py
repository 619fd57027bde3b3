"""`dory write`, `dory memory-write`, `dory proposals …` and `dory link …`: the commands that
write memory or read its link graph. Each builds one request model and calls the service."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from dory.errors import NotFound, UsageError
from dory.surfaces import render
from dory.surfaces.clikit import Result, command, read_input, service

if TYPE_CHECKING:
    from dory.models import ProposalStatus


def read_content(content: str | None, file: str | None) -> str:
    """The text to write: --content, or --file (`-` reads stdin); exactly one of them."""
    from dory.models.common import MAX_REQUEST_CHARS  # pydantic: loaded only when a command runs

    if (content is None) == (file is None):
        raise UsageError("give the text with --content TEXT or --file PATH (- for stdin)")
    if content is not None:
        return content
    raw = read_input(str(file), MAX_REQUEST_CHARS, "--file")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"--file is not UTF-8 text (byte {exc.start})") from exc


def parse_frontmatter(raw: str | None, fields: tuple[str, ...]) -> dict[str, Any] | None:
    """--frontmatter '{"json": "object"}' and repeatable --set key=value, merged."""
    from dory.models.common import loads_json  # pydantic: loaded only when a command runs

    merged: dict[str, Any] = {}
    if raw:
        try:
            value = loads_json(raw)
        except ValueError as exc:
            raise UsageError(f"--frontmatter is not JSON: {exc}") from exc
        if not isinstance(value, dict):
            raise UsageError("--frontmatter must be a JSON object")
        merged.update(value)
    for item in fields:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set takes key=value, not {item!r}")
        merged[key.strip()] = value
    return merged or None


@click.command()
@click.argument("path")
@click.option(
    "--kind",
    type=click.Choice(["create", "append", "replace", "forget"]),
    default="create",
    show_default=True,
    help="create never overwrites; replace needs --expected-hash",
)
@click.option("--content", help="the markdown to write (may start with a frontmatter block)")
@click.option("--file", "file", help="read the markdown from this file (- for stdin)")
@click.option("--frontmatter", "frontmatter_json", help="frontmatter fields as a JSON object")
@click.option("--set", "fields", multiple=True, metavar="KEY=VALUE", help="one frontmatter field (repeatable)")
@click.option("--expected-hash", help="sha256:… of the version you read (`dory get` prints it)")
@click.option("--reason", help="why (required by forget)")
@click.option("--dry-run", is_flag=True, help="show the result and its hash; write nothing")
@click.option("--soft", is_flag=True, help="quarantine unsafe content under inbox/quarantine/ instead of failing")
@click.option("--agent", help="who is writing (kept in the write log, tombstones and quarantine notes)")
@click.option("--source", help="where the content came from (a note, session or URL), kept in the write log")
@click.pass_context
@command
def write(
    ctx: click.Context,
    path: str,
    kind: str,
    content: str | None,
    file: str | None,
    frontmatter_json: str | None,
    fields: tuple[str, ...],
    expected_hash: str | None,
    reason: str | None,
    dry_run: bool,
    soft: bool,
    agent: str | None,
    source: str | None,
) -> Result:
    """Write one note at PATH exactly (create, append, replace or forget), from --content or --file."""
    from dory.models import WriteRequest  # pydantic models: loaded only when a command runs

    text = "" if kind == "forget" and content is None and file is None else read_content(content, file)
    req = WriteRequest(
        path=path,
        kind=kind,
        content=text,
        frontmatter=parse_frontmatter(frontmatter_json, fields),
        expected_hash=expected_hash,
        reason=reason,
        dry_run=dry_run,
        soft=soft,
        agent=agent,
        source=source,
    )
    with service(ctx) as svc:
        res = svc.write(req)
    return res.model_dump(mode="json"), lambda: render.write(res)


SEMANTIC_OPTIONS = [
    click.option(
        "--kind",
        type=click.Choice(["fact", "preference", "state", "decision", "note"]),
        default="fact",
        show_default=True,
    ),
    click.option(
        "--action",
        type=click.Choice(["write", "replace", "forget"]),
        default="write",
        show_default=True,
        help="replace supersedes the active claims of this kind; forget retires them",
    ),
    click.option(
        "--scope",
        type=click.Choice(["person", "project", "concept", "decision", "core"]),
        help="where to look for SUBJECT (and where a new page goes if nothing matches)",
    ),
    click.option("--reason", help="why (kept in the evidence artifact)"),
    click.option("--agent", help="who is writing"),
    click.option("--source", help="where the statement came from (a note or session path)"),
]


def semantic_options(fn: Any) -> Any:
    for option in reversed(SEMANTIC_OPTIONS):
        fn = option(fn)
    return fn


@click.command(name="memory-write")
@click.argument("subject")
@click.argument("content")
@semantic_options
@click.option("--allow-canonical", is_flag=True, help="write the canonical page now (else use a proposal)")
@click.option("--dry-run", is_flag=True, help="show the page as it would be rendered; write nothing")
@click.option("--soft", is_flag=True, help="quarantine instead of failing (unsafe content, unknown subject)")
@click.pass_context
@command
def memory_write(ctx: click.Context, subject: str, content: str, **options: Any) -> Result:
    """Remember CONTENT about SUBJECT (a person, project, concept or decision): a claim with evidence,
    rendered into its canonical page."""
    from dory.models import MemoryWriteRequest  # pydantic models: loaded only when a command runs

    req = MemoryWriteRequest(subject=subject, content=content, **options)
    with service(ctx) as svc:
        res = svc.memory_write(req)
    return res.model_dump(mode="json"), lambda: render.memory_write(res)


@click.group()
def proposals() -> None:
    """Semantic writes waiting for review (inbox/proposed → applied | rejected)."""


@proposals.command(name="create")
@click.argument("subject")
@click.argument("content")
@semantic_options
@click.option("--id", "proposal_id", help="an explicit id (default: date, subject and a content hash)")
@click.pass_context
@command
def proposals_create(ctx: click.Context, subject: str, content: str, proposal_id: str | None, **options: Any) -> Result:
    """Plan a semantic write (a dry run) and keep it for review."""
    from dory.models import (  # pydantic models: loaded only when a command runs
        MemoryWriteRequest,
        ProposalCreateRequest,
    )

    req = ProposalCreateRequest(write=MemoryWriteRequest(subject=subject, content=content, **options), id=proposal_id)
    with service(ctx) as svc:
        res = svc.proposal_create(req)
    return res.model_dump(mode="json"), lambda: render.proposal(res.proposal, "created" if res.created else "exists")


@proposals.command(name="list")
@click.option("--status", type=click.Choice(["proposed", "applied", "rejected"]))
@click.pass_context
@command
def proposals_list(ctx: click.Context, status: ProposalStatus | None) -> Result:
    """List proposals (all, or one status)."""
    with service(ctx) as svc:
        res = svc.proposal_list(status)
    return res.model_dump(mode="json"), lambda: render.proposal_list(res)


@proposals.command(name="show")
@click.argument("proposal_id")
@click.pass_context
@command
def proposals_show(ctx: click.Context, proposal_id: str) -> Result:
    """Show one proposal: where it came from and why, its route, risk flags, and the change it would
    make to the page (a diff against the page as it is now)."""
    with service(ctx) as svc:
        res = svc.proposal_show(proposal_id)
        current = _current_text(svc, res.plan.target_path)
    return res.model_dump(mode="json"), lambda: render.proposal(res, res.status, detail=True, current=current)


def _current_text(svc: Any, path: str | None) -> str | None:
    """The page a proposal would change, as it is now (None when it does not exist yet)."""
    from dory.models import GetRequest  # pydantic models: loaded only when a command runs

    if not path:
        return None
    try:
        return str(svc.get(GetRequest(path=path)).content)
    except NotFound:
        return None


@proposals.command(name="apply")
@click.argument("proposal_id")
@click.pass_context
@command
def proposals_apply(ctx: click.Context, proposal_id: str) -> Result:
    """Apply a proposal (refused as stale if its page or subject changed since)."""
    from dory.models import ProposalDecision  # pydantic models: loaded only when a command runs

    with service(ctx) as svc:
        res = svc.proposal_apply(ProposalDecision(id=proposal_id))
    return res.model_dump(mode="json"), lambda: render.proposal(res, "applied")


@proposals.command(name="reject")
@click.argument("proposal_id")
@click.option("--reason", help="why (kept with the proposal)")
@click.pass_context
@command
def proposals_reject(ctx: click.Context, proposal_id: str, reason: str | None) -> Result:
    """Reject a proposal (moved to inbox/rejected/)."""
    from dory.models import ProposalDecision  # pydantic models: loaded only when a command runs

    with service(ctx) as svc:
        res = svc.proposal_reject(ProposalDecision(id=proposal_id, reason=reason))
    return res.model_dump(mode="json"), lambda: render.proposal(res, "rejected")


@click.group()
def link() -> None:
    """The link graph: [[wikilinks]], markdown links and mentions of known entities."""


LINK_OPTIONS = [
    click.option("--depth", default=1, show_default=True, type=int),
    click.option("--max-edges", default=40, show_default=True, type=int),
    click.option("--exclude-prefix", multiple=True, help="drop edges touching this path prefix (repeatable)"),
    click.option("--no-mentions", is_flag=True, help="explicit links only"),
]


def link_options(fn: Any) -> Any:
    for option in reversed(LINK_OPTIONS):
        fn = option(fn)
    return fn


def _links(
    ctx: click.Context,
    path: str,
    direction: str,
    depth: int,
    max_edges: int,
    exclude_prefix: tuple[str, ...],
    no_mentions: bool,
) -> Result:
    from dory.models import LinkRequest  # pydantic models: loaded only when a command runs

    req = LinkRequest(
        path=path,
        direction=direction,
        depth=depth,
        max_edges=max_edges,
        exclude_prefix=list(exclude_prefix),
        mentions=not no_mentions,
    )
    with service(ctx) as svc:
        res = svc.links(req)
    return res.model_dump(mode="json"), lambda: render.links(res)


@link.command(name="neighbors")
@click.argument("path")
@click.option("--direction", type=click.Choice(["out", "in", "both"]), default="both", show_default=True)
@link_options
@click.pass_context
@command
def link_neighbors(ctx: click.Context, path: str, direction: str, **options: Any) -> Result:
    """Notes PATH links to and notes linking to it (breadth-first up to --depth)."""
    return _links(ctx, path, direction, **options)


@link.command(name="backlinks")
@click.argument("path")
@link_options
@click.pass_context
@command
def link_backlinks(ctx: click.Context, path: str, **options: Any) -> Result:
    """Notes that link to (or mention) PATH."""
    return _links(ctx, path, "in", **options)


@link.command(name="lint")
@click.option("--max-items", default=200, show_default=True, type=int)
@click.option("--exclude-prefix", multiple=True, help="ignore notes under this prefix (repeatable)")
@click.pass_context
@command
def link_lint(ctx: click.Context, max_items: int, exclude_prefix: tuple[str, ...]) -> Result:
    """Broken links (with line numbers) and orphan notes."""
    from dory.models import LinkLintRequest  # pydantic models: loaded only when a command runs

    with service(ctx) as svc:
        res = svc.link_lint(LinkLintRequest(max_items=max_items, exclude_prefix=list(exclude_prefix)))
    return res.model_dump(mode="json"), lambda: render.link_lint(res)


COMMANDS = [write, memory_write, proposals, link]
