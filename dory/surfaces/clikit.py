"""What every `dory` command shares: --json output, error mapping, the service for this corpus.

This module and the command modules must not import numpy (nor dory.service, which does) at module
level: `dory.surfaces.cli.main` limits the BLAS threads before numpy loads, and can only do that if
importing the CLI has not loaded it already (tests/test_errors.py checks). Nor pydantic (dory.models,
dory.config) or rich: `dory --help` and a one-shot command start faster without them (SPEC §11), so a
command imports what it needs inside its function (tests/surfaces/test_cli_imports.py checks).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import TYPE_CHECKING, Any

import click

from dory.errors import DoryError, UsageError, from_validation_error
from dory.surfaces.services import open_service

if TYPE_CHECKING:
    from dory.surfaces.hooks.target import Target
    from dory.surfaces.services import Service

# What a command returns: the JSON payload, and a function rendering it for people.
Result = tuple[dict[str, Any], Callable[[], str]]


class Partial(Exception):
    """Raised by a command that did only part of what was asked (`context remind` with an unknown id):
    its result is printed as usual, then the command exits with `error`'s code (and, with --json, the
    payload carries the error too), so a script sees the failure without losing what was found."""

    def __init__(self, result: Result, error: DoryError) -> None:
        super().__init__(error.message)
        self.result = result
        self.error = error


def emit_error(exc: DoryError, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({"error": exc.to_dict()}, ensure_ascii=False))
    else:
        click.echo(f"error [{exc.code}]: {exc.message}", err=True)


def command(fn: Callable[..., Result | None]) -> Callable[..., None]:
    """Adds --json and turns Dory errors into the right message and exit code."""

    @click.option("--json", "as_json", is_flag=True, help="print one JSON document")
    @wraps(fn)
    def wrapper(*args: Any, as_json: bool, **kwargs: Any) -> None:
        try:
            result = fn(*args, **kwargs)
        except Partial as partial:
            _emit(partial.result, as_json, partial.error)
            sys.exit(partial.error.exit_code)
        except Exception as exc:
            err = _as_dory_error(exc)
            if err is None:
                raise
            emit_error(err, as_json)
            sys.exit(err.exit_code)
        if result is not None:
            _emit(result, as_json)

    return wrapper


def _as_dory_error(exc: Exception) -> DoryError | None:
    """The Dory error an exception stands for: itself, a model's validation error mapped to one, else None."""
    if isinstance(exc, DoryError):
        return exc
    # Imported here, on the error path: `--help` and commands without models never load pydantic.
    import pydantic

    return from_validation_error(exc) if isinstance(exc, pydantic.ValidationError) else None


def _emit(result: Result, as_json: bool, error: DoryError | None = None) -> None:
    payload, human = result
    if as_json:
        body = payload if error is None else {**payload, "error": error.to_dict()}
        click.echo(json.dumps(body, ensure_ascii=False, indent=None))
        return
    click.echo(human())
    if error is not None:
        emit_error(error, as_json=False)


@contextmanager
def service(ctx: click.Context, **overrides: Any) -> Iterator[Service]:
    root = ctx.find_root().params
    with open_service(
        root.get("corpus"), root.get("state_dir"), root.get("server"), root.get("token"), **overrides
    ) as svc:
        yield svc


def hook_target(ctx: click.Context) -> Target:
    """The Dory a hook command talks to, from the global options (and their environment variables)."""
    from dory.surfaces.hooks.target import Target  # dory.corpora, platformdirs: only for hook commands

    root = ctx.find_root().params
    return Target.from_options(root.get("corpus"), root.get("state_dir"), root.get("server"), root.get("token"))


def read_input(source: str, limit: int, what: str) -> bytes:
    """The bytes of a file named on the command line (`-` is stdin), at most `limit`: a device such
    as /dev/zero or an endless pipe is cut off with a usage error instead of read without bound."""
    try:
        if source == "-":
            raw = sys.stdin.buffer.read(limit + 1)
        else:
            with open(source, "rb") as handle:
                raw = handle.read(limit + 1)
    except OSError as exc:
        raise UsageError(f"cannot read {what} {source}: {exc.strerror or exc}") from exc
    if len(raw) > limit:
        raise UsageError(f"{what} {source} is larger than {limit} bytes")
    return raw
