"""Canonical pages: compiled truth in fixed sections above a timeline marker, as pure functions over text.

A canonical page (families person, project, concept, decision, core) is, after its frontmatter:

    <preamble: anything before the first H2, e.g. an H1>

    ## <template section>        (one per template name, in template order, plus any hand-made ones)

    <content>

    ---

    <!-- TIMELINE: append-only below this line -->

    ## Timeline
    - YYYY-MM-DD: <text> (<evidence path>)

    ## Evidence
    - <path>

    <any other H2 section a person put below the marker>

Nothing here reads or writes files or the index: callers hand in the body text, the entity's claims
and its claim events, and write back what `render_page` returns.

Rules worth knowing (each one decided here, and tested):

- Parsing follows CommonMark for what it needs: ATX `##` headings (up to 3 spaces of indent,
  closing `#`s dropped), fenced code (``` or ~~~, closed by the same character at least as long).
  A heading or marker inside a fence is text. A fence that never closes is treated as plain text,
  not as running to the end of the page, so one stray ``` cannot swallow the marker and make
  compiling non-idempotent. Setext headings are not headings. CR LF and lone CR become LF.
- Blank lines at either end of a section (and of the preamble) are layout, not content; blank
  lines inside Timeline and Evidence are dropped (they are lists). Everything else is kept.
- The `---` rule directly above the marker belongs to the layout: parsing drops one such rule.
- Below the marker, lines before the first H2 are read as timeline lines (old pages appended
  entries straight under the marker); every `## Timeline` / `## Evidence` there is merged into one.
- compile_page owns exactly: lines of template sections that render a claim of the entity
  (`- <statement>`, compared with runs of whitespace collapsed), the `active`/`retired` line of a
  decision's Status section, and the timeline/evidence lines it adds. A hand-written line that happens
  to equal a claim's bullet is therefore treated as that claim's. Everything else stays where it was.
- A missing template section is inserted just before the first later template section (in template
  order) that the page has after its last earlier one, or at the end of the sections when there is
  none. Existing sections are never reordered, so a hand-made section stays under the section it
  was written after, and a page whose sections a person reordered keeps that order.
- A page compiled without a marker gets one; a `## Timeline` / `## Evidence` section it had above
  is taken into the real Timeline / Evidence.
- Timeline order: a dated entry (`- YYYY-MM-DD: ...`, real date) starts a block; any undated or
  odd line is carried by the block above it (lines before the first dated entry stay first). Blocks
  are sorted by date, stably, so equal dates keep their order and new events follow old entries.
  Top-level duplicate lines are dropped (indented continuation lines never are).
- A decision's Status is `active` while any claim is active, `retired` when all have ended, and
  left alone when the entity has no claims at all (a fresh page is not "retired").

Longer than ~400 lines: one page format (sections, marker, timeline) parsed and rendered by
pure functions that must agree; to be split into parse and render once the format stops moving.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from dory.memory.claims import CLAIM_KINDS, Claim, ClaimEvent
from dory.memory.entities import FAMILIES

TIMELINE_MARKER = "<!-- TIMELINE: append-only below this line -->"
RULE = "---"

_TEMPLATES: dict[str, tuple[str, ...]] = {
    "person": (
        "Summary",
        "Current Facts",
        "Preferences And Working Style",
        "Goals And Priorities",
        "Related Decisions And Projects",
    ),
    "project": ("Summary", "Current State", "Goals", "Open Work", "Key Decisions", "Dependencies And Related Concepts"),
    "concept": (
        "Summary",
        "Definition",
        "Key Claims",
        "Current Understanding",
        "Related People Projects And Decisions",
        "Open Questions",
    ),
    "decision": (
        "Decision",
        "Status",
        "Context",
        "Rationale",
        "Alternatives Considered",
        "Consequences",
        "Related Projects And Concepts",
    ),
    "core:user": ("Summary", "Current Facts", "Preferences And Working Style", "Goals And Priorities", "Constraints"),
    "core:identity": ("Agent Identity", "Role", "Channels And Surfaces", "Boundaries"),
    "core:soul": ("Voice", "Behavior Rules", "Banned Patterns", "Interaction Principles"),
    "core:env": ("Environment", "Machines And Paths", "Secrets And Auth Notes", "Services"),
    "core:active": ("Current Focus", "Top Priorities", "Current Risks", "Open Loops", "Recent Changes"),
    "core:defaults": ("Default Models", "Default Tools", "Default Operating Assumptions", "Fallback Rules"),
    "core:": ("Summary", "Current Facts"),
}
# (section for any kind not listed, {kind: section})
_ROUTES: dict[str, tuple[str, dict[str, str]]] = {
    "person": (
        "Current Facts",
        {"preference": "Preferences And Working Style", "decision": "Related Decisions And Projects"},
    ),
    "project": ("Current State", {"note": "Open Work", "decision": "Key Decisions", "preference": "Goals"}),
    "concept": ("Current Understanding", {"fact": "Key Claims", "note": "Open Questions"}),
    "decision": ("Decision", {"note": "Context", "preference": "Rationale"}),
    "core:user": ("Current Facts", {"preference": "Preferences And Working Style", "decision": "Constraints"}),
    "core:identity": ("Role", {"note": "Boundaries"}),
    "core:soul": ("Behavior Rules", {}),
    "core:env": ("Environment", {"note": "Services"}),
    "core:active": ("Current Focus", {"note": "Open Loops", "decision": "Recent Changes"}),
    "core:defaults": ("Default Operating Assumptions", {}),
    "core:": ("Current Facts", {}),
}
_STATUS_WORDS = ("active", "retired")

_H2 = re.compile(r"^ {0,3}##(?:[ \t]+(.*?))?[ \t]*$")
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+$")
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_ENTRY = re.compile(r"^- (\d{4}-\d{2}-\d{2}):")

Section = tuple[str, list[str]]


@dataclass
class Page:
    preamble: list[str] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    timeline: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    below: list[Section] = field(default_factory=list)
    has_marker: bool = False


# --- templates and routing ---------------------------------------------------------------------


def _family_key(family: str, slug: str) -> str:
    if family not in FAMILIES:
        raise ValueError(f"unknown canonical family: {family!r}")
    if family != "core":
        return family
    key = f"core:{slug.strip().lower()}"
    return key if key in _TEMPLATES else "core:"


def template(family: str, slug: str) -> tuple[str, ...]:
    """The section names above the marker, in order (core pages by file stem)."""
    return _TEMPLATES[_family_key(family, slug)]


def section_for(family: str, slug: str, kind: str) -> str:
    """The template section a claim of this kind is compiled into."""
    if kind not in CLAIM_KINDS:
        raise ValueError(f"unknown claim kind: {kind!r}")
    default, routes = _ROUTES[_family_key(family, slug)]
    return routes.get(kind, default)


def scaffold(family: str, slug: str) -> Page:
    """An empty page: every template section, the marker, empty Timeline and Evidence."""
    return Page(sections=[(name, []) for name in template(family, slug)], has_marker=True)


# --- line helpers --------------------------------------------------------------------------------


def _split(text: str) -> list[str]:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _trim(lines: list[str]) -> list[str]:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end]


def _fence_mask(lines: list[str]) -> list[bool]:
    """True for each line inside a fenced code block (fences included). An unclosed fence is text."""
    mask = [False] * len(lines)
    i = 0
    while i < len(lines):
        opened = _FENCE_OPEN.match(lines[i])
        if opened and not (opened.group(1)[0] == "`" and "`" in opened.group(2)):
            fence = opened.group(1)
            closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
            end = next((j for j in range(i + 1, len(lines)) if closing.match(lines[j])), None)
            if end is not None:
                mask[i : end + 1] = [True] * (end + 1 - i)
                i = end + 1
                continue
        i += 1
    return mask


def _h2(line: str) -> str | None:
    """The heading text when `line` is an ATX H2, else None."""
    match = _H2.match(line)
    if match is None:
        return None
    return _CLOSING_HASHES.sub("", (match.group(1) or "").strip()).strip()


def _name_key(name: str) -> str:
    return " ".join(name.lower().split())


def _flat(text: str) -> str:
    """One line: newlines (and any run of whitespace) become single spaces."""
    return " ".join(text.split())


def _find_marker(lines: list[str], mask: list[bool]) -> int | None:
    return next((i for i, line in enumerate(lines) if not mask[i] and line.strip() == TIMELINE_MARKER), None)


def entry_date(line: str) -> str | None:
    """The date of a `- YYYY-MM-DD: ...` timeline entry (a real calendar date), else None."""
    match = _ENTRY.match(line)
    if match is None:
        return None
    try:
        datetime.date.fromisoformat(match.group(1))
    except ValueError:
        return None
    return match.group(1)


# --- parse and render ---------------------------------------------------------------------------


def _split_sections(lines: list[str], mask: list[bool]) -> tuple[list[str], list[Section]]:
    """(lines before the first H2, [(heading, content)]), each trimmed of blank edge lines."""
    head: list[str] = []
    sections: list[Section] = []
    for line, fenced in zip(lines, mask, strict=True):
        name = None if fenced else _h2(line)
        if name is not None:
            sections.append((name, []))
        elif sections:
            sections[-1][1].append(line)
        else:
            head.append(line)
    return _trim(head), [(name, _trim(content)) for name, content in sections]


def _drop_rule(page: Page) -> None:
    """Remove the one `---` rule that sits directly above the marker."""
    target = page.sections[-1][1] if page.sections else page.preamble
    if target and target[-1].strip() == RULE:
        target.pop()
        target[:] = _trim(target)


def parse_page(body: str) -> Page:
    """Read any page body (frontmatter already removed): canonical, legacy or hand-made."""
    lines = _split(body)
    mask = _fence_mask(lines)
    marker = _find_marker(lines, mask)
    cut = len(lines) if marker is None else marker
    preamble, sections = _split_sections(lines[:cut], mask[:cut])
    page = Page(preamble=preamble, sections=sections, has_marker=marker is not None)
    if marker is None:
        return page
    _drop_rule(page)
    orphans, lower = _split_sections(lines[marker + 1 :], mask[marker + 1 :])
    page.timeline = [line for line in orphans if line.strip()]
    for name, content in lower:
        if _name_key(name) == "timeline":
            page.timeline.extend(line for line in content if line.strip())
        elif _name_key(name) == "evidence":
            page.evidence.extend(line for line in content if line.strip())
        else:
            page.below.append((name, content))
    return page


def _heading(name: str) -> str:
    return f"## {name}".rstrip()


def render_page(page: Page) -> str:
    """The page body as text. A page without a marker renders without one unless it has
    something to put below it."""
    out: list[str] = []
    if page.preamble:
        out += [*page.preamble, ""]
    for name, content in page.sections:
        out += [_heading(name), ""]
        if content:
            out += [*content, ""]
    if page.has_marker or page.timeline or page.evidence or page.below:
        out += [RULE, "", TIMELINE_MARKER, "", "## Timeline", *page.timeline, "", "## Evidence", *page.evidence]
        for name, content in page.below:
            out += ["", _heading(name), "", *content]
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out) + "\n"


# --- compile ---------------------------------------------------------------------------------------


def _copy(page: Page) -> Page:
    return Page(
        list(page.preamble),
        [(n, list(c)) for n, c in page.sections],
        list(page.timeline),
        list(page.evidence),
        [(n, list(c)) for n, c in page.below],
        page.has_marker,
    )


def _adopt_lower_sections(page: Page) -> None:
    """A page without a marker may carry its own `## Timeline` / `## Evidence` above: take them in."""
    kept: list[Section] = []
    for name, content in page.sections:
        key = _name_key(name)
        if key in ("timeline", "evidence"):
            (page.timeline if key == "timeline" else page.evidence).extend(x for x in content if x.strip())
        else:
            kept.append((name, content))
    page.sections = kept


def _with_template(sections: list[Section], names: tuple[str, ...]) -> list[Section]:
    """Add each missing template section just before the first later template section (in template
    order) found after the last earlier one on the page; else at the end of the sections."""
    result = list(sections)
    present = {_name_key(name) for name, _ in result}
    for i, name in enumerate(names):
        if _name_key(name) in present:
            continue
        earlier = {_name_key(n) for n in names[:i]}
        later = {_name_key(n) for n in names[i + 1 :]}
        start = max((j + 1 for j, (n, _) in enumerate(result) if _name_key(n) in earlier), default=0)
        pos = next((j for j in range(start, len(result)) if _name_key(result[j][0]) in later), len(result))
        result.insert(pos, (name, []))
        present.add(_name_key(name))
    return result


def _drop_owned(lines: list[str], owned: Callable[[str], bool]) -> list[str]:
    """Lines minus the owned ones (never inside fenced code); a removal never leaves a double blank."""
    kept: list[str] = []
    removed = False
    for line, fenced in zip(lines, _fence_mask(lines), strict=True):
        if not fenced and owned(line):
            removed = True
            continue
        if removed and not line.strip() and kept and not kept[-1].strip():
            continue
        removed = removed and not line.strip()
        kept.append(line)
    return _trim(kept)


def _claim_bullets(family: str, slug: str, claims: list[Claim]) -> dict[str, list[str]]:
    """Section key → the bullets of its active claims, in claim order (valid_from, claim_id)."""
    bullets: dict[str, list[str]] = {}
    active = [c for c in claims if c.status == "active" and _flat(c.statement)]
    for claim in sorted(active, key=lambda c: (c.valid_from, c.claim_id)):
        target = bullets.setdefault(_name_key(section_for(family, slug, claim.kind)), [])
        line = f"- {_flat(claim.statement)}"
        if line not in target:
            target.append(line)
    return bullets


def _compile_sections(sections: list[Section], family: str, slug: str, claims: list[Claim]) -> list[Section]:
    names = {_name_key(n) for n in template(family, slug)}
    rendered = {_flat(f"- {c.statement}") for c in claims if _flat(c.statement)}
    bullets = _claim_bullets(family, slug, claims)
    status = None
    if family == "decision" and claims:
        status = "active" if any(c.status == "active" for c in claims) else "retired"
        bullets["status"] = [status]
    result: list[Section] = []
    for name, content in sections:
        key = _name_key(name)
        if key in names:
            status_owned = key == "status" and status is not None

            def owned(line: str, status_owned: bool = status_owned) -> bool:
                return _flat(line) in rendered or (status_owned and line.strip().lower() in _STATUS_WORDS)

            content = _drop_owned(content, owned) + bullets.pop(key, [])
        result.append((name, content))
    return result


def _event_entry(event: ClaimEvent) -> str:
    text = _flat(event.statement)
    if event.event == "replaced":
        text = f"Replaced: {text}"
    elif event.event == "retired":
        reason = _flat(event.reason or "")
        text = f"Retired: {text}" + (f" — {reason}" if reason else "")
    day = event.at[:10]
    return timeline_entry(day if entry_date(f"- {day}:") else "undated", text, event.path)


def _merge_timeline(existing: list[str], events: list[ClaimEvent]) -> list[str]:
    """Existing lines plus one entry per event, top-level duplicates dropped, blocks sorted by date."""
    seen: set[str] = set()
    blocks: list[tuple[str, list[str]]] = []
    for line in [*existing, *(_event_entry(e) for e in events)]:
        if not line.strip():
            continue
        if not line[:1].isspace():
            if line.rstrip() in seen:
                continue
            seen.add(line.rstrip())
        day = entry_date(line)
        if day is None and blocks:
            blocks[-1][1].append(line)
        else:
            blocks.append((day or "", [line]))
    blocks.sort(key=lambda block: block[0])
    return [line for _, lines in blocks for line in lines]


def _evidence_key(line: str) -> str:
    text = line.strip()
    if text.startswith(("- ", "* ")):
        text = text[2:]
    return text.strip().strip("`").strip().lower()


def _merge_evidence(existing: list[str], events: list[ClaimEvent]) -> list[str]:
    seen: set[str] = set()
    merged: list[str] = []
    for line in [*existing, *(f"- {e.path.strip()}" for e in events if e.path.strip())]:
        key = _evidence_key(line)
        if line.strip() and key not in seen:
            seen.add(key)
            merged.append(line)
    return merged


def compile_page(page: Page, family: str, slug: str, claims: list[Claim], events: list[ClaimEvent]) -> Page:
    """Re-render the compiled part from the entity's claims (all statuses) and add its events to
    the timeline and evidence; every hand-written line survives in place. Returns a new Page."""
    work = _copy(page)
    if not work.has_marker:
        _adopt_lower_sections(work)
    sections = _with_template(work.sections, template(family, slug))
    work.sections = _compile_sections(sections, family, slug, claims)
    work.timeline = _merge_timeline(work.timeline, events)
    work.evidence = _merge_evidence(work.evidence, events)
    work.has_marker = True
    return work


# --- what Dory owns on a page (for checking written content) ------------------------------------


def unfenced_lines(body: str) -> list[tuple[int, str]]:
    """(line number, line) of every line outside fenced code, numbered from 1."""
    lines = _split(body)
    return [
        (number, line)
        for number, (line, fenced) in enumerate(zip(lines, _fence_mask(lines), strict=True), 1)
        if not fenced
    ]


def owned_lines(body: str, with_sections: bool) -> list[tuple[int, str]]:
    """The lines Dory owns on a page, numbered from 1: the marker and every line below it; on a page
    without one and `with_sections`, its `## Timeline` / `## Evidence` sections (compiling adopts
    them). Blank lines are left out and trailing spaces stripped, so two versions compare as text."""
    lines = _split(body)
    mask = _fence_mask(lines)
    marker = _find_marker(lines, mask)
    picked: list[int] = []
    if marker is not None:
        picked = list(range(marker, len(lines)))
    elif with_sections:
        picked = _lower_section_rows(lines, mask)
    return [(i + 1, lines[i].rstrip()) for i in picked if lines[i].strip()]


def _lower_section_rows(lines: list[str], mask: list[bool]) -> list[int]:
    """Rows of every `## Timeline` / `## Evidence` section: its heading up to the next H2."""
    rows: list[int] = []
    inside = False
    for i, (line, fenced) in enumerate(zip(lines, mask, strict=True)):
        name = None if fenced else _h2(line)
        if name is not None:
            inside = _name_key(name) in ("timeline", "evidence")
        if inside:
            rows.append(i)
    return rows


# --- exact appends and timeline reads ------------------------------------------------------------


def timeline_entry(date: str, text: str, path: str) -> str:
    """`- YYYY-MM-DD: <text> (<path>)`, on one line; without a path, no parentheses."""
    entry = f"- {date.strip()}: {_flat(text)}"
    return f"{entry} ({path.strip()})" if path.strip() else entry


def _append_timeline(lines: list[str], marker: int, entries: list[str]) -> list[str]:
    """Entries at the end of `## Timeline` below the marker (created right under the marker if absent)."""
    mask = _fence_mask(lines)
    heading = next(
        (i for i in range(marker + 1, len(lines)) if not mask[i] and _name_key(_h2(lines[i]) or "") == "timeline"), None
    )
    if heading is None:
        heading = marker + 1
        while heading < len(lines) and not lines[heading].strip():
            heading += 1
        gap = [] if heading > marker + 1 else [""]
        lines = [*lines[:heading], *gap, "## Timeline", *lines[heading:]]
        heading += len(gap)
        mask = _fence_mask(lines)
    end = next((i for i in range(heading + 1, len(lines)) if not mask[i] and _h2(lines[i]) is not None), len(lines))
    last = max((i for i in range(heading, end) if lines[i].strip()), default=heading)
    after = [""] if last + 1 < len(lines) and lines[last + 1].strip() else []
    return [*lines[: last + 1], *entries, *after, *lines[last + 1 :]]


def _append_compiled(lines: list[str], marker: int, text: list[str]) -> list[str]:
    """Text at the end of the compiled part: after its last line, before the `---` rule and marker."""
    last = marker - 1
    while last >= 0 and not lines[last].strip():
        last -= 1
    if last >= 0 and lines[last].strip() == RULE:
        last -= 1
        while last >= 0 and not lines[last].strip():
            last -= 1
    before = [""] if last >= 0 else []
    after = [""] if lines[last + 1].strip() else []
    return [*lines[: last + 1], *before, *text, *after, *lines[last + 1 :]]


def append_text(body: str, text: str) -> str:
    """Append `text` exactly, never dropping or reordering a line of `body`. With the marker,
    dated bullets go to the end of the Timeline and the rest to the end of the compiled part;
    without it, everything goes at the end after a blank line. Keeps the body's CR LF endings."""
    newline = "\r\n" if "\r\n" in body else "\n"
    lines = _split(body)
    added = _trim(_split(text))
    if not added:
        return body
    marker = _find_marker(lines, _fence_mask(lines))
    if marker is None:
        while lines and not lines[-1].strip():
            lines.pop()
        return newline.join([*lines, "", *added] if lines else added) + newline
    mask = _fence_mask(added)
    dated = [line for line, fenced in zip(added, mask, strict=True) if not fenced and entry_date(line)]
    rest = _trim([line for line, fenced in zip(added, mask, strict=True) if fenced or not entry_date(line)])
    if dated:
        lines = _append_timeline(lines, marker, dated)
    if rest:
        lines = _append_compiled(lines, marker, rest)
    return newline.join(lines) + newline


def latest_timeline_date(body: str) -> str | None:
    """The latest `- YYYY-MM-DD:` date below the marker (outside code), or None."""
    lines = _split(body)
    mask = _fence_mask(lines)
    marker = _find_marker(lines, mask)
    if marker is None:
        return None
    dates = [d for i in range(marker + 1, len(lines)) if not mask[i] and (d := entry_date(lines[i]))]
    return max(dates, default=None)
