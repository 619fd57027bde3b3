"""LoCoMo helpers shared by bench_recall, bench_context, bench_compaction (and later bench_digest).

The archive holds `corpus/logs/sessions/locomo/<conv>/session-NN.md` (each turn a paragraph tagged
`(D<session>:<turn>)`), `queries.jsonl` (questions with `expected_turns` = `path#D3:7`) and
`events.jsonl` (the annotated events of each session).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TURN = re.compile(r"\((D\d+:\d+)\)")


@dataclass
class Transcript:
    conversation: str
    session: int
    path: str  # corpus-relative
    turns: list[Any]  # dory.sessions.transcript.Message, in order, with line ranges


def transcripts(corpus: Path) -> list[Transcript]:
    """Every LoCoMo session parsed the way Dory's session plane parses it, by conversation and session."""
    from dory.sessions.transcript import parse_session

    out = []
    for file in sorted(corpus.glob("logs/sessions/locomo/*/session-*.md")):
        rel = file.relative_to(corpus).as_posix()
        session = parse_session(rel, file.read_bytes())
        number = int(re.search(r"session-(\d+)", file.name).group(1))  # type: ignore[union-attr]
        out.append(Transcript(file.parent.name, number, rel, session.turns()))
    return out


def anchors(text: str) -> set[str]:
    return set(TURN.findall(text))


def turn_lines(corpus: Path) -> dict[str, dict[str, int]]:
    """path → {turn anchor "D3:7" → 1-based line}."""
    table: dict[str, dict[str, int]] = {}
    for path in corpus.rglob("*.md"):
        found: dict[str, int] = {}
        for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1):
            for anchor in TURN.findall(line):
                found.setdefault(anchor, number)
        table[path.relative_to(corpus).as_posix()] = found
    return table


def queries(root: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (root / "queries.jsonl").read_text(encoding="utf-8").splitlines() if line]
    return [row for row in rows if row.get("expected_turns")]


def events(root: Path) -> dict[str, list[str]]:
    """path → the annotated events of that session (all speakers)."""
    out: dict[str, list[str]] = {}
    for line in (root / "events.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        items = [
            event
            for key, value in row["events"].items()
            if key != "date" and isinstance(value, list)
            for event in value
        ]
        out[row["path"]] = items
    return out


def content_words(text: str) -> set[str]:
    from dory.sessions.extract import words

    return {w for w in words(text) if len(w) > 2}


def mentioned(event: str, summary_words: set[str], threshold: float) -> bool:
    """An event counts as mentioned when at least `threshold` of its content words appear in the text."""
    words = content_words(event)
    return bool(words) and len(words & summary_words) / len(words) >= threshold
