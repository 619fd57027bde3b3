"""One migration run, start to finish: open the source, plan, write, index, report.

The source is read twice, one item at a time: the plan pass decides what is new and where every
file goes (a dry run stops there), the write pass creates the files. Memory holds the plan (paths,
keys and digests) and the entity observations, never the export. Each item is written as
intent (fsynced manifest line) → its files, each created exclusively (never over anything) →
done, so a run killed anywhere resumes where it stopped without a duplicate or a gap (see
manifest.py). Indexing goes through `index_paths` (the index's owner) in batches as files land.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dory.corpus.atomic import create_exclusive, file_hash, sha256_of
from dory.corpus.faults import crash_point
from dory.errors import AlreadyExists, InvalidInput, NotFound, UsageError
from dory.migrate import formats, manifest, report
from dory.migrate.entities import EntityContext, compile_entities
from dory.migrate.manifest import ManifestWriter, Planned, RunRecord
from dory.migrate.model import Item, ItemProblem, ReadContext, Reader
from dory.migrate.plan import Plan, rewrite_links
from dory.migrate.source import SourceTree, open_source
from dory.models import MigrateEstimate, MigrateProblem, MigrateRequest, MigrateResponse

Progress = Callable[[str, int, int], None]
IndexPaths = Callable[[list[str]], Any]
INDEX_BATCH = 500
# An --llm run sends each note once; these bound what --estimate reports (chars per token, answer size).
CHARS_PER_TOKEN = 4
ANSWER_TOKENS = 300
PROMPT_TOKENS = 250


@dataclass
class RunOptions:
    corpus: Path
    index_paths: IndexPaths
    entities: EntityContext
    progress: Progress = lambda phase, done, total: None
    now: dt.datetime | None = None
    # The one folder inside the corpus a source may come from (inbox/import/, which nothing indexes):
    # set only by the migrate-inbox job's API, never from a request a caller sends.
    drop_folder: Path | None = None


def migrate(req: MigrateRequest, opts: RunOptions) -> MigrateResponse:
    started = time.monotonic()
    source = Path(req.source).expanduser()
    if not source.exists():
        raise NotFound(f"no such file or folder: {req.source}", path=req.source)
    resolved = source.resolve()
    if resolved.is_relative_to(opts.corpus.resolve()) and not _dropped(resolved, opts.drop_folder):
        raise InvalidInput("the source is inside the corpus; migrate from outside it", path=req.source)
    with open_source(resolved) as tree:
        reader = formats.get(req.from_format) if req.from_format else formats.detect(tree)
        into = _into(req, reader, tree)
        resumed = _resumable(opts.corpus, str(resolved), reader.name, into)
        now = _run_time(resumed, opts.now)
        ctx = ReadContext(into=into, now=now)
        plan = _plan(tree, reader, ctx, opts, resumed)
        response = MigrateResponse(
            source=str(resolved),
            format=reader.name,
            into=into,
            dry_run=req.dry_run,
            resumed=resumed is not None,
            items=dict(plan.items),
            destinations=dict(plan.destinations),
            skipped_unchanged=plan.skipped_unchanged,
            changed_since=plan.changed_since,
            clashes=plan.clashes,
            quarantined=plan.quarantined,
            entities=opts.entities.summary,
            problems=plan.problems,
        )
        if req.estimate or req.llm:
            response.estimate = _estimate(plan)
        if req.dry_run or (resumed is None and not plan.entries):
            if not req.dry_run:
                response.warnings.append("nothing new to import: every item is already in the corpus")
            response.seconds = round(time.monotonic() - started, 3)
            return response
        run_id = resumed.run if resumed else _run_id(now, str(resolved))
        header = {"t": "run", "run": run_id, "source": str(resolved), "format": reader.name, "into": into}
        response.run = run_id
        response.created = _write(tree, reader, ctx, plan, opts, header | {"started": now}, resumed)
        response.report = report.write(opts.corpus, run_id, response, plan)
        opts.index_paths([response.report])
    response.seconds = round(time.monotonic() - started, 3)
    return response


def _dropped(source: Path, drop_folder: Path | None) -> bool:
    """`source` is an entry of the drop folder itself (not the folder, nor anything deeper)."""
    return drop_folder is not None and source.parent == drop_folder.resolve()


def _into(req: MigrateRequest, reader: Reader, tree: SourceTree) -> str:
    if req.into is None:
        return formats.default_into(reader, tree)
    into = req.into.strip().strip("/")
    parts = into.split("/")
    if not into or any(p in ("", ".", "..") or p.startswith(".") for p in parts) or "\x00" in into:
        raise UsageError(f"--into must be a folder inside the corpus, like knowledge/imported: {req.into!r}")
    return into


def _resumable(corpus: Path, source: str, fmt: str, into: str) -> RunRecord | None:
    """The latest run of this very source that was interrupted: the new run continues it."""
    for record in reversed(manifest.runs(corpus)):
        h = record.header
        if (h.get("source"), h.get("format"), h.get("into")) == (source, fmt, into):
            return record if record.state == "interrupted" else None
    return None


def _run_time(resumed: RunRecord | None, now: dt.datetime | None) -> str:
    if resumed is not None and isinstance(resumed.header.get("started"), str):
        return str(resumed.header["started"])
    moment = now or dt.datetime.now(dt.UTC)
    return moment.astimezone(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _run_id(now: str, source: str) -> str:
    stamp = now.replace("-", "").replace(":", "").replace("T", "-").rstrip("Z")
    salt = hashlib.sha256(f"{source}\n{os.getpid()}\n{time.monotonic_ns()}".encode()).hexdigest()[:6]
    return f"mig-{stamp}-{salt}"


def _prior(corpus: Path) -> dict[str, str]:
    """What earlier runs imported and did not undo: item key → content digest."""
    found: dict[str, str] = {}
    for record in manifest.runs(corpus):
        if record.state != "undone":
            found.update(record.done)
    return found


def _plan(tree: SourceTree, reader: Reader, ctx: ReadContext, opts: RunOptions, resumed: RunRecord | None) -> Plan:
    prior = _prior(opts.corpus)
    if resumed is not None:
        for key in resumed.done:
            prior.pop(key, None)
    plan = Plan(opts.corpus, prior, resumed)
    total = len(tree)
    plan.problems += [_problem(p) for p in tree.problems]
    for n, found in enumerate(_read(tree, reader, ctx), 1):
        plan.add(found)
        opts.progress("reading", min(n, total), total)
    for item in compile_entities(plan.observations, ctx, opts.entities):
        plan.add(item)
    return plan


def _read(tree: SourceTree, reader: Reader, ctx: ReadContext) -> Iterator[Item | ItemProblem]:
    """The reader's items; a reader that fails outright is one problem, never a crashed run."""
    try:
        yield from reader.read(tree, ctx)
    except Exception as exc:  # a reader bug must not lose what was read before it
        yield ItemProblem(tree.label, "reader_failed", f"{reader.name} reader stopped: {type(exc).__name__}: {exc}")


def _problem(p: ItemProblem) -> MigrateProblem:
    return MigrateProblem(source=p.source, code=p.code, message=p.message)


def _write(
    tree: SourceTree,
    reader: Reader,
    ctx: ReadContext,
    plan: Plan,
    opts: RunOptions,
    header: dict[str, Any],
    resumed: RunRecord | None,
) -> int:
    path = manifest.manifest_path(opts.corpus, str(header["run"]))
    writer = ManifestWriter(path)
    created = 0
    pending: list[str] = []
    try:
        if resumed is None:
            writer.write(header, sync=True)
        seen_problems = {(p.get("source"), p.get("code")) for p in resumed.problems} if resumed else set()
        for p in plan.problems:
            if (p.source, p.code) not in seen_problems:
                writer.write({"t": "problem", "source": p.source, "code": p.code, "message": p.message})
        items = _planned_items(tree, reader, ctx, plan, opts)
        total = len(plan.entries)
        for n, item in enumerate(items, 1):
            paths = _write_item(item, plan, opts.corpus, writer)
            created += len(paths)
            pending += paths
            if len(pending) >= INDEX_BATCH:
                opts.index_paths(pending)
                pending = []
            opts.progress("writing", n, total)
        if pending:
            opts.index_paths(pending)
        writer.write({"t": "finished", "created": created, "problems": len(plan.problems)}, sync=True)
    finally:
        writer.close()
    return created


def _planned_items(tree: SourceTree, reader: Reader, ctx: ReadContext, plan: Plan, opts: RunOptions) -> Iterator[Item]:
    """The second pass: the items the plan kept, in source order, then the compiled entities."""
    for found in _read(tree, reader, ctx):
        if isinstance(found, Item) and found.key in plan.entries:
            yield found
    for item in compile_entities(plan.observations, ctx, opts.entities):
        if item.key in plan.entries:
            yield item


def _write_item(item: Item, plan: Plan, corpus: Path, writer: ManifestWriter) -> list[str]:
    """Intent, files, done. Returns the paths of the files now in place."""
    entry = plan.entries[item.key]
    if entry.digest != item.digest:  # the source changed between the passes: import it next run
        return []
    datas = [rewrite_links(out.data, plan.renames) if out.path.endswith(".md") else out.data for out in item.outputs]
    planned = [
        Planned(path, sha256_of(data), out.role)
        for path, data, out in zip(entry.finals, datas, item.outputs, strict=True)
    ]
    writer.intent(item.key, item.digest, planned)
    for n, (out, data) in enumerate(zip(planned, datas, strict=True)):
        final = _create(corpus, out.path, data, plan)
        if final != out.path:  # taken since the plan: record where it went instead
            planned[n] = Planned(final, out.sha256, out.role)
            writer.intent(item.key, item.digest, planned)
        crash_point("migrate.output")
    writer.done(item.key, item.digest)
    return [out.path for out in planned]


def _create(corpus: Path, rel: str, data: bytes, plan: Plan) -> str:
    """Create `rel` with `data`, or find it already there with these very bytes (a resumed run).
    Anything else at that path is someone else's: the file goes to the next free name."""
    while True:
        try:
            create_exclusive(corpus / rel, data)
            return rel
        except AlreadyExists:
            if file_hash(corpus / rel) == sha256_of(data):
                return rel
            plan.take(rel)
            rel = plan.fresh_path(rel)


def _estimate(plan: Plan) -> MigrateEstimate:
    calls = len(plan.llm_inputs)
    tokens = sum(chars // CHARS_PER_TOKEN + PROMPT_TOKENS for chars in plan.llm_inputs)
    return MigrateEstimate(llm_calls=calls, input_tokens=tokens, output_tokens=calls * ANSWER_TOKENS)
