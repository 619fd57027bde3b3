"""Turn ranked chunk ids into results: rows, snippets, evidence class, confidence, freshness."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dory.corpus.atomic import stat_note
from dory.index.store import IndexStore
from dory.search.query import ParsedQuery

SNIPPET_CHARS = 240
STEM_CHARS = 5  # "indexing" and "indexes" share their first five letters: cheap stem matching


@dataclass
class Candidate:
    chunk_id: int
    path: str
    title: str
    ordinal: int
    start_line: int
    end_line: int
    heading_path: list[str]
    text: str
    fields: dict[str, Any]
    size: int
    mtime_ns: int
    frontmatter_error: str | None
    score: float = 0.0
    factor: float = 1.0
    weak: bool = False  # no lexical match and a cosine below the floor (floor.py)
    rules: list[str] = field(default_factory=list)
    stages: dict[str, float | int] = field(default_factory=dict)


def load_candidates(store: IndexStore, chunk_ids: list[int]) -> dict[int, Candidate]:
    found: dict[int, Candidate] = {}
    for start in range(0, len(chunk_ids), 500):
        part = chunk_ids[start : start + 500]
        rows = store.conn.execute(
            "SELECT c.id, c.ordinal, c.start_line, c.end_line, c.heading_path, c.text, f.path, f.title, "
            "f.doc_type, f.status, f.canonical, f.source_kind, f.frontmatter, f.size, f.mtime_ns, "
            f"f.frontmatter_error FROM chunks c JOIN files f ON f.id = c.file_id WHERE c.id IN "
            f"({','.join('?' * len(part))})",
            part,
        ).fetchall()
        for row in rows:
            frontmatter = json.loads(row["frontmatter"])
            fields = {
                "type": row["doc_type"],
                "status": (row["status"] or "").lower() or None,
                "canonical": bool(row["canonical"]),
                "source_kind": row["source_kind"],
                "superseded_by": frontmatter.get("superseded_by"),
                "visibility": frontmatter.get("visibility"),
            }
            found[row["id"]] = Candidate(
                row["id"],
                row["path"],
                row["title"],
                row["ordinal"],
                row["start_line"],
                row["end_line"],
                json.loads(row["heading_path"]),
                row["text"],
                fields,
                row["size"],
                row["mtime_ns"],
                row["frontmatter_error"],
            )
    return found


def evidence_class(c: Candidate) -> str:
    status, path = c.fields.get("status"), c.path
    if status in ("superseded", "retired", "tombstoned") or c.fields.get("superseded_by"):
        return "superseded"
    if path.startswith("logs/sessions/"):
        return "session"
    if path.startswith("inbox/"):
        return "inbox"
    if status == "raw":
        return "raw"
    if c.fields.get("source_kind") == "generated" or path.startswith(("wiki/", "digests/")):
        return "generated"
    if c.fields.get("canonical") or c.fields.get("source_kind") == "canonical":
        return "canonical"
    if path.startswith("core/"):
        return "core"
    return "note"


def _stems(terms: list[str]) -> list[str]:
    return [term[:STEM_CHARS] for term in terms if term]


def _line_hits(line: str, stems: list[str]) -> int:
    lowered = line.lower()
    return sum(1 for stem in stems if stem in lowered)


def coverage(c: Candidate, parsed: ParsedQuery) -> float:
    stems = _stems(parsed.all_terms)
    if not stems:
        return 0.0
    haystack = " ".join([c.path, c.title, " ".join(c.heading_path), c.text]).lower()
    return sum(1 for stem in stems if stem in haystack) / len(stems)


def snippet(c: Candidate, parsed: ParsedQuery, width: int = SNIPPET_CHARS) -> str:
    return text_snippet(c.text, parsed, width)


def text_snippet(text: str, parsed: ParsedQuery, width: int = SNIPPET_CHARS) -> str:
    """The line with the most query terms, cut to `width` characters centred on the first term."""
    lines = [line for line in text.split("\n") if line.strip()]
    if not lines:
        return ""
    stems = _stems(parsed.all_terms)
    best = max(range(len(lines)), key=lambda i: (_line_hits(lines[i], stems), -i)) if stems else 0
    text = " ".join(" ".join(lines[best : best + 3]).split())
    if len(text) <= width:
        return text
    lowered = text.lower()
    positions = [lowered.find(stem) for stem in stems if stem in lowered]
    centre = min(positions) if positions else 0
    start = max(0, min(centre - width // 3, len(text) - width))
    cut = text[start : start + width]
    return ("…" if start > 0 else "") + cut.strip() + ("…" if start + width < len(text) else "")


def confidence(c: Candidate, parsed: ParsedQuery, position: int, cosine: float | None) -> str:
    cover = coverage(c, parsed)
    if (cover >= 0.75 and position <= 3) or (cosine is not None and cosine >= 0.6):
        return "high"
    if cover >= 0.4 or (cosine is not None and cosine >= 0.4):
        return "medium"
    return "low"


def stale_warning(corpus: Path, c: Candidate) -> str | None:
    """Checks the disk at answer time, so a result never silently shows text that has changed."""
    notes = []
    try:
        st = stat_note(corpus / c.path)  # a note a write has set aside for a moment is not gone
        if st.st_size != c.size or st.st_mtime_ns != c.mtime_ns:
            notes.append("the file changed on disk after it was indexed; `dory reindex` refreshes it")
    except OSError:
        notes.append("the file is no longer on disk")
    if c.frontmatter_error:
        notes.append(f"frontmatter not parsed ({c.frontmatter_error[:120]})")
    return "; ".join(notes) or None


_WORDS = re.compile(r"\w+")


def shingles(text: str, size: int = 3) -> set[str]:
    """Word 3-grams, case-folded, markup ignored: the unit of near-duplicate comparison."""
    tokens = _WORDS.findall(text.casefold())
    if len(tokens) <= size:
        return {" ".join(tokens)}
    return {" ".join(tokens[i : i + size]) for i in range(len(tokens) - size + 1)}


def near_duplicates(a: set[str], b: set[str], threshold: float = 0.8) -> bool:
    """Most of the smaller text's shingles appear in the larger, and the two are of similar size."""
    if not a or not b:
        return False
    overlap = len(a & b)
    return overlap / min(len(a), len(b)) >= threshold and overlap / max(len(a), len(b)) >= 0.5
