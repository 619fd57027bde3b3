"""Shared by the wake modules: the recent-session input, section candidates, omissions, limits, text helpers."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t#]*$")

# C0 and C1 control characters except tab: invisible in a prompt, and a stray CR rewinds a terminal line.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class RecentSession:
    """A finished agent session the service found in the session plane."""

    path: str
    title: str
    agent: str
    updated: str | None


@dataclass(frozen=True)
class _Candidate:
    """A section before packing: its full lines (heading first) and its own token budget."""

    name: str
    source: str
    lines: list[str]
    budget: int
    get_path: str | None = None  # what `dory get` fetches for the rest
    items: list[str] | None = None  # a list section: the path behind each line after the heading
    # Whether left-out list items are named on the last line: a session's path costs about as much
    # as its line, so sessions that do not fit are only reported in `omitted`.
    name_left_out: bool = True


@dataclass(frozen=True)
class _Omission:
    source: str
    reason: str
    gettable: bool = False  # named on the block's last line (the file exists)


@dataclass(frozen=True)
class _Limits:
    count: Callable[[str], int]
    budget: int
    max_chars: int

    def fits(self, text: str) -> bool:
        return len(text) <= self.max_chars and self.count(text) <= self.budget


def _is_content(line: str) -> bool:
    return bool(line.strip()) and not _HEADING.match(line)


def _one_line(text: str, limit: int) -> str:
    return " ".join(_CONTROL.sub(" ", text).split())[:limit]


def _cap_chars(lines: list[str], limit: int) -> list[str]:
    """Lines whose joined length reaches at most `limit`; nothing past the character cap can fit."""
    kept: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) > limit:
            kept.append(line[: max(limit - used, 0)])
            break
        kept.append(line)
        used += len(line) + 1
    return kept
