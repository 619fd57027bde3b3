"""The weekly digest: an ISO week's daily digests → `digests/weekly/YYYY-Www.md`.

Built from the dailies alone (deterministic; the dailies already carry the model's prose when one
is configured). Sections: Days (one line per daily digest), Themes (content words that recur on
several days), Decisions, Open Loops Carried Forward (open loops and follow-ups that no later
day's work or decision closes), Projects Touched. Every bullet cites the daily digest line it
came from, so a reader (or dreaming) can walk back to the session turn.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter, defaultdict
from typing import Any

from dory.corpus.document import ReadProblem, read_document
from dory.corpus.roots import output_root, read_root
from dory.jobs import generated
from dory.jobs.digest import Bullet, Source, cited, one_line, section
from dory.jobs.digest_daily import path_for
from dory.jobs.job import JobContext, JobResult
from dory.jobs.periods import week_days
from dory.sessions import extract

FOLDER = "digests/weekly"
SECTIONS = ("Days", "Themes", "Decisions", "Open Loops Carried Forward", "Projects Touched")
THEMES = 8
CLOSED_OVERLAP = 0.6  # share of an open loop's words a later bullet must repeat to close it
_PROJECT = re.compile(r"Worked in project `([^`]+)`|Edited `projects/([^/`]+)/")


class DailyBullet:
    """One bullet of a daily digest, with the daily's line it sits on."""

    def __init__(self, day: dt.date, section: str, text: str, line: int) -> None:
        self.day, self.section, self.text, self.line = day, section, text, line
        self.words = set(extract.words(text))

    def bullet(self, text: str | None = None) -> Bullet:
        return Bullet(text or self.text, Source(path_for(self.day), self.day.isoformat(), self.line))


def read_dailies(
    ctx: JobContext, days: list[dt.date]
) -> tuple[list[tuple[dt.date, int]], list[DailyBullet], list[str]]:
    """(day, sessions) per daily digest found, their cited bullets, and read problems."""
    found, bullets, problems = [], [], []
    for day in days:
        rel = path_for(day)
        root = read_root(ctx.settings, rel)
        if not (root / rel).is_file():
            continue
        try:
            doc = read_document(root, rel, ctx.settings.index.max_file_bytes)
        except ReadProblem as exc:
            problems.append(f"{rel}: {exc}")
            continue
        if doc.frontmatter_error:
            problems.append(f"{rel}: its frontmatter is broken ({doc.frontmatter_error}); read its bullets as they are")
        current = ""
        for number, line in enumerate(doc.lines, start=1):
            if line.startswith("## "):
                current = line[3:].strip()
            elif number > doc.body_start and (item := cited(line)) is not None:
                bullets.append(DailyBullet(day, current, item[0], number))
        found.append((day, sum(1 for b in bullets if b.day == day and b.section == "Sessions")))
    return found, bullets, problems


def themes(bullets: list[DailyBullet]) -> list[Bullet]:
    """Content words said on at least two days, most days first; each cites its first bullet. Session
    lines and values are left out: their template words (turns, agent names) recur every day."""
    days_of: defaultdict[str, set[dt.date]] = defaultdict(set)
    counts: Counter[str] = Counter()
    first: dict[str, DailyBullet] = {}
    for item in bullets:
        if item.section in ("Sessions", "Important Values"):
            continue
        for word in item.words:
            if len(word) > 3 and not word.isdigit():
                days_of[word].add(item.day)
                counts[word] += 1
                first.setdefault(word, item)
    recurring = [w for w in days_of if len(days_of[w]) >= 2]
    recurring.sort(key=lambda w: (-len(days_of[w]), -counts[w], w))
    return [
        first[w].bullet(f"**{w}**: {len(days_of[w])} days, {counts[w]} mentions; first: {one_line(first[w].text, 160)}")
        for w in recurring[:THEMES]
    ]


def carried(bullets: list[DailyBullet]) -> list[Bullet]:
    """Open loops and follow-ups not closed by a later day's work or decision."""
    closing = [b for b in bullets if b.section in ("Work Done", "Decisions")]
    out = []
    for item in bullets:
        if item.section not in ("Open Loops and TODOs", "Follow-ups") or not item.words:
            continue
        later = [c for c in closing if c.day > item.day]
        if not any(len(item.words & c.words) / len(item.words) >= CLOSED_OVERLAP for c in later):
            out.append(item.bullet(f"{item.text} (open since {item.day.isoformat()})"))
    return out


def projects(bullets: list[DailyBullet]) -> list[Bullet]:
    seen: dict[str, list[DailyBullet]] = {}
    for item in bullets:
        for match in _PROJECT.finditer(item.text):
            seen.setdefault(match[1] or match[2], []).append(item)
    return [items[0].bullet(f"`{name}`: {len({i.day for i in items})} days") for name, items in sorted(seen.items())]


def render(period: str, found: list[tuple[dt.date, int]], bullets: list[DailyBullet]) -> bytes:
    days = [
        Bullet(f"{day.isoformat()} ({day.strftime('%A')}): {count} sessions", Source(path_for(day), day.isoformat()))
        for day, count in found
    ]
    decisions: list[Bullet] = []
    for item in bullets:
        if item.section == "Decisions" and item.text.lower() not in {d.text.lower() for d in decisions}:
            decisions.append(item.bullet())
    parts = [days, themes(bullets), decisions, carried(bullets), projects(bullets)]
    first, last = week_days(period)[0], week_days(period)[-1]
    meta = {
        "title": f"Weekly digest {period}",
        "type": "digest-weekly",
        "status": "active",
        "week": period,
        "week_start": first.isoformat(),
        "week_end": last.isoformat(),
        "source_digests": [path_for(day) for day, _ in found],
    }
    blocks = [f"# Weekly digest {period} ({first.isoformat()} – {last.isoformat()})"]
    blocks += [section(title, [b.render() for b in items]) for title, items in zip(SECTIONS, parts, strict=True)]
    return generated.render(meta, "\n\n".join(blocks), "weekly-digest")


def run(ctx: JobContext) -> JobResult:
    days = week_days(ctx.period)
    found, bullets, problems = read_dailies(ctx, days)
    outputs: dict[str, Any] = {"dailies": len(found), "bullets": len(bullets), "skipped": len(problems)}
    warnings = [f"skipped {p}" for p in problems]
    # A run by hand mid-week: the scheduled run after Sunday must still happen.
    unfinished = "the week is not over yet" if days[-1] >= dt.date.today() else None
    if not found:
        return JobResult(outputs={**outputs, "written": 0}, warnings=warnings, defer=unfinished)
    files = generated.GeneratedFiles(output_root(ctx.settings, "digests"), ctx.dry_run)
    rel = f"{FOLDER}/{ctx.period}.md"
    files.write(rel, render(ctx.period, found, bullets))
    if files.written and not ctx.dry_run:
        ctx.api.index_paths([rel])
    outputs.update(files.counts(), path=rel)
    return JobResult(outputs=outputs, warnings=warnings + files.warnings, defer=unfinished)
