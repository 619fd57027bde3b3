"""Privacy rules: which boundary lines reach a privacy block and which visibilities hide a page."""

from __future__ import annotations

import re

from dory.context.wake.base import _HEADING

_BOUNDARY = re.compile(r"boundar|private|privacy|sensitive|public|redact|do not|don['’]t|avoid", re.IGNORECASE)
# Lines naming or holding a personal identifier never reach a privacy block, even under a boundary heading.
_IDENTIFIER = re.compile(
    r"e-?mail|phone|mobile|telegram|whatsapp|birth|\bborn\b|\bdob\b|passport|\bssn\b|social security"
    r"|address|orcid|\biban\b|\S@\S|\+?\d[\d \t().-]{6,}\d",
    re.IGNORECASE,
)
_HIDDEN_VISIBILITY = frozenset({"private", "personal", "sensitive"})


def _boundary_lines(lines: list[str]) -> list[str]:
    """Headings that name a boundary and the lines under them, minus personal identifiers.

    A sub-heading about an identifier ("### Phone") hides its whole subsection, whose lines (a bare
    street name, a number) may not say what they are."""
    out: list[str] = []
    level: int | None = None  # depth of the boundary heading we are under
    skip: int | None = None  # depth of the identifier sub-heading we are under
    for line in lines:
        heading = _HEADING.match(line)
        if heading:
            depth, text = len(heading.group(1)), heading.group(2) or ""
            if skip is not None and depth <= skip:
                skip = None
            if level is not None and depth <= level:
                level = None
            if level is None and _BOUNDARY.search(text):
                level = depth
            elif level is not None and skip is None and _IDENTIFIER.search(text):
                skip = depth
        if level is not None and skip is None and not _IDENTIFIER.search(line):
            out.append(line)
    return out
