"""Written content may not forge the structure Dory owns on a page (SPEC §2, canonical pages).

A canonical page keeps compiled truth above `<!-- TIMELINE: append-only below this line -->` and the
append-only `## Timeline` and `## Evidence` below it: entries there point at evidence, and a reader
trusts them most. Decisions (each one tested):

- Rejected with `section_marker`, never escaped: the writer learns why, and no text is silently
  changed. With `soft` the write is quarantined, like any unsafe content.
- The marker is Dory's: written text may not contain an HTML comment that names the timeline (the
  marker itself or an imitation in other case, spacing or look-alike letters), outside fenced code.
  Dated bullets (`- YYYY-MM-DD: ...`) appended to a page with a marker still go to its Timeline:
  that is how an entry is added by hand.
- On a canonical page (by its place in the layout) a create or an append may not bring its own
  `## Timeline` or `## Evidence` section either: compiling a page without a marker adopts them.
- A replace keeps what Dory owns exactly as it is (the marker and everything below it; on a canonical
  page without a marker, its Timeline and Evidence sections), blank lines and trailing spaces aside,
  and adds no imitation of the marker. Everything above the marker may change.
- A semantic write's subject, statement and reason may not name the marker either (a statement is
  flattened to one line, so it cannot bring a section).
"""

from __future__ import annotations

from itertools import zip_longest

from dory.errors import SectionMarker
from dory.memory import canonical
from dory.memory.entities import layout_family
from dory.memory.injection import fold
from dory.memory.safety import Problem

_HINT = "append dated bullets `- YYYY-MM-DD: ...` to add timeline entries"


def _imitations(text: str) -> list[int]:
    """Line numbers (outside fenced code) of HTML comments that name the timeline."""
    found: list[int] = []
    for number, line in canonical.unfenced_lines(text):
        folded = "".join(fold(line).split())
        if "<!--" in folded and "timeline" in folded.split("<!--", 1)[1]:
            found.append(number)
    return found


def _problem(message: str, line: int) -> Problem:
    return Problem(SectionMarker.code, f"{message} at line {line}; {_HINT}", {"line": line})


def in_text(text: str) -> list[Problem]:
    """The problem with a timeline marker (or an imitation of one) anywhere in `text`, if any."""
    lines = _imitations(text)
    return [_problem("content contains the timeline marker, which only Dory writes", lines[0])] if lines else []


def in_write(rel: str, kind: str, body: str, current: str | None) -> list[Problem]:
    """The structure problem of an exact write of `body` to `rel`, if any (`current`: the body a
    replace overwrites)."""
    with_sections = layout_family(rel) is not None
    if kind == "replace" and current is not None:
        return _replaced(rel, body, current, with_sections)
    owned = canonical.owned_lines(body, with_sections)
    if owned:
        what = "the timeline marker" if canonical.TIMELINE_MARKER in owned[0][1] else "a Timeline or Evidence section"
        return [_problem(f"content brings {what}, which Dory owns on {rel}", owned[0][0])]
    return in_text(body)


def _replaced(rel: str, body: str, current: str, with_sections: bool) -> list[Problem]:
    after = canonical.owned_lines(body, with_sections)
    for old, new in zip_longest(canonical.owned_lines(current, with_sections), after):
        if old is None or new is None or old[1] != new[1]:
            line = new[0] if new else (after[-1][0] if after else 1)
            message = f"the replace changes the timeline or evidence of {rel}, which are append-only"
            return [_problem(f"{message} (keep the marker and everything below it as it is)", line)]
    added = _imitations(body)
    if len(added) > len(_imitations(current)):
        return [_problem("content adds an imitation of the timeline marker", added[0])]
    return []
