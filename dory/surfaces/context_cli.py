"""`dory wake` and `dory context pack|remind|mark`: what an agent's model sees."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from dory.errors import NotFound, UsageError
from dory.surfaces import render
from dory.surfaces.clikit import Partial, Result, command, hook_target, read_input, service
from dory.surfaces.hooks import wake as wake_hook

if TYPE_CHECKING:
    from dory.models import PackInput


@click.command()
@click.option(
    "--profile",
    help="default, coding, writing, privacy, casual (or one from dory.toml); default: default, "
    "with --hook: coding in a code repository, else default",
)
@click.option("--project", help="add this project's state page (slug, title or alias)")
@click.option("--budget", type=int, help="hard token budget (default 600, at most 1500)")
@click.option("--max-chars", type=int, help="hard character cap (default and at most 10000)")
@click.option("--agent", help="the agent asking (recorded only)")
@click.option(
    "--hook",
    is_flag=True,
    help="as a SessionStart hook: read the event on stdin, print Claude Code's hook JSON, always exit 0",
)
@click.option(
    "--deadline",
    "deadline_s",
    type=float,
    default=wake_hook.DEADLINE_S,
    show_default=True,
    help="with --hook: seconds before the hook gives up (and says why on stderr)",
)
@click.pass_context
@command
def wake(
    ctx: click.Context,
    profile: str | None,
    project: str | None,
    budget: int | None,
    max_chars: int | None,
    agent: str | None,
    hook: bool,
    deadline_s: float,
) -> Result:
    """The frozen block for the start of an agent session; plain output is the block itself (for hooks)."""
    from dory.models import WakeRequest  # pydantic models: loaded only when a command runs

    if hook:
        options = wake_hook.WakeOptions(profile, project, budget, max_chars, agent, deadline_s)
        wake_hook.run(hook_target(ctx), options, sys.stdin.buffer)
    req = WakeRequest(profile=profile or "default", project=project, budget=budget, max_chars=max_chars, agent=agent)
    with service(ctx) as svc:
        res = svc.wake(req)
    return res.model_dump(mode="json"), lambda: res.block


@click.command("active-memory")
@click.argument("prompt")
@click.option(
    "--profile",
    default="auto",
    show_default=True,
    help="auto (classified from the prompt) or a wake profile: default, coding, writing, privacy, casual",
)
@click.option("--deadline-ms", type=int, default=800, show_default=True, help="answer within this many milliseconds")
@click.option("--max-evidence", type=int, default=3, show_default=True, help="evidence lines at most (1-8)")
@click.option("--max-chars", type=int, default=1200, show_default=True, help="character cap of the block")
@click.pass_context
@command
def active_memory(
    ctx: click.Context, prompt: str, profile: str, deadline_ms: int, max_evidence: int, max_chars: int
) -> Result:
    """NONE, or a compact block of evidence from memory for one prompt (synthesis plus `path:lines — quote`),
    within the deadline; stages that run late are dropped and the block says so. Coding never quotes personal
    pages."""
    from dory.models import ActiveMemoryRequest  # pydantic models: loaded only when a command runs

    req = ActiveMemoryRequest(
        prompt=prompt, profile=profile, deadline_ms=deadline_ms, max_evidence=max_evidence, max_chars=max_chars
    )
    with service(ctx) as svc:
        res = svc.active_memory(req)
    return res.model_dump(mode="json"), lambda: res.block


@click.group()
def context() -> None:
    """What a long-running agent's model should see next: pack, remind, mark."""


@context.command()
@click.option("--session", "session", help="a stored session (id, unique prefix or path)")
@click.option(
    "--messages",
    "messages_file",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="or a JSON array of {role, content, id?, kind?, time?, weight?} (- for stdin)",
)
@click.option("--query", help="what the next turn is about (archived chunks are recalled for it)")
@click.option("--budget", type=int, required=True, help="tokens the model may see")
@click.option("--reserve", type=int, help="tokens kept free for the answer (default [context] reserve)")
@click.option("--min-recent", type=int, help="the last N messages are always kept")
@click.option("--beta", type=float, help="utility = β·relevance + (1−β)·agent weight")
@click.option("--system", help="the system block (protected)")
@click.option(
    "--wake", "wake_profile", metavar="PROFILE", help="prepend `dory wake` with this profile to the system block"
)
@click.pass_context
@command
def pack(
    ctx: click.Context,
    session: str | None,
    messages_file: str | None,
    query: str | None,
    budget: int,
    reserve: int | None,
    min_recent: int | None,
    beta: float | None,
    system: str | None,
    wake_profile: str | None,
) -> Result:
    """Pack a session into a token budget: protected system/summary/recent turns, recalled chunks,
    placeholders for what was archived."""
    from dory.models import ContextPackRequest  # pydantic models: loaded only when a command runs

    messages = _read_messages(messages_file) if messages_file else None
    req = ContextPackRequest(
        session=session,
        messages=messages,
        query=query,
        budget=budget,
        reserve=reserve,
        min_recent=min_recent,
        beta=beta,
        system=system,
        wake_profile=wake_profile,
    )
    with service(ctx) as svc:
        res = svc.context.pack(req)
    return res.model_dump(mode="json"), lambda: render.context_pack(res)


def _read_messages(source: str) -> list[PackInput]:
    from dory.models import PackInput  # pydantic models: loaded only when a command runs
    from dory.models.common import MAX_INGEST_BYTES, loads_json  # pydantic: loaded only when a command runs

    raw = read_input(source, MAX_INGEST_BYTES, "--messages")
    try:
        value = loads_json(raw.decode("utf-8"))
    except ValueError as exc:  # not UTF-8, not JSON, or nested deeper than any message
        raise UsageError(f"--messages is not a JSON array of messages: {exc}") from exc
    if not isinstance(value, list):
        raise UsageError("--messages must hold a JSON array of messages")
    return [PackInput.model_validate(item) for item in value]


@context.command()
@click.argument("ids", nargs=-1, required=True)
@click.option("--session", help="look only in this session")
@click.pass_context
@command
def remind(ctx: click.Context, ids: tuple[str, ...], session: str | None) -> Result:
    """The exact archived text of message ids (m-…) or chunk ids (m-…#n)."""
    from dory.models import RemindRequest  # pydantic models: loaded only when a command runs

    with service(ctx) as svc:
        res = svc.context.remind(RemindRequest(ids=list(ids), session=session))
    result: Result = (res.model_dump(mode="json"), lambda: render.remind(res))
    if res.missing:
        raise Partial(result, NotFound(f"no archived message {', '.join(res.missing)}", ids=res.missing))
    return result


@context.command()
@click.argument("message_id")
@click.option("--weight", type=float, required=True, help="0 (default) to 100; heavier messages stay in context")
@click.option("--session", help="the session holding it (when the id is ambiguous)")
@click.pass_context
@command
def mark(ctx: click.Context, message_id: str, weight: float, session: str | None) -> Result:
    """Raise (or reset) a message's weight so context packing keeps it."""
    from dory.models import MarkRequest  # pydantic models: loaded only when a command runs

    with service(ctx) as svc:
        res = svc.context.mark(MarkRequest(id=message_id, weight=weight, session=session))
    return res.model_dump(mode="json"), lambda: f"{res.id} weight {res.weight:g} ({res.path})"


@click.command()
@click.argument("question")
@click.option("-k", "--limit", "k", default=5, show_default=True, type=int, help="search hits used as evidence (1-20)")
@click.option(
    "-m",
    "--mode",
    type=click.Choice(["hybrid", "bm25"]),
    default="hybrid",
    show_default=True,
    help="the search that finds the evidence (hybrid uses vectors when there are some)",
)
@click.option("--no-llm", is_flag=True, help="extract the answer even when [llm] is configured")
@click.option("--save", is_flag=True, help="write it to references/research/<date>-<slug>.md (a clash gets a suffix)")
@click.pass_context
@command
def research(ctx: click.Context, question: str, k: int, mode: str, no_llm: bool, save: bool) -> Result:
    """Answer QUESTION from the corpus with cited evidence: Question, Answer, Evidence, Sources.

    Without an LLM the answer is the evidence sentences sharing most words with the question; with one,
    a citation that is not a real path and line range of the evidence is dropped and reported. With no
    evidence the answer says so, and --save refuses (exit 3)."""
    from dory.models import ResearchRequest  # pydantic models: loaded only when a command runs

    req = ResearchRequest(question=question, k=k, mode=mode, llm=not no_llm, save=save)
    with service(ctx) as svc:
        res = svc.research(req)
    return res.model_dump(mode="json"), lambda: render.research(res)


COMMANDS: list[click.Command] = [wake, active_memory, research, context]
