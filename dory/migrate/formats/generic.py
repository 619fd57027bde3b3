"""Any folder or file: markdown kept as written, other text formats turned into markdown evidence.

- `.md` / `.markdown`: copied byte for byte (re-encoded to UTF-8 when needed) to the same relative
  path under the destination folder.
- `.json`, `.jsonl`, `.yaml`/`.yml`, `.toml`, `.csv`, `.txt`: one markdown note each, the content as
  evidence (a table for CSV, pretty-printed JSON, the text as it is), with `source_kind: imported`
  and the source path in the frontmatter. Malformed JSON/YAML/TOML is kept as text, with a note.
- Attachments (images, PDFs, audio, office files): copied beside, unchanged.
- A file without an extension that holds text (README, LICENSE): evidence, as `.txt` would be.
- Anything else: an `unknown_format` problem; the rest goes on.
"""

from __future__ import annotations

import csv
import io
import json
import posixpath
import re
import tomllib
from collections.abc import Iterator

import yaml

from dory.memory.links import ATTACHMENTS
from dory.migrate.model import Item, ItemProblem, Output, ReadContext, SourceFile, SourceTreeLike, Yielded, digest_of
from dory.migrate.names import MAX_NAME_BYTES, safe_name, safe_path
from dory.migrate.text import NotText, decode, fence, note

MARKDOWN = ("md", "markdown")
EVIDENCE = ("json", "jsonl", "ndjson", "yaml", "yml", "toml", "csv", "tsv", "txt", "text", "log")
BINARY_ATTACHMENTS = ATTACHMENTS | {"pdf", "docx", "xlsx", "pptx", "odt", "zip", "mov", "mp4", "m4a", "ogg"}
MAX_EVIDENCE_BYTES = 2_000_000  # the indexer's default per-file limit: larger text would not be searchable
MAX_CSV_ROWS = 2000
_EXTENSION = re.compile(r"\.[A-Za-z0-9_+-]{1,16}")


class GenericReader:
    name = "generic"

    def detect(self, tree: SourceTreeLike) -> int:
        return 1

    def read(self, tree: SourceTreeLike, ctx: ReadContext) -> Iterator[Yielded]:
        for file in tree.files():
            yield read_file(file, ctx.into, ctx)


def target_path(into: str, rel: str, ext: str | None = None) -> str:
    """Where a source file lands: its relative path (each part made safe) under `into`, with its
    extension, or `ext` in its place. A name too long is cut before the extension, never through it."""
    parts = [part for part in rel.replace("!/", "/").split("/") if part not in ("", ".", "..")] or ["untitled"]
    stem, own = posixpath.splitext(parts[-1])
    if not _EXTENSION.fullmatch(own):  # `Dr. Who` has no extension `. Who`
        stem, own = parts[-1], ""
    suffix = own if ext is None else ext
    name = safe_name(stem, limit=MAX_NAME_BYTES - len(suffix.encode("utf-8"))) + suffix
    return posixpath.join(into, *([safe_path(parts[:-1])] if len(parts) > 1 else []), name)


def read_file(file: SourceFile, into: str, ctx: ReadContext) -> Yielded:
    """One file of a generic tree (other readers use it for the files their format does not own)."""
    try:
        data = file.read()
    except (OSError, ValueError) as exc:
        return ItemProblem(file.rel, "unreadable", str(exc))
    key = f"file:{file.rel}"
    ext = file.suffix
    if ext in MARKDOWN:
        return _markdown(file, data, into, key)
    if ext in EVIDENCE:
        return evidence(file, data, into, key, ctx)
    if ext == "" and b"\x00" not in data[:8192]:  # README, LICENSE, notes saved without an extension
        return evidence(file, data, into, key, ctx)
    if ext in BINARY_ATTACHMENTS:
        out = Output(target_path(into, file.rel), data, "attachment")
        return Item(key, "attachment", file.rel, digest_of(data), [out])
    return ItemProblem(file.rel, "unknown_format", f"no reader for .{ext or '(no extension)'} files; left out")


def _markdown(file: SourceFile, data: bytes, into: str, key: str) -> Yielded:
    try:
        text, how = decode(data)
    except NotText as exc:
        return ItemProblem(file.rel, "bad_encoding", str(exc))
    body = data if how is None and not data.startswith(b"\xef\xbb\xbf") else text.encode("utf-8")
    out = Output(target_path(into, file.rel, ".md"), body, "note")
    return Item(key, "note", file.rel, digest_of(data), [out], note=how or "")


def evidence(file: SourceFile, data: bytes, into: str, key: str, ctx: ReadContext) -> Yielded:
    """A non-markdown text file as a markdown note holding its content."""
    if len(data) > MAX_EVIDENCE_BYTES:
        return ItemProblem(file.rel, "file_too_large", f"{len(data)} bytes of text (limit {MAX_EVIDENCE_BYTES})")
    try:
        text, how = decode(data)
    except NotText as exc:
        return ItemProblem(file.rel, "bad_encoding", str(exc))
    body, problem = _evidence_body(file.suffix, text)
    notes = "; ".join(part for part in (how, problem) if part)
    fm = {
        "title": posixpath.basename(file.rel),
        "type": "reference",
        "status": "raw",
        "source_kind": "imported",
        "source": file.rel,
        "source_format": file.suffix or "text",
        "created": ctx.now[:10],
    }
    out = Output(
        target_path(into, file.rel, f".{file.suffix}.md" if file.suffix else ".md"), note(fm, body), "evidence"
    )
    return Item(key, "evidence", file.rel, digest_of(data), [out], note=notes)


def _evidence_body(ext: str, text: str) -> tuple[str, str | None]:
    """The body of an evidence note, and a problem when the content did not parse as its format."""
    try:
        if ext == "json":
            return fence(json.dumps(json.loads(text), indent=2, ensure_ascii=False), "json"), None
        if ext in ("yaml", "yml"):
            list(yaml.safe_load_all(text))
            return fence(text, "yaml"), None
        if ext == "toml":
            tomllib.loads(text)
            return fence(text, "toml"), None
        if ext in ("csv", "tsv"):
            return _table(text, "\t" if ext == "tsv" else ","), None
    except (ValueError, yaml.YAMLError, RecursionError, csv.Error) as exc:
        return fence(text), f"not valid {ext}, kept as text: {str(exc).splitlines()[0][:200]}"
    if ext in ("jsonl", "ndjson"):
        return fence(text, "json"), None
    return text, None


def _table(text: str, delimiter: str) -> str:
    rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    cells = [[_cell(value) for value in row] + [""] * (width - len(row)) for row in rows[: MAX_CSV_ROWS + 1]]
    lines = ["| " + " | ".join(cells[0]) + " |", "|" + " --- |" * width]
    lines += ["| " + " | ".join(row) + " |" for row in cells[1:]]
    if len(rows) > MAX_CSV_ROWS + 1:
        lines.append(f"\n({len(rows) - MAX_CSV_ROWS - 1} more rows in the source)")
    return "\n".join(lines)


def _cell(value: str) -> str:
    return " ".join(value.split()).replace("|", "\\|")
