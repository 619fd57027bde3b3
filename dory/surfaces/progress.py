"""A progress bar on a terminal (stderr), nothing when output is piped or captured.

Long commands (reindex and its embedding, migrate, eval, sessions import-local, `ops run reconcile`
when no daemon runs it) pass the callable
it yields to the service, which calls it with (phase, done, total); a phase is one bar, labelled
from LABELS, with its count and time remaining."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import TaskID

LABELS = {
    "lexical": "indexing text",
    "vectors": "embedding",
    "reading": "reading the source",
    "writing": "writing notes",
    "queries": "evaluating queries",
    "transcripts": "importing transcripts",
}


@contextmanager
def terminal_progress() -> Iterator[Callable[[str, int, int], None]]:
    if not sys.stderr.isatty():
        yield lambda phase, done, total: None
        return
    # Imported here: only a terminal draws a bar, and importing rich costs every command's start.
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    tasks: dict[str, TaskID] = {}

    def update(phase: str, done: int, total: int) -> None:
        if phase not in tasks:
            tasks[phase] = bar.add_task(LABELS.get(phase, phase), total=total)
        bar.update(tasks[phase], completed=done, total=total)

    with bar:
        yield update
