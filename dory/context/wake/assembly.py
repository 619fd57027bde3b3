"""Assembly: `build_wake` packs the sections by priority within the budgets, truncates and adds the footer."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dory.config import WakeSettings
from dory.context.wake.base import RecentSession, _Candidate, _is_content, _Limits, _Omission, _one_line
from dory.context.wake.profiles import _resolve_profile
from dory.context.wake.sections import _Gatherer
from dory.models import WakeRequest, WakeResponse, WakeSection

MAX_BUDGET = 1500
MAX_CHARS = 10_000

_MIN_PARTIAL = 40  # characters: a later section cut inside its first line must keep at least this many
_MAX_FOOTER_PATHS = 12

_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class _Placed:
    cand: _Candidate
    text: str
    kept: int  # lines of cand.lines kept whole
    truncated: bool


def build_wake(
    corpus: Path,
    settings: WakeSettings,
    req: WakeRequest,
    count_tokens: Callable[[str], int],
    recent: list[RecentSession],
    now: dt.datetime | None = None,
) -> WakeResponse:
    """The wake block for `req`; raises UsageError for a profile neither built in nor in dory.toml."""
    profile = _resolve_profile(settings, req.profile)
    limits = _Limits(
        count_tokens,
        min(req.budget or settings.budget, MAX_BUDGET),
        min(req.max_chars or settings.max_chars, MAX_CHARS),
    )
    gather = _Gatherer(corpus, req.profile, profile, limits)
    cands = gather.profile_sections()
    if req.project:
        project = gather.project(req.project)
        if project:
            cands.insert(min(1, len(cands)), project)  # an asked-for project comes right after the first section
    pinned = gather.pinned(settings.pinned_decisions)
    if pinned:
        cands.append(pinned)
    sessions = gather.sessions(recent, settings.recent_sessions)
    if sessions:
        cands.append(sessions)
    placed = _pack(cands, limits)
    block, placed, omissions = _finish(placed, cands, gather.omissions, limits)
    now = now or dt.datetime.now(dt.UTC)
    return WakeResponse(
        profile=req.profile,
        block=block,
        tokens=count_tokens(block),
        chars=len(block),
        budget=limits.budget,
        max_chars=limits.max_chars,
        sections=[
            WakeSection(name=p.cand.name, source=p.cand.source, tokens=count_tokens(p.text), truncated=p.truncated)
            for p in placed
        ],
        omitted=[f"{o.source}: {o.reason}" for o in omissions],
        frozen_at=now.isoformat(),
        warnings=gather.warnings,
    )


def _marker(cand: _Candidate) -> str:
    if cand.get_path:
        return f"<!-- wake: truncated; run `dory get {_one_line(cand.get_path, 200)}` for the rest -->"
    return "<!-- wake: truncated; a larger --budget shows more -->"


def _largest(lo: int, hi: int, ok: Callable[[int], bool]) -> int:
    """The largest n in [lo, hi) with ok(n), by bisection; ok(lo) must hold. Token counts are not
    strictly monotonic in a prefix's length, so this keeps the invariant rather than trusting it."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _render(cand: _Candidate, fits: Callable[[str], bool], first: bool) -> _Placed | None:
    """The longest form of `cand` that `fits`: whole, cut by lines, cut inside a line; None if
    nothing useful fits. The first section always shows something while one character fits."""
    lines = cand.lines
    full = "\n".join(lines)
    if fits(full):
        return _Placed(cand, full, len(lines), False)
    tail = [] if cand.items is not None else [_marker(cand)]
    if fits("\n".join([*lines[:1], *tail])):
        kept = _largest(1, len(lines), lambda k: fits("\n".join([*lines[:k], *tail])))
        if any(_is_content(line) for line in lines[:kept]):
            return _Placed(cand, "\n".join([*lines[:kept], *tail]), kept, True)
        if cand.items is None:
            partial = _cut_inside(lines, kept, tail, fits, 1 if first else _MIN_PARTIAL)
            if partial is not None:
                return _Placed(cand, partial, kept, True)
    if first:
        size = _largest(0, len(full), lambda n: fits(full[:n]))
        if size > 0:
            return _Placed(cand, full[:size], 0, True)
    return None


def _cut_inside(
    lines: list[str], kept: int, tail: list[str], fits: Callable[[str], bool], min_chars: int
) -> str | None:
    """Headings fit but no content line does: keep the start of the first content line (a paragraph
    written as one long line, or a file with no newline at all, is still shown)."""
    index = kept
    while index < len(lines) and not lines[index].strip():
        index += 1  # blank lines between the heading and the text carry nothing
    if index == len(lines):
        return None
    line = lines[index]

    def text(n: int) -> str:
        return "\n".join([*lines[:kept], line[:n].rstrip(), *tail])

    size = _largest(0, len(line), lambda n: fits(text(n)))
    if size < min(min_chars, len(line)) or not line[:size].strip():
        return None
    return text(size)


def _join(parts: list[str]) -> str:
    return _SEPARATOR.join(part for part in parts if part)


def _section_fits(cand: _Candidate, limits: _Limits, text: str) -> bool:
    return len(text) <= limits.max_chars and limits.count(text) <= cand.budget


def _pack(cands: list[_Candidate], limits: _Limits) -> list[_Placed]:
    """Each candidate in priority order, as much of it as fits its own budget and the room left."""
    placed: list[_Placed] = []
    for cand in cands:
        before = [p.text for p in placed]

        def fits(text: str, cand: _Candidate = cand, before: list[str] = before) -> bool:
            return _section_fits(cand, limits, text) and limits.fits(_join([*before, text]))

        result = _render(cand, fits, first=cand is cands[0])
        if result is not None:
            placed.append(result)
    return placed


def _finish(
    placed: list[_Placed], cands: list[_Candidate], static: list[_Omission], limits: _Limits
) -> tuple[str, list[_Placed], list[_Omission]]:
    """Add the last line naming what was left out, shrinking the last sections until it fits.
    Every block returned here was measured whole against both caps."""
    placed = list(placed)
    while True:
        omissions = static + _left_out(cands, placed)
        body = _join([p.text for p in placed])
        footers = _footers([o.source for o in omissions if o.gettable])
        for footer in footers or [""]:
            block = _join([body, footer])
            if limits.fits(block):
                return block, placed, omissions
        shortest = footers[-1] if footers else ""
        if not _shrink_last(placed, cands, shortest, limits):
            # Not even the first section fits beside the shortest last line: the section wins.
            return _cut_to_fit(_join([body, shortest]), limits), placed, omissions


def _shrink_last(placed: list[_Placed], cands: list[_Candidate], footer: str, limits: _Limits) -> bool:
    """Make the last placed section strictly shorter so that `footer` fits after it, or drop it.
    False when only the first section is left and it cannot shrink."""
    if not placed:
        return False
    last = placed.pop()
    before = [p.text for p in placed]

    def fits(text: str) -> bool:
        return (
            len(text) < len(last.text)
            and _section_fits(last.cand, limits, text)
            and limits.fits(_join([*before, text, footer]))
        )

    first = last.cand is cands[0]
    result = _render(last.cand, fits, first=first)
    if result is not None:
        placed.append(result)
        return True
    if first:
        placed.append(last)
        return False
    return True


def _left_out(cands: list[_Candidate], placed: list[_Placed]) -> list[_Omission]:
    """Sections (or list items) that were found but had no room, in priority order."""
    by_cand = {id(p.cand): p for p in placed}
    out: list[_Omission] = []
    for cand in cands:
        done = by_cand.get(id(cand))
        if cand.items is not None:
            kept = max(done.kept - 1, 0) if done else 0  # the heading is line 0
            out.extend(_Omission(path, "no room in the budget", cand.name_left_out) for path in cand.items[kept:])
        elif done is None:
            out.append(_Omission(cand.get_path or cand.source, "no room in the budget", cand.get_path is not None))
    return out


def _footers(paths: list[str]) -> list[str]:
    """The block's last line, longest first: every path, then fewer with a count of the rest."""
    out = []
    for shown in range(min(len(paths), _MAX_FOOTER_PATHS), 0, -1):
        names = ", ".join(_one_line(path, 200) for path in paths[:shown])
        rest = len(paths) - shown
        more = f" (+{rest} more in `dory wake --json`)" if rest else ""
        out.append(f"<!-- wake: left out {names}{more}; run `dory get <path>` for each -->")
    return out


def _cut_to_fit(text: str, limits: _Limits) -> str:
    if limits.fits(text):
        return text
    return text[: _largest(0, len(text), lambda n: limits.fits(text[:n]))]
