"""The nightly maintenance job: a health report of the corpus and its index, and a few safe fixes.

`dory ops run maintain [--period DAY] [--dry-run] [--fix]` writes `inbox/maintenance/<DAY>.md`:
broken links, orphans, canonical pages whose compiled truth is older than their timeline, stale
`active` pages, names shared by two entities, files the indexer skipped, and drift between disk
and index. Looking is read-only: the graph and the files table through a reader of its own, drift
through the indexer's plan (never its apply).

`--fix` makes only mechanical fixes, never prose: (a) drift → a reconcile by the index's owner;
(b) a broken `[[wikilink]]` whose name matches exactly one note more loosely than links resolve
(its title, or its name with case, accents and punctuation ignored) gets that note's name as its
target, with the old text kept as the label so the sentence reads the same. The file is rewritten
by compare-and-swap through the owner, and only if it still has the bytes the index saw.

The report is a function of the corpus and the day (no clock, sorted lists), so a re-run writes
the same bytes. Paths, targets and details are rendered as code spans so the report adds no links
of its own, and the graph is read without the reports' own edges.
"""

from __future__ import annotations

import codecs
import datetime as dt
import json
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from dory.config import Settings
from dory.corpus.atomic import sha256_of
from dory.corpus.document import ReadProblem, parse_document, read_document
from dory.corpus.roots import output_root, read_root, write_root
from dory.index.store import IndexStore
from dory.jobs import generated
from dory.jobs.job import JobContext, JobResult
from dory.jobs.periods import check_day
from dory.memory import graph, links
from dory.memory.canonical import latest_timeline_date
from dory.memory.entities import Registry, layout_family, normalise_name
from dory.memory.frontmatter import parse_day
from dory.memory.outside import outside_index_target
from dory.models import BrokenLink, LinkLintRequest, ReindexResponse

# An `active` page not updated for longer than this before the period is reported as stale.
STALE_ACTIVE_DAYS = 90
MAX_ITEMS = 200  # per report section; the counts in the outputs are never capped
REPORT_DIR = "inbox/maintenance"
# Generated and raw areas: nobody links to a digest or a capture on purpose, so they are never orphans.
ORPHAN_EXEMPT = ("digests/", "inbox/", "logs/", "sources/", "core/", "wiki/")
CANONICAL_FAMILIES = ("person", "project", "concept", "decision")
LINT_ALL = 100_000  # LinkLintRequest's ceiling: the report caps its own lists
# Characters that cannot stand in a wikilink target (they end it or start a heading, label or block).
_NOT_IN_TARGET = re.compile(r"[\[\]|#^]")

SECTIONS = (
    ("broken_links", "Broken links"),
    ("orphans", "Orphans"),
    ("stale_compiled", "Compiled truth older than the timeline"),
    ("stale_active", f"Stale active pages (not updated for over {STALE_ACTIVE_DAYS} days)"),
    ("alias_collisions", "Duplicate entities"),
    ("skipped_files", "Files skipped by the indexer"),
    ("drift", "Index vs disk drift"),
)
_DRIFT = (
    ("new", "on disk, not in the index"),
    ("deleted", "in the index, gone from disk"),
    ("renamed", "renamed on disk, not in the index"),
    ("changed", "content differs from the index"),
    ("touched", "size or modification time differs from the index (same content)"),
)


@dataclass
class Findings:
    broken_links: list[str] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)
    stale_compiled: list[str] = field(default_factory=list)
    stale_active: list[str] = field(default_factory=list)
    alias_collisions: list[str] = field(default_factory=list)
    skipped_files: list[str] = field(default_factory=list)
    drift: list[str] = field(default_factory=list)


@dataclass
class Fixing:
    """What `--fix` did (or, in a dry run, would do)."""

    requested: bool
    dry_run: bool
    lines: list[str] = field(default_factory=list)  # the report's Fixes section
    fixed: int = 0
    would_fix: int = 0
    rewritten: list[str] = field(default_factory=list)  # notes to index again
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class LinkFix:
    source: str
    line: int
    target: str  # as written
    note: str  # the one note it names
    name: str  # how the link names that note now (resolves to it from `source`)


def run(ctx: JobContext) -> JobResult:
    check_day(ctx.period)  # the period names the report file: never use it unchecked
    if not ctx.settings.db_path.exists():
        return JobResult(warnings=["the corpus has not been indexed yet; run `dory reindex` (or `dory ops watch`)"])
    store = ctx.api.read_index()
    if store is None:
        return JobResult(warnings=["the corpus has not been indexed yet; run `dory reindex` (or `dory ops watch`)"])
    return _maintain(ctx, store)


def _maintain(ctx: JobContext, store: IndexStore) -> JobResult:
    plan = ctx.api.plan_reindex()  # the indexer's plan, nothing applied
    fixing = Fixing(requested=ctx.fix, dry_run=ctx.dry_run, warnings=list(plan.warnings))
    findings = Findings(drift=_drift(plan))
    if ctx.fix and findings.drift:
        _fix_drift(ctx, fixing, len(findings.drift))  # first, so everything below reads a current index
    conn = store.conn
    findings.skipped_files = _skipped(plan, conn)
    # The reports' own edges are left out, so yesterday's report never changes today's findings.
    lint = graph.lint(conn, LinkLintRequest(max_items=LINT_ALL, exclude_prefix=[REPORT_DIR + "/"]))
    # Transcripts and wiki pages are kept out of the durable index on purpose: a link into them is
    # checked against the disk.
    output = output_root(ctx.settings, "the maintenance report")  # transcripts and the wiki are there
    broken = [link for link in lint.broken if not outside_index_target(output, link.source, link.kind, link.target)]
    findings.broken_links = [_broken_item(link) for link in broken]
    findings.orphans = [_code(path) for path in lint.orphans if not path.startswith(ORPHAN_EXEMPT)]
    findings.stale_compiled = _stale_compiled(ctx.settings, store)
    findings.stale_active = _stale_active(conn, ctx.period)
    findings.alias_collisions = _alias_collisions(Registry.load(conn))
    if ctx.fix:
        _fix_links(ctx, store, broken, fixing)
    return _report(ctx, findings, fixing)


def _report(ctx: JobContext, findings: Findings, fixing: Fixing) -> JobResult:
    rel = f"{REPORT_DIR}/{ctx.period}.md"
    meta = {"title": f"Maintenance report {ctx.period}", "type": "report", "status": "active", "date": ctx.period}
    files = generated.GeneratedFiles(output_root(ctx.settings, "the maintenance report"), ctx.dry_run)
    files.write(rel, generated.render(meta, _body(ctx.period, findings, fixing), "maintain"))
    warnings = fixing.warnings + files.warnings
    if not ctx.dry_run:
        warnings += ctx.api.index_paths(sorted({rel, *fixing.rewritten})).warnings
    outputs: dict[str, Any] = {"report": rel, **files.counts()}
    outputs |= {key: len(getattr(findings, key)) for key, _ in SECTIONS}
    outputs["fixed"] = fixing.fixed
    if ctx.fix:
        outputs["fixes"] = fixing.lines[:MAX_ITEMS]
    if ctx.dry_run:
        outputs |= {"dry_run": True, "would_fix": fixing.would_fix}
    return JobResult(outputs=outputs, warnings=warnings)


# -- findings ------------------------------------------------------------------------------------
def _drift(plan: ReindexResponse) -> list[str]:
    paths = plan.planned_paths or {}
    return sorted(f"{_code(path)}: {why}" for key, why in _DRIFT for path in paths.get(key, []))


def _skipped(plan: ReindexResponse, conn: sqlite3.Connection) -> list[str]:
    """What the indexer skips (the plan's view of the disk now, which includes the skips the index
    recorded for files unchanged since), and notes indexed as plain text because of their frontmatter."""
    found = {skip.path: (skip.reason, skip.detail) for skip in plan.skipped}
    for path, error in conn.execute("SELECT path, frontmatter_error FROM files WHERE frontmatter_error IS NOT NULL"):
        found.setdefault(path, ("broken_frontmatter", f"{error} (indexed as plain text)"))
    return [f"{_code(path or '.')}: {reason}: {_code(detail)}" for path, (reason, detail) in sorted(found.items())]


def _broken_item(link: BrokenLink) -> str:
    shown = f"[[{link.target}]]" if link.kind == "wikilink" else link.target
    return f"{_code(f'{link.source}:{link.line}')} → {_code(shown)}: {link.reason}"


def _stale_compiled(settings: Settings, store: IndexStore) -> list[str]:
    """Canonical pages whose `updated` date is older than their latest timeline entry: an event was
    recorded but the compiled truth above the marker was not brought up to date."""
    items = []
    for path in sorted(store.indexed_files()):
        place = layout_family(path)
        if place is None or place[0] not in CANONICAL_FAMILIES:
            continue
        try:
            doc = read_document(read_root(settings, path), path, settings.index.max_file_bytes)
        except ReadProblem:
            continue  # reported under skipped files
        updated = parse_day(doc.frontmatter.get("updated"))
        latest = latest_timeline_date("\n".join(doc.lines[doc.body_start :]))
        if updated is not None and latest is not None and updated.isoformat() < latest:
            items.append(f"{_code(path)}: compiled truth updated {updated}, latest timeline entry {latest}")
    return items


def _stale_active(conn: sqlite3.Connection, period: str) -> list[str]:
    day = dt.date.fromisoformat(period)
    cutoff = day - dt.timedelta(days=STALE_ACTIVE_DAYS)
    items = []
    for path, fm in conn.execute("SELECT path, frontmatter FROM files WHERE lower(status) = 'active' ORDER BY path"):
        updated = parse_day(json.loads(fm or "{}").get("updated"))
        if updated is not None and updated < cutoff:
            items.append(f"{_code(path)}: updated {updated}, {(day - updated).days} days before {period}")
    return items


def _alias_collisions(registry: Registry) -> list[str]:
    """Names (slug, title or alias, normalised as entities are resolved) that two pages answer to."""
    pages: dict[str, dict[str, str]] = {}
    for entity in registry.entities:
        for name, how in entity.names().items():
            pages.setdefault(name, {})[entity.path] = how
    return [
        f"{_code(name)}: " + ", ".join(f"{_code(path)} ({how})" for path, how in sorted(found.items()))
        for name, found in sorted(pages.items())
        if len(found) > 1
    ]


# -- fixes ---------------------------------------------------------------------------------------
def _fix_drift(ctx: JobContext, fixing: Fixing, differing: int) -> None:
    if ctx.dry_run:
        fixing.lines.append(f"would reconcile the index ({differing} files differ from it)")
        fixing.would_fix += differing
        return
    done = ctx.api.reconcile()
    fixing.fixed += done.new + done.changed + done.renamed + done.deleted + done.touched
    fixing.lines.append(
        f"reconciled the index: {done.new} new, {done.changed} changed, {done.renamed} renamed, "
        f"{done.deleted} deleted, {done.touched} touched"
    )
    fixing.warnings += done.warnings


def _fix_links(ctx: JobContext, store: IndexStore, broken: list[BrokenLink], fixing: Fixing) -> None:
    fixes, refused = _plan_link_fixes(store.conn, broken)
    fixing.lines += refused
    indexed = store.indexed_files()
    by_file: dict[str, list[LinkFix]] = {}
    for fix in fixes:
        by_file.setdefault(fix.source, []).append(fix)
    for source, group in sorted(by_file.items()):
        edit = _rewrite(
            write_root(ctx.settings, source), source, indexed[source].sha256 if source in indexed else "", group
        )
        if isinstance(edit, str):
            fixing.lines.append(f"not fixed: {_code(source)}: {edit}")
            continue
        old, new, done = edit
        if ctx.dry_run:
            fixing.lines += [f"would retarget {line}" for line in done]
            fixing.would_fix += len(done)
            continue
        conflict = ctx.api.swap_file(source, new, sha256_of(old))
        if conflict:
            fixing.lines.append(f"not fixed: {_code(source)}: {conflict}")
            continue
        fixing.lines += [f"retargeted {line}" for line in done]
        fixing.fixed += len(done)
        fixing.rewritten.append(source)


def _plan_link_fixes(conn: sqlite3.Connection, broken: list[BrokenLink]) -> tuple[list[LinkFix], list[str]]:
    """The broken wikilinks that name exactly one note, and why the ones naming several are left."""
    table = graph.names(conn)
    named = _notes_by_name(conn)
    fixes: dict[tuple[str, int, str], LinkFix] = {}
    refused: set[str] = set()
    for link in broken:
        if link.kind != "wikilink" or links.is_explicit_path(link.target):
            continue
        hits = sorted(named.get(normalise_name(link.target), ()))
        where = f"{_code(f'{link.source}:{link.line}')} {_code(f'[[{link.target}]]')}"
        if len(hits) > 1:
            refused.add(f"not fixed: {where} could mean " + ", ".join(_code(hit) for hit in hits))
        elif hits and (name := _link_name(table, link.source, hits[0])):
            fixes.setdefault(
                (link.source, link.line, link.target), LinkFix(link.source, link.line, link.target, hits[0], name)
            )
    return list(fixes.values()), sorted(refused)


def _notes_by_name(conn: sqlite3.Connection) -> dict[str, set[str]]:
    """Every note under each loose name: its title, file name, path and aliases, normalised."""
    found: dict[str, set[str]] = {}
    for path, title, aliases in conn.execute("SELECT path, title, aliases FROM files"):
        for name in (title, PurePosixPath(path).stem, path.removesuffix(".md"), *json.loads(aliases or "[]")):
            key = normalise_name(str(name))
            if key:
                found.setdefault(key, set()).add(path)
    return found


def _link_name(table: graph.Names, source: str, note: str) -> str | None:
    """The shortest wikilink target that leads from `source` to `note`: its file name, else its path."""
    for name in (PurePosixPath(note).stem, note.removesuffix(".md")):
        if not _NOT_IN_TARGET.search(name) and table.resolve(source, "wikilink", name, links.link_key(name)) == note:
            return name
    return None


def _rewrite(corpus: Path, source: str, indexed_sha: str, group: list[LinkFix]) -> tuple[bytes, bytes, list[str]] | str:
    """(bytes read, bytes to write, one line per retargeted link), or why the note is left alone."""
    path = corpus / source
    if path.is_symlink():  # a swap would replace the link with a copy and leave its target as it was
        return "it is a symlink; edit the note it points to"
    try:
        data = path.read_bytes()
    except OSError as exc:
        return f"cannot read it ({exc.strerror})"
    if sha256_of(data) != indexed_sha:
        return "it changed since it was indexed (the link lines may have moved)"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "it is UTF-16; only UTF-8 notes are rewritten"
    try:
        doc = parse_document(source, data)
    except ReadProblem as problem:
        return problem.detail
    if doc.frontmatter_error:
        return "its frontmatter could not be parsed, and Dory never rewrites such a note"
    lines, masked, done = doc.text.split("\n"), links.code_masked(doc.lines, doc.body_start), []
    for fix in sorted(group, key=lambda f: (f.line, f.target)):
        index = fix.line - 1
        if index >= len(masked):
            continue
        lines[index], count = _retarget(lines[index], masked[index], fix)
        if count:
            done.append(
                f"{_code(f'{source}:{fix.line}')} {_code(f'[[{fix.target}]]')} → {_code(fix.note)} "
                f"(as {_code(f'[[{fix.name}]]')})"
            )
    if not done:
        return "its broken links were not found on the lines the index recorded"
    bom = codecs.BOM_UTF8 if data.startswith(codecs.BOM_UTF8) else b""
    return data, bom + "\n".join(lines).encode("utf-8"), done


def _retarget(line: str, masked: str, fix: LinkFix) -> tuple[str, int]:
    """`line` with each `[[target…]]` of `fix` (outside code) pointing at the note; a link without a
    label gets the old target as its label, so what the reader sees does not change."""
    pattern = re.compile(r"\[\[[ \t]*" + re.escape(fix.target) + r"[ \t]*(?=#|\\?\||\]\])")
    separator = "\\|" if line.lstrip().startswith("|") else "|"  # a bare `|` would split a table cell
    pieces, last, count = [], 0, 0
    for match in pattern.finditer(line):
        close = line.find("]]", match.end())
        if masked[match.start() : match.start() + 2] != "[[" or close < 0:
            continue  # inside a code span: text, not a link
        pieces += [line[last : match.start()], "[[" + fix.name]
        last = match.end()
        if "|" not in line[match.end() : close]:
            pieces += [line[match.end() : close], separator + fix.target]
            last = close
        count += 1
    return "".join(pieces) + line[last:], count


# -- rendering -----------------------------------------------------------------------------------
def _body(period: str, findings: Findings, fixing: Fixing) -> str:
    lines = [f"# Maintenance report {period}", "", "## Summary", ""]
    lines += [f"- {title}: {len(getattr(findings, key))}" for key, title in SECTIONS]
    lines.append("")
    for key, title in SECTIONS:
        lines += _section(title, getattr(findings, key))
    if fixing.requested:
        lines += _section("Fixes", fixing.lines)
    else:
        lines += ["## Fixes", "", "- Not requested (`dory ops run maintain --fix` makes the safe ones)", ""]
    return "\n".join(lines)


def _section(title: str, items: list[str]) -> list[str]:
    shown = [f"- {item}" for item in items[:MAX_ITEMS]] or ["- None"]
    if len(items) > MAX_ITEMS:
        shown.append(f"- … and {len(items) - MAX_ITEMS} more")
    return [f"## {title}", "", *shown, ""]


def _code(text: str) -> str:
    """`text` as an inline code span: a path or target in the report is not a link or a mention."""
    text = text.replace("\r", "\\r").replace("\n", "\\n")
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    return f"{fence}{pad}{text}{pad}{fence}"
