"""A progress bar on a terminal (stderr), nothing when output is piped or captured.

Long commands (reindex and its embedding, migrate, eval, sessions import-local, `ops run reconcile`
when no daemon runs it) pass the callable
it yields to the service, which calls it with (phase, done, total); a phase is one bar, labelled
from LABELS, with its count, its recent rate and the time remaining (dory/index/eta.py: a rate over
the recent batches, "estimating…" until there are enough)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from dory.index.eta import Meter

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import TaskID

LABELS = {
    "lexical": "indexing text",
    "vectors": "embedding",
    "reading": "reading the source",
    "writing": "writing notes",
    "queries": "evaluating queries",
    "transcripts": "importing transcripts",
    "session vectors": "embedding session turns",
}
# What a phase counts, in its rate ("42.7 chunks/s").
UNITS = {
    "lexical": "files",
    "vectors": "chunks",
    "reading": "notes",
    "writing": "notes",
    "queries": "queries",
    "transcripts": "transcripts",
    "session vectors": "turns",
}


@contextmanager
def terminal_progress(
    console: Console | None = None, clock: Callable[[], float] = time.monotonic
) -> Iterator[Callable[[str, int, int], None]]:
    """The progress callable: bars on stderr when it is a terminal, else nothing. A test passes its
    own `console` (a terminal it reads) and `clock`."""
    if console is None and not sys.stderr.isatty():
        yield lambda phase, done, total: None
        return
    # Imported here: only a terminal draws a bar, and importing rich costs every command's start.
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[detail]}"),
        console=console or Console(stderr=True),
        transient=True,
    )
    tasks: dict[str, tuple[TaskID, Meter]] = {}

    def update(phase: str, done: int, total: int) -> None:
        if phase not in tasks:
            tasks[phase] = bar.add_task(LABELS.get(phase, phase), total=total, detail=""), Meter()
        task, meter = tasks[phase]
        meter.update(done, clock())
        bar.update(task, completed=done, total=total, detail=meter.text(done, total, UNITS.get(phase, "items")))

    with bar:
        yield update
