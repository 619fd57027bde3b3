"""Agent session logs in the JSON-lines formats the session importers read (Claude Code, Codex, generic
`{"role", "content"}` lines): one session transcript per session, in the session plane.

A `.jsonl` / `.ndjson` file is a session log when `dory.sessions.importers.detect_format` names Claude
Code or Codex, or when its first lines, read as generic JSONL, give a session with fewer bad lines
than good ones (so an MCP memory graph or a mem0 dump, also JSON lines, is not taken for one). The
tree is this format when every sampled JSON-lines file is a session log and they are at least half
its files. Other files of the tree go through the generic reader into `--into`.

Each file is parsed by `parse_source` (cleaning, secret redaction, stable ids; the agent is the
harness's, `unknown` for generic lines) with device `imported`, rendered by `render_session` at
`session_path`. Status is `done` (a log being migrated is not running). Item key
`session:<agent>:<session id>`: the same log migrated twice creates nothing the second time. The
importer's line problems become `bad_line` problems (`file:line`); a file without a session gives
`empty_session`.
"""

from __future__ import annotations

from collections.abc import Iterator

from dory.migrate.formats.chat_export import session_digest
from dory.migrate.formats.generic import read_file
from dory.migrate.model import Item, ItemProblem, Output, ReadContext, SourceFile, SourceTreeLike, Yielded
from dory.sessions.importers import detect_format, parse_source
from dory.sessions.transcript import render_session, session_path

DEVICE = "imported"
SUFFIXES = ("jsonl", "ndjson")
SAMPLED = 20  # JSON-lines files looked into by detect
SNIFF_BYTES = 64 * 1024


class SessionsJsonlReader:
    """Agent session logs (Claude Code, Codex, generic JSON lines), one session each."""

    name = "sessions-jsonl"

    def detect(self, tree: SourceTreeLike) -> int:
        files = list(tree.files())
        logs = [file for file in files if file.suffix in SUFFIXES]
        if not logs or len(logs) * 2 < len(files):
            return 0
        for file in logs[:SAMPLED]:
            try:
                if not is_session_log(file.read(), file.rel):
                    return 0
            except (OSError, ValueError):
                return 0
        return 15

    def read(self, tree: SourceTreeLike, ctx: ReadContext) -> Iterator[Yielded]:
        for file in tree.files():
            if file.suffix not in SUFFIXES:
                yield read_file(file, ctx.into, ctx)
                continue
            try:
                data = file.read()
            except (OSError, ValueError) as exc:
                yield ItemProblem(file.rel, "unreadable", str(exc))
                continue
            if is_session_log(data, file.rel):
                yield from _sessions(file, data)
            else:
                yield read_file(file, ctx.into, ctx)


def is_session_log(data: bytes, rel: str) -> bool:
    fmt = detect_format(data, rel)
    if fmt in ("claude-code", "codex"):
        return True
    if fmt != "jsonl":
        return False
    head = data[:SNIFF_BYTES]
    if len(data) > SNIFF_BYTES:
        head = head[: head.rfind(b"\n") + 1] or head  # whole lines only, so no line looks cut
    result = parse_source(head, "jsonl", source_path=rel)
    lines = sum(1 for line in head.split(b"\n") if line.strip())
    bad = sum(1 for problem in result.problems if problem.line > 0)
    return bool(result.sessions) and bad * 2 < lines


def _sessions(file: SourceFile, data: bytes) -> Iterator[Yielded]:
    result = parse_source(data, "auto", source_path=file.rel, device=DEVICE)
    for problem in result.problems:
        if problem.line > 0:
            yield ItemProblem(f"{file.rel}:{problem.line}", "bad_line", problem.message)
        else:
            yield ItemProblem(file.rel, "empty_session", problem.message)
    for session in result.sessions:
        session.status = "done"
        out = Output(session_path(session), render_session(session), "session")
        key = f"session:{session.agent}:{session.session_id}"
        note = f"{result.redactions} secrets redacted in {file.rel}" if result.redactions else ""
        # The digest is the session's: one session of a file changing does not re-import the others.
        yield Item(key, "session", f"{file.rel}#{session.session_id}", session_digest(session), [out], note=note)
