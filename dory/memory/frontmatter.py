"""Frontmatter on writes: the SPEC §2 vocabulary, normalised; and how a note is rendered.

Indexing accepts any frontmatter. Writes are stricter: `type`, `status`, `source_kind`,
`visibility`, `sensitivity` must come from the vocabulary (common synonyms are mapped), dates
become `YYYY-MM-DD`, `aliases`/`tags` become lists, and keys Dory does not know are kept as they
are. Defaults follow the note's place in the layout (a file under `people/` is a person page).
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import PurePosixPath
from typing import Any

import yaml

from dory.corpus.document import frontmatter_list
from dory.errors import InvalidFrontmatter
from dory.memory.entities import layout_family

TYPES = (
    "core",
    "person",
    "project",
    "concept",
    "decision",
    "note",
    "knowledge",
    "idea",
    "reference",
    "report",
    "briefing",
    "research",
    "capture",
    "source",
    "session",
    "daily",
    "weekly",
    "digest-daily",
    "digest-weekly",
    "wiki",
)
TYPE_SYNONYMS = {
    "action-item": "capture",
    "draft": "capture",
    "inbox": "capture",
    "task": "capture",
    "todo": "capture",
    "analysis": "report",
    "strategy": "report",
    "daily-log": "daily",
    "digest": "digest-daily",
    "preference": "knowledge",
    "tool": "knowledge",
    "link": "reference",
    "resource": "reference",
    "product": "project",
    "session-log": "session",
    "people": "person",
}
STATUSES = ("active", "pending", "paused", "done", "raw", "superseded")
STATUS_SYNONYMS = {
    "abandoned": "superseded",
    "archived": "superseded",
    "archive": "superseded",
    "retired": "superseded",
    "backlog": "pending",
    "draft": "pending",
    "planning": "pending",
    "idea": "pending",
    "complete": "done",
    "completed": "done",
    "deployed": "done",
    "in-progress": "active",
    "wip": "active",
    "inbox": "raw",
    "parked": "paused",
    "someday": "paused",
}
SOURCE_KINDS = (
    "canonical",
    "distilled",
    "extracted",
    "generated",
    "human",
    "imported",
    "legacy",
    "recall-promotion",
    "research",
    "semantic",
    "web",
)
VISIBILITY = ("private", "internal", "public")
SENSITIVITY = ("personal", "financial", "legal", "contact", "credentials", "health", "none")
DATE_FIELDS = ("created", "updated", "date")
FIRST_KEYS = ("title", "type", "status", "canonical", "source_kind")
CANONICAL_TYPES = ("core", "person", "project", "concept", "decision")
# Where notes of each type live when nothing says otherwise (longest prefix wins).
_PLACES = (
    ("logs/sessions/", "session"),
    ("logs/daily/", "daily"),
    ("logs/weekly/", "weekly"),
    ("digests/daily/", "digest-daily"),
    ("digests/weekly/", "digest-weekly"),
    ("knowledge/", "knowledge"),
    ("ideas/", "idea"),
    ("references/reports/", "report"),
    ("references/briefings/", "briefing"),
    ("references/research/", "research"),
    ("references/", "reference"),
    ("inbox/", "capture"),
    ("sources/", "source"),
    ("wiki/", "wiki"),
)
_DEFAULT_STATUS = {
    "capture": "raw",
    "session": "raw",
    "idea": "pending",
    "daily": "done",
    "weekly": "done",
    "digest-daily": "done",
    "digest-weekly": "done",
    "reference": "done",
    "report": "done",
    "briefing": "done",
    "source": "done",
}


def today() -> str:
    return dt.date.today().isoformat()


def type_for_path(path: str) -> str:
    place = layout_family(path)
    if place:
        return place[0]
    for prefix, kind in _PLACES:
        if path.startswith(prefix):
            return kind
    return "note"


def normalise(fm: dict[str, Any], path: str, title_hint: str | None = None) -> dict[str, Any]:
    """A copy of `fm` in the vocabulary with defaults filled in; InvalidFrontmatter names the field."""
    out: dict[str, Any] = dict(fm)
    out["title"] = _title(out.get("title"), title_hint, path)
    out["type"] = _choose(out.get("type"), "type", TYPES, TYPE_SYNONYMS) or type_for_path(path)
    out["status"] = _choose(out.get("status"), "status", STATUSES, STATUS_SYNONYMS) or _DEFAULT_STATUS.get(
        out["type"], "active"
    )
    out["canonical"] = _bool(out.get("canonical"), "canonical", _canonical_default(out["type"], path))
    out["source_kind"] = _choose(out.get("source_kind"), "source_kind", SOURCE_KINDS, {}) or (
        "canonical" if out["canonical"] else "human"
    )
    for key, allowed in (("visibility", VISIBILITY), ("sensitivity", SENSITIVITY)):
        if out.get(key) is not None:
            out[key] = _choose(out[key], key, allowed, {})
    for key in ("aliases", "tags"):
        if key in out:
            out[key] = frontmatter_list(out[key])
    if "pinned" in out:
        out["pinned"] = _bool(out["pinned"], "pinned", False)
    for key in DATE_FIELDS:
        if out.get(key) is not None:
            out[key] = _date(out[key], key)
    out.setdefault("created", today())
    return _ordered(out)


def _title(value: Any, hint: str | None, path: str) -> str:
    if isinstance(value, str | int | float) and str(value).strip():
        return " ".join(str(value).split())
    if value not in (None, ""):
        raise InvalidFrontmatter("title must be text", field="title")
    return hint or PurePosixPath(path).stem


def _choose(value: Any, field: str, allowed: tuple[str, ...], synonyms: dict[str, str]) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidFrontmatter(f"{field} must be one of: {', '.join(allowed)}", field=field, value=str(value))
    # Template leftovers such as "person # or project" keep only their first word.
    cleaned = re.split(r"[#|—]", value, maxsplit=1)[0].strip().lower().replace(" ", "-").replace("_", "-")
    cleaned = synonyms.get(cleaned, cleaned)
    if cleaned not in allowed:
        raise InvalidFrontmatter(f"{field} {value!r} is not one of: {', '.join(allowed)}", field=field, value=value)
    return cleaned


def _bool(value: Any, field: str, default: bool) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "false", "no"):
        return value.strip().lower() in ("true", "yes")
    raise InvalidFrontmatter(f"{field} must be true or false", field=field, value=str(value))


def _canonical_default(kind: str, path: str) -> bool:
    return kind in CANONICAL_TYPES and layout_family(path) is not None


def _date(value: Any, field: str) -> str:
    """A date, or the date of a full ISO timestamp; anything else (even with a date in front) is refused."""
    text = str(value).strip()
    try:
        return dt.date.fromisoformat(text).isoformat()
    except ValueError:
        pass
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).date().isoformat()
    except ValueError as exc:
        raise InvalidFrontmatter(f"{field} must be a date (YYYY-MM-DD), not {text!r}", field=field) from exc


def _ordered(fm: dict[str, Any]) -> dict[str, Any]:
    first = {key: fm[key] for key in FIRST_KEYS if key in fm}
    return first | {key: value for key, value in fm.items() if key not in first}


def merge(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """Fields given in `new` win, except tags and aliases, which are united."""
    merged = dict(old)
    for key, value in new.items():
        if key in ("tags", "aliases"):
            merged[key] = list(dict.fromkeys(frontmatter_list(old.get(key)) + frontmatter_list(value)))
        else:
            merged[key] = value
    return merged


def render(fm: dict[str, Any], body: str) -> bytes:
    """The note as Dory writes it: YAML frontmatter in key order, a blank line, the body, one final newline."""
    # Dates as YAML dates (`created: 2026-11-21`, unquoted, as editors write them).
    fm = {key: _as_date(value) if key in DATE_FIELDS else value for key, value in fm.items()}
    block = yaml.safe_dump(fm, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1_000_000)
    text = f"---\n{block}---\n\n{body.strip(chr(10))}\n" if body.strip() else f"---\n{block}---\n"
    return text.encode("utf-8")


def parse_day(value: object) -> dt.date | None:
    """The day a value starts with (`2026-11-20`, `2026-11-20T10:00Z`, a YAML date), or None.
    Stricter than `date.fromisoformat`, which also takes `2026-W47` and `20261120`."""
    if isinstance(value, dt.date):
        return value if not isinstance(value, dt.datetime) else value.date()
    if not isinstance(value, str) or not re.match(r"\d{4}-\d{2}-\d{2}(?!\d)", value):
        return None
    try:
        return dt.date.fromisoformat(value[:10])
    except ValueError:
        return None


def _as_date(value: Any) -> Any:
    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            return value
    return value
