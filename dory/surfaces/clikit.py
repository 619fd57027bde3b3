"""What every `dory` command shares: --json output, error mapping, the service for this corpus.

This module and the command modules must not import numpy (nor dory.service, which does) at module
level: `dory.surfaces.cli.main` limits the BLAS threads before numpy loads, and can only do that if
importing the CLI has not loaded it already (tests/test_errors.py checks).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import TYPE_CHECKING, Any

import click
import pydantic

from dory.errors import DoryError, UsageError, from_validation_error

if TYPE_CHECKING:
    from dory.service import DoryService
    from dory.surfaces.http.client import RemoteService

    # What a command talks to: the corpus in this process, or a running `dory serve` (--server).
    Service = DoryService | RemoteService

# What a command returns: the JSON payload, and a function rendering it for people.
Result = tuple[dict[str, Any], Callable[[], str]]


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
        except (DoryError, pydantic.ValidationError) as exc:
            err = from_validation_error(exc) if isinstance(exc, pydantic.ValidationError) else exc
            emit_error(err, as_json)
            sys.exit(err.exit_code)
        if result is None:
            return
        payload, human = result
        if as_json:
            click.echo(json.dumps(payload, ensure_ascii=False, indent=None))
        else:
            click.echo(human())

    return wrapper


@contextmanager
def service(ctx: click.Context, **overrides: Any) -> Iterator[Service]:
    root = ctx.find_root().params
    if root.get("server"):
        from dory.surfaces.http.client import RemoteService

        remote = RemoteService(root["server"], root.get("token"))
        try:
            yield remote
        finally:
            remote.close()
        return
    from dory.service import DoryService  # numpy, faiss: loaded when a command needs the corpus
    from dory.service.settings import open_settings

    settings = open_settings(root.get("corpus"), {"state_dir": root.get("state_dir"), **overrides})
    svc = DoryService(settings, surface="cli")
    try:
        yield svc
    finally:
        svc.close()


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
