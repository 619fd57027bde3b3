"""The header of a transcript in a foreign layout, and the speaker labels of its turns.

A transcript written by another tool (no `## role · … · m-…` headings) is read paragraph by
paragraph, each paragraph a turn. Such files usually open with a title and a date line before the
first turn:

    # locomo conv-26 session 1

    _1:56 pm on 8 May, 2023_ — Caroline & Melanie

    **Caroline** (D1:1): Hey Mel! Good to see you!

That opening describes the session; it is nobody's turn. When most paragraphs start with a speaker
label (`**Name**:`, `**Name** (tag):`, `**Name:**`, `Name:`), everything before the first labelled
paragraph is the header. Without any label, only leading headings and a leading one-line date are.
The header's date becomes the session's date when the frontmatter gives none.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

# A speaker label at the start of a paragraph: the name, an optional parenthesised tag, a colon.
_SPEAKER = re.compile(
    r"^(?:>[ \t]*)?(?:\*\*(?P<bold_colon>[^*\n:]{1,60}?):\*\*|\*\*(?P<bold>[^*\n:]{1,60}?)\*\*"
    r"|__(?P<under>[^_\n:]{1,60}?)__|(?P<plain>[A-Z][\w.'\-]{0,30}(?: [A-Z][\w.'\-]{0,30}){0,2}))"
    r"(?:[ \t]*\((?P<tag>[^()\n]{0,40})\))?(?(bold_colon)|[ \t]*:)[ \t]*"
)
_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = r"(?P<month>[A-Za-z]{3,9})\.?"
_DATES = (
    re.compile(r"(?<!\d)(?P<year>\d{4})-(?P<mnum>\d{2})-(?P<day>\d{2})(?!\d)"),
    re.compile(rf"(?<!\d)(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+{_MONTH},?\s+(?P<year>\d{{4}})(?!\d)"),
    re.compile(rf"\b{_MONTH}\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<year>\d{{4}})(?!\d)"),
)
_CLOCK = re.compile(r"(?<!\d)(?P<hour>\d{1,2}):(?P<minute>\d{2})\s*(?P<half>[ap]\.?m\.?)?(?![\w:])", re.IGNORECASE)
# A one-line paragraph this long or shorter may be a date line (longer ones are someone talking).
_DATE_LINE_MAX = 120


@dataclass(frozen=True)
class Speaker:
    name: str
    tag: str | None
    body: str  # the paragraph after its label


def speaker(paragraph: str) -> Speaker | None:
    """The speaker label a paragraph opens with, if it has one."""
    match = _SPEAKER.match(paragraph)
    if match is None:
        return None
    name = next(value for value in match.group("bold_colon", "bold", "under", "plain") if value is not None)
    name = " ".join(name.split())
    if not name:
        return None
    return Speaker(name, match.group("tag"), paragraph[match.end() :].strip())


def header_length(paragraphs: list[str]) -> int:
    """How many leading paragraphs are the transcript's header rather than turns."""
    labelled = [index for index, text in enumerate(paragraphs) if speaker(text) is not None]
    talk = [text for text in paragraphs if not _is_heading(text)]
    # Labels on most paragraphs make a dialogue; a stray "Note:" in prose does not.
    if labelled and 2 * len(labelled) >= len(talk):
        return labelled[0]
    count = 0
    for text in paragraphs:
        if _is_heading(text) or (_one_line(text) and date_in(text) is not None):
            count += 1
        else:
            break
    return count


def date_in(text: str) -> str | None:
    """The first calendar date written in `text` (with its clock time when one is given), as ISO 8601
    (`2023-05-08T13:56:00` or `2023-05-08`); None when it names no valid date."""
    for pattern in _DATES:
        for match in pattern.finditer(text):
            day = _day(match)
            if day is None:
                continue
            clock = _clock(text)
            return dt.datetime.combine(day, clock).isoformat() if clock else day.isoformat()
    return None


def _day(match: re.Match[str]) -> dt.date | None:
    groups = match.groupdict()
    month = int(groups["mnum"]) if groups.get("mnum") else _MONTHS.get((groups.get("month") or "").lower())
    if month is None:
        return None
    try:
        return dt.date(int(groups["year"]), month, int(groups["day"]))
    except ValueError:
        return None


def _clock(text: str) -> dt.time | None:
    match = _CLOCK.search(text)
    if match is None:
        return None
    hour, minute = int(match.group("hour")), int(match.group("minute"))
    half = (match.group("half") or "").lower().replace(".", "")
    if half:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if half == "pm" else 0)
    if hour > 23 or minute > 59:
        return None
    return dt.time(hour, minute)


def _is_heading(text: str) -> bool:
    return "\n" not in text.strip() and text.lstrip().startswith("#")


def _one_line(text: str) -> bool:
    return "\n" not in text.strip() and len(text.strip()) <= _DATE_LINE_MAX
