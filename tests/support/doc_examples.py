"""The example blocks of a markdown document (README.md, the template notes): which ones are run, and how
each is cut into the commands a reader would type.

An **example block** is a fenced block in a shell language (``sh``, ``bash``, ``shell``, ``console``),
or an unlabelled one that runs a `dory` command (an unlabelled diagram naming `dory/…` modules is
not). It is run in order, one command at a time, unless the line right before its fence (blank
lines aside) is a marker saying otherwise:

    <!-- example: skip (REASON) -->                the block is not run; the reason is reported
    <!-- example: assume `CMD` (REASON) -->        the block runs, except CMD, which the test's own
                                                  environment already is (`python -m pip install .`)
    <!-- example: run -->                         the default, said out loud

A skip needs a reason, and a marker must sit on an example block: a marker anywhere else, or one the
grammar does not know, is an error, so nothing is skipped silently. ``toml`` blocks are settings
examples (checked separately); any other block (a diagram, JSON) is prose.

A block's lines become commands the way bash would read them: a line ending in a backslash continues
on the next, a `#` outside quotes starts a comment, and `&&` and `;` outside quotes separate commands
(each is run and checked on its own; `|` keeps a pipeline together as one command).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SHELL_LANGUAGES = {"", "sh", "bash", "shell", "console"}
FENCE = re.compile(r"^(\s*)(```|~~~)\s*([\w+-]*)\s*$")
MARKER = re.compile(r"^\s*<!--\s*example:\s*(?P<body>.*?)\s*-->\s*$")
MARKER_BODY = re.compile(r"^(?P<action>run|skip|assume)\b\s*(?P<rest>.*)$")
REASON = re.compile(r"^\((?P<reason>[^()]*(?:\([^()]*\)[^()]*)*)\)$")
ASSUMED = re.compile(r"`([^`]+)`")
# A command that runs dory: first word (after VAR=value prefixes), or after a pipe.
RUNS_DORY = re.compile(r"^(?:\w+=\S*\s+)*dory(?=\s|$)|\|\s*dory(?=\s|$)")
HEADING = re.compile(r"^#{1,6}\s+(.*)$")


class MarkerError(ValueError):
    """A marker the grammar does not know, a skip without a reason, or a marker on no example block."""


@dataclass(frozen=True)
class Marker:
    action: str  # run | skip | assume
    reason: str = ""
    assumed: tuple[str, ...] = ()


@dataclass
class Block:
    """One fenced block: where it is, its language, its lines, the marker before it, its section."""

    source: str
    line: int  # the fence's line number (1-based)
    language: str
    lines: list[str]
    heading: str
    marker: Marker | None = None
    marker_line: int = 0
    indent: int = 0  # a block inside a list item is indented; its lines lose that much

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line} ({self.heading or 'top'})"

    @property
    def is_example(self) -> bool:
        """A block in a shell language, or an unlabelled one that runs `dory` (not a diagram naming it)."""
        if self.language in SHELL_LANGUAGES - {""}:
            return True
        return self.language == "" and any(
            RUNS_DORY.search(command) for line in logical_lines(self.lines) for command in commands(line)
        )

    @property
    def skipped(self) -> bool:
        return self.marker is not None and self.marker.action == "skip"


@dataclass
class _Reading:
    blocks: list[Block] = field(default_factory=list)
    heading: str = ""
    marker: tuple[int, Marker] | None = None


def parse_marker(text: str) -> Marker | None:
    """The marker an HTML comment line holds, None for any other line; MarkerError if malformed."""
    found = MARKER.match(text)
    if found is None:
        return None
    body = MARKER_BODY.match(found.group("body"))
    if body is None:
        raise MarkerError(f"unknown example marker {text.strip()!r} (use run, skip (REASON) or assume `CMD` (REASON))")
    action, rest = body.group("action"), body.group("rest").strip()
    assumed = tuple(ASSUMED.findall(rest)) if action == "assume" else ()
    rest = ASSUMED.sub("", rest).strip() if action == "assume" else rest
    reason = REASON.match(rest)
    if action == "run" and rest:
        raise MarkerError(f"`run` takes nothing more: {text.strip()!r}")
    if action in ("skip", "assume") and (reason is None or not reason.group("reason").strip()):
        raise MarkerError(f"`{action}` needs a reason in parentheses: {text.strip()!r}")
    if action == "assume" and not assumed:
        raise MarkerError(f"`assume` names the command it takes as done, in backticks: {text.strip()!r}")
    return Marker(action, reason.group("reason").strip() if reason else "", assumed)


def blocks(text: str, source: str = "README.md") -> list[Block]:
    """Every fenced block of a markdown text, in order, with the marker before it (checked)."""
    state = _Reading()
    current: Block | None = None
    for number, line in enumerate(text.splitlines(), 1):
        fence = FENCE.match(line)
        if current is not None:
            if fence and not fence.group(3):
                state.blocks.append(current)
                current = None
            else:
                current.lines.append(_dedent(line, current))
            continue
        if fence:
            current = Block(source, number, fence.group(3).lower(), [], state.heading, indent=len(fence.group(1)))
            if state.marker is not None:
                current.marker_line, current.marker = state.marker
                state.marker = None
            continue
        _read_prose(line, number, source, state)
    if state.marker is not None:
        raise MarkerError(f"{source}:{state.marker[0]}: an example marker with no block after it")
    for block in state.blocks:
        if block.marker is not None and not block.is_example:
            raise MarkerError(f"{source}:{block.marker_line}: an example marker on a block that runs no `dory` command")
    return state.blocks


def _read_prose(line: str, number: int, source: str, state: _Reading) -> None:
    heading = HEADING.match(line)
    if heading:
        state.heading = heading.group(1).strip()
    try:
        marker = parse_marker(line)
    except MarkerError as exc:
        raise MarkerError(f"{source}:{number}: {exc}") from exc
    if marker is not None:
        if state.marker is not None:
            raise MarkerError(f"{source}:{number}: two example markers in a row")
        state.marker = (number, marker)
    elif line.strip() and state.marker is not None:
        raise MarkerError(f"{source}:{state.marker[0]}: an example marker must come right before its block")


def _dedent(line: str, block: Block) -> str:
    """A block indented inside a list item: its lines lose the fence's indentation."""
    if block.indent == 0 or line[: block.indent].isspace():
        return line[block.indent :]
    return line.lstrip()


def logical_lines(lines: list[str]) -> list[str]:
    """Lines joined where one ends in a backslash (a command continued on the next line)."""
    joined: list[str] = []
    pending = ""
    for line in lines:
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        joined.append(pending + line)
        pending = ""
    if pending:
        joined.append(pending)
    return [line for line in joined if line.strip()]


def commands(line: str) -> list[str]:
    """The commands of one logical line: its comment left out, cut at `&&` and `;` outside quotes."""
    found: list[str] = []
    current: list[str] = []
    quote = ""
    i = 0
    while i < len(line):
        char = line[i]
        if quote:
            current.append(char)
            if char == quote:
                quote = ""
            elif char == "\\" and quote == '"' and i + 1 < len(line):
                current.append(line[i + 1])
                i += 1
        elif char in "'\"":
            quote = char
            current.append(char)
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            break
        elif line.startswith("&&", i) or char == ";":
            found.append("".join(current))
            current = []
            i += 1 if char == "&" else 0
        else:
            current.append(char)
        i += 1
    found.append("".join(current))
    return [command.strip() for command in found if command.strip()]


INLINE = re.compile(r"(?<!`)`(dory [^`\n]+)`(?!`)")


def inline_commands(text: str) -> list[tuple[int, str]]:
    """(line, command) for each inline code span of the prose that is a whole `dory …` command."""
    found: list[tuple[int, str]] = []
    in_fence = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence:
            found += [(number, match.group(1).strip()) for match in INLINE.finditer(line)]
    return found
