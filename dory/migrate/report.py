"""The report of a migration run: `references/reports/migrations/<run>.md`, a note people can read.

Rewritten whole at the end of each attempt and again by undo (it is Dory's own page about the run;
the manifest beside it is the record). Long lists are cut at LIST_LIMIT lines with a count of the rest.
"""

from __future__ import annotations

from pathlib import Path

from dory.corpus.atomic import write_atomic
from dory.migrate.manifest import MIGRATIONS_FOLDER
from dory.migrate.plan import Plan
from dory.migrate.text import note
from dory.models import MigrateResponse

LIST_LIMIT = 500
UNDONE = "## Undone"


def report_path(run: str) -> str:
    return f"{MIGRATIONS_FOLDER}/{run}.md"


def write(corpus: Path, run: str, response: MigrateResponse, plan: Plan) -> str:
    rel = report_path(run)
    fm = {
        "title": f"Migration {run}",
        "type": "report",
        "status": "done",
        "source_kind": "generated",
        "run": run,
        "source": response.source,
        "format": response.format,
        "created": run[4:8] + "-" + run[8:10] + "-" + run[10:12],
    }
    write_atomic(corpus / rel, note(fm, render(response, plan)))
    return rel


def render(response: MigrateResponse, plan: Plan | None = None) -> str:
    lines = [
        f"# Migration {response.run}",
        "",
        f"- source: `{response.source}` (format `{response.format}`)",
        f"- notes went to: `{response.into}/`",
        f"- files created: {response.created}",
        f"- items already imported by an earlier run (skipped): {response.skipped_unchanged}",
        f"- items changed since an earlier run (imported again): {response.changed_since}",
        f"- resumed an interrupted run: {'yes' if response.resumed else 'no'}",
        f"- undo: `dory migrate undo {response.run}`",
        "",
        "## Items by kind",
        "",
        *[f"- {kind}: {count}" for kind, count in sorted(response.items.items())],
        "",
        "## Where files went",
        "",
        *[f"- `{folder}/`: {count}" for folder, count in sorted(response.destinations.items())],
    ]
    lines += _section(
        "Name clashes (renamed, nothing overwritten)",
        [f"- `{c.wanted}` → `{c.used}`: {c.reason}" for c in response.clashes],
    )
    lines += _section(
        "Quarantined (kept out of memory; review in inbox/quarantine/)",
        [f"- `{q.path}`: {q.reason}" for q in response.quarantined],
    )
    lines += _section(
        "Entities",
        [
            f"- {e.name} ({e.family}, `{e.path}`{', existing page kept' if e.existing else ''}): {e.claims} claims"
            + (f"; merged spellings: {', '.join(e.merged)}" if e.merged else "")
            for e in response.entities
        ],
    )
    lines += _section("Imported with a note", [f"- `{n.source}`: {n.note}" for n in response.notes])
    lines += _section("Problems (not imported)", [f"- `{p.source}`: {p.code}: {p.message}" for p in response.problems])
    return "\n".join(lines)


def _section(title: str, rows: list[str]) -> list[str]:
    if not rows:
        return []
    shown = rows[:LIST_LIMIT]
    more = [f"- … and {len(rows) - LIST_LIMIT} more"] if len(rows) > LIST_LIMIT else []
    return ["", f"## {title}", "", *shown, *more]


def append_undo(corpus: Path, run: str, removed: int, already_gone: int, kept: list[str]) -> str | None:
    """Add what undo did to the run's report (when the report is still there and says it not yet)."""
    path = corpus / report_path(run)
    if not path.is_file():
        return None
    text = path.read_text("utf-8").rstrip("\n")
    if f"\n{UNDONE}\n" in text:
        return report_path(run)
    rows = [f"- removed: {removed} files", f"- already gone: {already_gone}"]
    rows += [f"- kept (edited since the run): `{p}`" for p in kept]
    write_atomic(path, (text + f"\n\n{UNDONE}\n\n" + "\n".join(rows) + "\n").encode("utf-8"))
    return report_path(run)
