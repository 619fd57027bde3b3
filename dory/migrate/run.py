"""One migration run, start to finish: open the source, plan, write, index, report.

The source is read twice, one item at a time: the plan pass decides what is new and where every
file goes (a dry run stops there), the write pass creates the files. Memory holds the plan (paths,
keys and digests) and the entity observations, never the export. Each item is written as
intent (fsynced manifest line) → its files, each created exclusively (never over anything) →
done, so a run killed anywhere resumes where it stopped without a duplicate or a gap (see
manifest.py); the run is marked finished only once its report is written and indexed. Indexing
goes through `index_paths` (the index's owner) in batches as files land.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import posixpath
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dory.corpus.atomic import create_exclusive, file_hash, repair_leftovers, sha256_of
from dory.corpus.faults import crash_point
from dory.errors import AlreadyExists, DoryError, InvalidInput, NotFound, UsageError, storage_error
from dory.memory.entities import Registry
from dory.migrate import formats, llm_claims, manifest, report
from dory.migrate.entities import EntityContext, compile_entities
from dory.migrate.llm_claims import ClaimExtractor
from dory.migrate.manifest import ManifestWriter, Planned, RunRecord
from dory.migrate.model import Item, ItemProblem, ReadContext, Reader
from dory.migrate.plan import Plan, rewrite_links
from dory.migrate.source import SourceTree, open_source
from dory.models import MigrateEstimate, MigrateProblem, MigrateRequest, MigrateResponse

Progress = Callable[[str, int, int], None]
IndexPaths = Callable[[list[str]], Any]
INDEX_BATCH = 500
# What --estimate reports for the requests an --llm run sends (llm_claims.py): characters per token,
# and the answer each request is budgeted.
CHARS_PER_TOKEN = 4
ANSWER_TOKENS = 300


@dataclass
class RunOptions:
    corpus: Path
    index_paths: IndexPaths
    entities: EntityContext
    progress: Progress = lambda phase, done, total: None
    now: dt.datetime | None = None
    claims: ClaimExtractor = field(default_factory=ClaimExtractor)  # --llm: the model (and its answers)
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
    with open_source(resolved, skip=opts.corpus.resolve()) as tree:
        reader = formats.get(req.from_format) if req.from_format else formats.detect(tree)
        into = _into(req, reader, tree)
        resumed = _resumable(opts.corpus, str(resolved), reader.name, into)
        if resumed is not None:
            _forget_own_pages(opts.entities, resumed)
        now = _run_time(resumed, opts.now)
        ctx = ReadContext(into=into, now=now)
        plan = _plan(tree, reader, ctx, opts, resumed, req)
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
            notes=plan.notes,
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
        try:
            response.created = _write(tree, reader, ctx, plan, opts, header | {"started": now}, resumed)
            # The report before `finished`: a run killed before its report is resumed, and writes it then.
            response.report = report.write(opts.corpus, run_id, response, plan)
            opts.index_paths([response.report])
            manifest.finish(opts.corpus, run_id, response.created, len(plan.problems))
        except OSError as exc:  # a full disk, a read-only folder: the run stops here, resumable
            raise _stopped(exc, opts.corpus, run_id) from exc
    response.seconds = round(time.monotonic() - started, 3)
    return response


def _stopped(exc: OSError, corpus: Path, run_id: str) -> DoryError:
    """The storage error (disk_full, permission_denied, …) of a run that stopped on a file system
    error: what it wrote stays recorded, and the same migration run again resumes it."""
    error = storage_error(exc, str(exc.filename or corpus))
    error.message += f" (run {run_id} stopped there; run the same migration again to resume it)"
    error.details["run"] = run_id
    return error


def _dropped(source: Path, drop_folder: Path | None) -> bool:
    """`source` is an entry of the drop folder itself (not the folder, nor anything deeper)."""
    return drop_folder is not None and source.parent == drop_folder.resolve()


def _into(req: MigrateRequest, reader: Reader, tree: SourceTree) -> str:
    if req.into is None:
        return formats.default_into(reader, tree)
    into = req.into.strip().rstrip("/")
    parts = into.split("/")
    # Relative, plain folder names only: `/x` or `C:\x` is a path on this machine, not in the corpus.
    unsafe = any(p in ("", ".", "..") or p.startswith(".") or ":" in p for p in parts)
    if not into or unsafe or "\x00" in into or "\\" in into:
        raise UsageError(f"--into must be a folder inside the corpus, like knowledge/imported: {req.into!r}")
    return into


def _resumable(corpus: Path, source: str, fmt: str, into: str) -> RunRecord | None:
    """The latest run of this very source that was interrupted: the new run continues it."""
    for record in reversed(manifest.runs(corpus)):
        h = record.header
        if (h.get("source"), h.get("format"), h.get("into")) == (source, fmt, into):
            return record if record.state == "interrupted" else None
    return None


def _forget_own_pages(entities: EntityContext, resumed: RunRecord) -> None:
    """The canonical pages the killed attempt created are this run's, not the corpus's: seen as
    existing, their entities would lose their page (and the run its counts) when it resumes."""
    if entities.registry is None:
        return
    own = {out.path for out in resumed.created()}
    entities.registry = Registry([e for e in entities.registry.entities if e.path not in own])


def _run_time(resumed: RunRecord | None, now: dt.datetime | None) -> str:
    if resumed is not None and isinstance(resumed.header.get("started"), str):
        return str(resumed.header["started"])
    moment = now or dt.datetime.now(dt.UTC)
    return moment.astimezone(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _run_id(now: str, source: str) -> str:
    stamp = now.replace("-", "").replace(":", "").replace("T", "-").rstrip("Z")
    salt = hashlib.sha256(f"{source}\n{os.getpid()}\n{time.monotonic_ns()}".encode()).hexdigest()[:6]
    return f"mig-{stamp}-{salt}"


def _prior(corpus: Path) -> tuple[dict[str, str], dict[str, list[str]]]:
    """What earlier runs imported and did not undo: item key → content digest, and → its files."""
    found: dict[str, str] = {}
    paths: dict[str, list[str]] = {}
    for record in manifest.runs(corpus):
        if record.state != "undone":
            found.update(record.done)
            paths.update(
                {key: [out.path for out in record.intents[key][1]] for key in record.done if key in record.intents}
            )
    return found, paths


def _plan(
    tree: SourceTree, reader: Reader, ctx: ReadContext, opts: RunOptions, resumed: RunRecord | None, req: MigrateRequest
) -> Plan:
    prior, prior_paths = _prior(opts.corpus)
    if resumed is not None:
        for key in resumed.done:
            prior.pop(key, None)
    plan = Plan(opts.corpus, prior, resumed, prior_paths)
    total = len(tree)
    plan.problems += [_problem(p) for p in tree.problems]
    for n, found in enumerate(_read(tree, reader, ctx), 1):
        new = plan.add(found)
        if isinstance(found, Item) and llm_claims.eligible(found) and (req.llm or req.estimate):
            _llm_claims(found, new, plan, opts, req)
        opts.progress("reading", min(n, total), total)
    for item in compile_entities(plan.observations, ctx, opts.entities):
        plan.add(item)
    return plan


def _llm_claims(item: Item, new: bool, plan: Plan, opts: RunOptions, req: MigrateRequest) -> None:
    """--llm: the item's claims join the plan's observations (asked here, in the plan pass only, so
    the write pass compiles exactly what was planned); --estimate: its requests are counted."""
    found = opts.claims.extract(item, new, ask=req.llm and not req.dry_run)
    plan.llm_inputs += found.requests
    if req.llm:
        plan.observations += found.observations
        plan.problems += [_problem(p) for p in found.problems]


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
    """The write pass. Returns how many files the run created (an interrupted attempt's included)."""
    path = manifest.manifest_path(opts.corpus, str(header["run"]))
    writer = ManifestWriter(path)
    # What an interrupted attempt finished is counted, and indexed again: it may have been killed
    # before its last batch reached the index.
    written = [final for entry in plan.entries.values() if entry.done for final in entry.finals]
    for start in range(0, len(written), INDEX_BATCH):
        opts.index_paths(written[start : start + INDEX_BATCH])
    created = len(written)
    pending: list[str] = []
    try:
        if resumed is None:
            writer.write(header, sync=True)
        else:
            _remove_leftovers(opts.corpus, resumed)
        seen_problems = {(p.get("source"), p.get("code")) for p in resumed.problems} if resumed else set()
        for p in plan.problems:
            if (p.source, p.code) not in seen_problems:
                writer.write({"t": "problem", "source": p.source, "code": p.code, "message": p.message})
        items = _planned_items(tree, reader, ctx, plan, opts)
        total = plan.to_write()
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
    finally:
        writer.close()
    return created


def _remove_leftovers(corpus: Path, resumed: RunRecord) -> None:
    """Temporary files a killed attempt left beside the files it was creating and beside its report
    (their process is gone, so they are certainly leftovers): removed before the run goes on."""
    folders = {(corpus / out.path).parent for out in resumed.created()} | {manifest.folder(corpus)}
    for folder in sorted(folders):
        repair_leftovers(folder)


def _planned_items(tree: SourceTree, reader: Reader, ctx: ReadContext, plan: Plan, opts: RunOptions) -> Iterator[Item]:
    """The second pass: the items the plan kept, in source order, then the compiled entities."""
    for found in _read(tree, reader, ctx):
        if isinstance(found, Item) and _to_write(plan, found):
            yield found
    for item in compile_entities(plan.observations, ctx, opts.entities):
        if _to_write(plan, item):
            yield item


def _to_write(plan: Plan, item: Item) -> bool:
    entry = plan.entries.get(item.key)
    return entry is not None and not entry.done


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
    writer.intent(item.key, item.digest, planned, _missing_folders(corpus, entry.finals))
    for n, (out, data) in enumerate(zip(planned, datas, strict=True)):
        final = _create(corpus, out.path, data, plan)
        if final != out.path:  # taken since the plan: record where it went instead
            planned[n] = Planned(final, out.sha256, out.role)
            writer.intent(item.key, item.digest, planned)
        crash_point("migrate.output")
    writer.done(item.key, item.digest)
    return [out.path for out in planned]


def _missing_folders(corpus: Path, paths: list[str]) -> list[str]:
    """The folders creating these files will make: recorded with the intent, so undo removes the
    folders the run made once they are empty, and never a folder that was there before."""
    missing: set[str] = set()
    for rel in paths:
        folder = posixpath.dirname(rel)
        while folder and folder not in missing and not (corpus / folder).is_dir():
            missing.add(folder)
            folder = posixpath.dirname(folder)
    return sorted(missing)


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
    tokens = sum(-(-chars // CHARS_PER_TOKEN) for chars in plan.llm_inputs)  # rounded up, per request
    return MigrateEstimate(llm_calls=calls, input_tokens=tokens, output_tokens=calls * ANSWER_TOKENS)
