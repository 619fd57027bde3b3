"""Rewriting the prose of a markdown note and leaving its code alone (readers that rewrite links use it).

What counts as code is what the indexer counts as code (`dory.memory.links.code_masked`: the
frontmatter, fenced blocks, inline code spans), so the two agree: every link the index will see
passes through here, and a `[[link]]` shown as code stays exactly as written.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from dory.memory.links import code_masked

Replace = Callable[[re.Match[str]], str]


def substitute(lines: list[str], body_start: int, pattern: re.Pattern[str], replace: Replace) -> list[str]:
    """`lines` with every match of `pattern` in prose replaced by `replace(match)`. Lines are those
    of `text.split("\\n")`; matches never span lines and replacements are not scanned again."""
    masked = code_masked(lines, body_start)
    out: list[str] = []
    for line, mask in zip(lines, masked, strict=True):
        out.append(substitute_line(line, mask, pattern, replace) if mask else line)
    return out


def substitute_line(line: str, mask: str, pattern: re.Pattern[str], replace: Replace) -> str:
    """One line; `mask` is the line with its code spans blanked (same length). Every pattern here
    starts and ends with a character that is not a space, so a match in the mask never starts or
    ends inside a code span."""
    pieces: list[str] = []
    last = 0
    for found in pattern.finditer(mask):
        start, end = found.span()
        # A code span inside the match (a label like [`x` y](...)) is blanked in the mask: the
        # replacement reads the text as written, when it is still a match of its own.
        match = found if line[start:end] == mask[start:end] else pattern.fullmatch(line, start, end)
        if match is None:
            continue
        pieces += [line[last:start], replace(match)]
        last = end
    return "".join(pieces) + line[last:] if pieces else line


def prose_line(line: str, pattern: re.Pattern[str], replace: Replace) -> str:
    """One line of text that is not inside a fence (a quoted block's text): inline code still kept."""
    return substitute_line(line, code_masked([line])[0], pattern, replace)


def code_span(text: str) -> str:
    """`text` as inline code, with a backtick run longer than any inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"
