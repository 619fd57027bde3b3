"""`dory wake` and `dory context pack|remind|mark`: what an agent's model sees."""

from __future__ import annotations

import click

from dory.models import WakeRequest
from dory.surfaces.clikit import Result, command, service


@click.command()
@click.option("--profile", default="default", show_default=True,
              help="default, coding, writing, privacy, casual (or one from dory.toml)")
@click.option("--project", help="add this project's state page (slug, title or alias)")
@click.option("--budget", type=int, help="hard token budget (default 600, at most 1500)")
@click.option("--max-chars", type=int, help="hard character cap (default and at most 10000)")
@click.option("--agent", help="the agent asking (recorded only)")
@click.pass_context
@command
def wake(ctx: click.Context, profile: str, project: str | None, budget: int | None, max_chars: int | None,
         agent: str | None) -> Result:
    """The frozen block for the start of an agent session; plain output is the block itself (for hooks)."""
    req = WakeRequest(profile=profile, project=project, budget=budget, max_chars=max_chars, agent=agent)
    with service(ctx) as svc:
        res = svc.wake(req)
    return res.model_dump(mode="json"), lambda: res.block


COMMANDS: list[click.Command] = [wake]
