"""Agent sessions on known days in a throwaway corpus, and checks for the digests made from them.

    root = new_corpus(tmp_path / "corpus")                      # the corpus template, like `dory init`
    svc = DoryService(load_settings(root, {...}, env={}))
    [rel] = ingest(svc, [rec("user", "2026-11-18T10:00:00Z", "hi", session_id="s-1")], agent="codex")
    rel = write_transcript(root, Session("s-2", "codex", "desk", messages=[...]))   # Dory's own format
    for section, text, source in citations(root, digest_text): ...   # every bullet's turn, checked

A bullet of a daily digest cites its turn as `([m-<12 hex>](/logs/sessions/….md#L<n>))`; `citations`
checks that the file exists and that line n is that message's heading.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from dory.corpus.document import parse_document
from dory.corpus.template import copy_template
from dory.jobs.digest import NONE, Source, cited, sections_of
from dory.models import SessionIngestRequest
from dory.service import DoryService
from dory.sessions.transcript import Message, Session, parse_session, render_session, session_path

_HEADING = re.compile(r"^## (?:user|assistant|tool|system)(?: · \S+)? · (?P<id>m-[0-9a-f]{12})(?: · \w+)?$")


def rec(role: str, stamp: str, content: str, **extra: Any) -> dict[str, Any]:
    """One generic JSONL record (`dory sessions ingest --format jsonl`)."""
    return {"type": role, "timestamp": stamp, "content": content, **extra}


def jsonl(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


def new_corpus(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    copy_template(root)
    return root


def ingest(
    svc: DoryService, records: list[dict[str, Any]], agent: str | None = None, device: str = "laptop"
) -> list[str]:
    """Ingest the records as one JSONL file; the transcripts' corpus paths."""
    res = svc.sessions.ingest(SessionIngestRequest(content=jsonl(records), format="jsonl", agent=agent, device=device))
    assert not res.problems, res.problems
    return [s.path for s in res.sessions]


def write_transcript(root: Path, session: Session) -> str:
    """Write a session straight to its transcript (as a harness sync or a hand copy would)."""
    rel = session_path(session)
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(render_session(session))
    return rel


def turns(root: Path, rel: str) -> list[Message]:
    """The messages of a transcript, with their line numbers."""
    return parse_session(rel, (root / rel).read_bytes()).messages


def link(rel: str, message: Message) -> str:
    """How a digest cites a turn."""
    return f"([{message.id}](/{rel}#L{message.start_line}))"


def page(data: bytes) -> tuple[dict[str, Any], str]:
    """A generated note's frontmatter and body."""
    doc = parse_document("digest.md", data)
    return doc.frontmatter, "\n".join(doc.lines[doc.body_start :])


def citations(root: Path, text: str) -> list[tuple[str, str, Source]]:
    """(section, bullet text, source) of every bullet of a digest (its whole text), each checked: it ends
    with a citation, the cited transcript exists and its cited line is the heading of the cited turn."""
    _, body = page(text.encode("utf-8"))
    out = []
    for title, lines in sections_of(body).items():
        for line in lines:
            if line == NONE:
                continue
            found = cited(line)
            assert found is not None, f"{title}: bullet without a citation: {line!r}"
            bullet, source = found
            assert source.path.startswith("logs/sessions/"), line
            target = root / source.path
            assert target.is_file(), f"{title}: cites a missing file: {line!r}"
            assert source.line is not None, line
            heading = target.read_text(encoding="utf-8").split("\n")[source.line - 1]
            match = _HEADING.match(heading)
            assert match is not None and match["id"] == source.label, (line, heading)
            out.append((title, bullet, source))
    return out


def tree_hashes(root: Path) -> dict[str, str]:
    """sha256 of every regular file under root, symlinks neither followed nor read."""
    out = {}
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in files + dirs:
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                out[rel] = "symlink -> " + os.readlink(path)
            elif path.is_file():
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out
