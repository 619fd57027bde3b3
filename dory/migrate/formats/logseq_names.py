"""How a Logseq graph names its pages: from file names, `title::` properties and journal dates.

- A page file `pages/a___b.md` (the `:triple-lowbar` format) or `pages/a%2Fb.md` (the legacy one,
  URL-encoded) is the page `a/b`; a `title::` property overrides the file name. A namespaced page
  lands at `a/b.md` under the destination folder, each part made a safe file name.
- A journal file `journals/YYYY_MM_DD.md` is the day's page, named as Logseq shows it
  (`:journal/page-title-format` in `logseq/config.edn`, "MMM do, yyyy" by default: "Sep 14th, 2020");
  it lands at `journals/YYYY-MM-DD.md`.
- Page names match case-insensitively (Logseq lower-cases them), after Unicode NFC.
"""

from __future__ import annotations

import datetime as dt
import functools
import posixpath
import re
import unicodedata
from urllib.parse import unquote

from dory.migrate.names import MAX_NAME_BYTES, safe_name, safe_path

DEFAULT_TITLE_FORMAT = "MMM do, yyyy"
_DAY_FILE = re.compile(r"^(\d{4})[_-]?(\d{2})[_-]?(\d{2})$")
_TOKENS = re.compile(r"yyyy|yy|MMMM|MMM|MM|M|do|dd|d|EEEE|EEE|EE|E|'[^']*'")
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_TITLE_FORMAT = re.compile(r':journal/page-title-format\s+"([^"\n]{1,60})"')


def key(name: str) -> str:
    """The one form page names are compared in."""
    return unicodedata.normalize("NFC", name).strip().lower()


def page_name(rel: str) -> str:
    """The page a file under `pages/` holds, by its file name: `a___b.md` and `a%2Fb.md` are `a/b`."""
    stem = posixpath.splitext(rel)[0]
    return unquote(stem.replace("___", "/")).strip()


def page_path(into: str, name: str) -> str:
    *folders, last = name.split("/")
    file = safe_name(last, limit=MAX_NAME_BYTES - len(".md")) + ".md"
    return posixpath.join(into, *([safe_path(folders)] if safe_path(folders) else []), file)


def journal_day(rel: str) -> dt.date | None:
    """The day of a journal file (`journals/2020_09_14.md`), or None when its name is no date."""
    match = _DAY_FILE.match(posixpath.splitext(posixpath.basename(rel))[0])
    if match is None:
        return None
    try:
        return dt.date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    except ValueError:
        return None


def journal_path(into: str, day: dt.date) -> str:
    return posixpath.join(into, "journals", f"{day.isoformat()}.md")


def title_format(config: str) -> str:
    """The journal title format a `config.edn` sets, or Logseq's default."""
    match = _TITLE_FORMAT.search(config)
    return match.group(1) if match else DEFAULT_TITLE_FORMAT


def journal_names(day: dt.date, fmt: str) -> list[str]:
    """Every name a link may use for a day's journal page: the configured title, the default one
    and the ISO date."""
    names = [format_day(day, fmt), format_day(day, DEFAULT_TITLE_FORMAT), day.isoformat()]
    return list(dict.fromkeys(names))


def format_day(day: dt.date, fmt: str) -> str:
    """`day` in a date-fns pattern, for the tokens journal titles use."""

    def token(match: re.Match[str]) -> str:
        text = match.group()
        if text.startswith("'"):
            return text[1:-1]
        month, weekday = _MONTHS[day.month - 1], _DAYS[day.weekday()]
        values = {
            "yyyy": f"{day.year:04d}",
            "yy": f"{day.year % 100:02d}",
            "MMMM": month,
            "MMM": month[:3],
            "MM": f"{day.month:02d}",
            "M": str(day.month),
            "do": ordinal(day.day),
            "dd": f"{day.day:02d}",
            "d": str(day.day),
            "EEEE": weekday,
        }
        return values.get(text, weekday[:3])

    return _TOKENS.sub(token, fmt)


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def parse_day(name: str, fmt: str) -> dt.date | None:
    """The day a journal page name stands for (in the configured or the default title format, or
    ISO), or None when it names no day: a link to a day with no journal file is still a journal."""
    for pattern in (_day_pattern(fmt), _day_pattern(DEFAULT_TITLE_FORMAT), _day_pattern("yyyy-MM-dd")):
        match = pattern.fullmatch(name.strip()) if pattern is not None else None
        if match is None:
            continue
        parts = match.groupdict()
        month = _month(parts)
        year = int(parts["y"]) if parts.get("y") else 2000 + int(parts.get("yy") or 0)
        try:
            return dt.date(year, month, int(parts.get("d") or 0))
        except ValueError:
            continue
    return None


def _month(parts: dict[str, str | None]) -> int:
    if parts.get("m"):
        return int(parts["m"] or 0)
    written = (parts.get("month") or "").lower()
    return next((n for n, month in enumerate(_MONTHS, 1) if month.lower().startswith(written[:3])), 0)


_PIECES = {
    "yyyy": r"(?P<y>\d{4})",
    "yy": r"(?P<yy>\d{2})",
    "MMMM": "(?P<month>" + "|".join(_MONTHS) + ")",
    "MMM": "(?P<month>" + "|".join(month[:3] for month in _MONTHS) + ")",
    "MM": r"(?P<m>\d{2})",
    "M": r"(?P<m>\d{1,2})",
    "do": r"(?P<d>\d{1,2})(?:st|nd|rd|th)",
    "dd": r"(?P<d>\d{2})",
    "d": r"(?P<d>\d{1,2})",
    "EEEE": "(?:" + "|".join(_DAYS) + ")",
}


@functools.lru_cache(maxsize=8)
def _day_pattern(fmt: str) -> re.Pattern[str] | None:
    pieces: list[str] = []
    last = 0
    for match in _TOKENS.finditer(fmt):
        token = match.group()
        pieces.append(re.escape(fmt[last : match.start()]))
        if token.startswith("'"):
            pieces.append(re.escape(token[1:-1]))
        else:
            pieces.append(_PIECES.get(token, "(?:" + "|".join(day[:3] for day in _DAYS) + ")"))
        last = match.end()
    pieces.append(re.escape(fmt[last:]))
    try:
        return re.compile("".join(pieces), re.IGNORECASE)
    except re.error:  # a format naming the same part twice
        return None
