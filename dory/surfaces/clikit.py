"""What every `dory` command shares: --json output, error mapping, the service for this corpus."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import Any, TypeVar

import click
import pydantic

from dory.errors import DoryError, UsageError
from dory.service import DoryService
from dory.service.settings import open_settings

F = TypeVar("F", bound=Callable[..., Any])
# What a command returns: the JSON payload, and a function rendering it for people.
Result = tuple[dict[str, Any], Callable[[], str]]


def emit_error(exc: DoryError, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({"error": exc.to_dict()}, ensure_ascii=False))
    else:
        click.echo(f"error [{exc.code}]: {exc.message}", err=True)


def command(fn: F) -> F:
    """Adds --json and turns Dory errors into the right message and exit code."""

    @click.option("--json", "as_json", is_flag=True, help="print one JSON document")
    @wraps(fn)
    def wrapper(*args: Any, as_json: bool, **kwargs: Any) -> None:
        try:
            result = fn(*args, **kwargs)
        except pydantic.ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'input'}: {e['msg']}" for e in exc.errors())
            err = UsageError(problems)
            emit_error(err, as_json)
            sys.exit(err.exit_code)
        except DoryError as exc:
            emit_error(exc, as_json)
            sys.exit(exc.exit_code)
        if result is None:
            return
        payload, human = result
        if as_json:
            click.echo(json.dumps(payload, ensure_ascii=False, indent=None))
        else:
            click.echo(human())

    return wrapper  # type: ignore[return-value]


@contextmanager
def service(ctx: click.Context, **overrides: Any) -> Iterator[DoryService]:
    root = ctx.find_root().params
    settings = open_settings(root.get("corpus"), {"state_dir": root.get("state_dir"), **overrides})
    svc = DoryService(settings)
    try:
        yield svc
    finally:
        svc.close()
