"""Exact writes: create, append, replace and forget one note at a path the caller names.

Every write is planned first (validated, rendered, hashed: that is the dry run) and then applied
atomically; forget, which touches two files, goes through the journal. Rules that keep a person's
notes safe:

- create never overwrites; replace needs the hash of the version the caller read; append reads,
  merges and swaps only if nobody saved in between (else a conflict with the current hash);
- a note whose frontmatter cannot be parsed is never rewritten (`broken_frontmatter`);
- when the caller gives no frontmatter, the existing block is kept line for line (comments,
  quoting, key order) and only the fields Dory must change are edited in place;
- unsafe content is rejected with a specific code, or with `soft` quarantined for a person;
  content that only may be a prompt injection (a borderline score) is quarantined by default;
- content may not forge the timeline Dory owns on a page (structure.py: `section_marker`);
- every write that changes a file is recorded in the write log (provenance.py), in the same
  journaled operation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from dory.config import Settings
from dory.corpus.atomic import sha256_of
from dory.corpus.document import Document, ReadProblem, parse_document, read_regular
from dory.corpus.journal import FileChange, Journal
from dory.corpus.paths import QUARANTINE_DIR, IgnoreRules
from dory.errors import (
    AlreadyExists,
    BrokenFrontmatter,
    HashConflict,
    InvalidFrontmatter,
    NotFound,
    UnreadableFile,
    UsageError,
    WriteConflict,
)
from dory.memory import canonical, frontmatter, provenance, safety, structure
from dory.memory.entities import slugify
from dory.memory.write_paths import check_write_path
from dory.models import WriteRequest, WriteResponse

_DATED_BULLET = re.compile(r"^\s*- \d{4}-\d{2}-\d{2}:")
_TOP_KEY = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_\-]*)\s*:")
# What to do about a note Dory will not read before a write (a hard link's problem says it itself).
_HINTS = {"too_large": "; edit it in an editor", "not_regular_file": "; Dory reads only regular files"}


@dataclass
class WritePlan:
    response: WriteResponse
    changes: list[FileChange] = field(default_factory=list)


class ExactWriter:
    def __init__(self, settings: Settings, journal: Journal, origin: provenance.Origin | None = None) -> None:
        self.settings = settings
        self.root = settings.corpus
        self.journal = journal
        self.origin = origin or provenance.Origin()
        self.rules = IgnoreRules(settings.index.ignore)

    def write(self, req: WriteRequest) -> WritePlan:
        plan = self.plan(req)
        if not req.dry_run:
            self.apply(plan, req)
        return plan

    def apply(self, plan: WritePlan, req: WriteRequest) -> None:
        """The planned changes and their record in the write log, as one journaled operation."""
        changes = list(plan.changes)
        if changes:
            written = provenance.Written(req.kind, plan.response.action, req.agent, req.source)
            log = provenance.record(self.root, self.origin, written, changes)
            plan.response.provenance = log.path
            changes.append(log)
        self.journal.apply(req.kind, changes, plan.response.model_dump(mode="json"))

    # -- planning ----------------------------------------------------------------------------
    def plan(self, req: WriteRequest) -> WritePlan:
        rel, _ = check_write_path(self.root, req.path, self.rules)
        held = self._screen(rel, req, safety.scan_content(_scanned_text(req), self.settings.write.max_bytes))
        if held is not None:
            return held
        if req.kind == "create":
            return self._create(rel, req)
        if req.kind == "append":
            return self._append(rel, req)
        if req.kind == "replace":
            return self._replace(rel, req)
        return self._forget(rel, req)

    def _create(self, rel: str, req: WriteRequest) -> WritePlan:
        if (self.root / rel).exists():
            current = read_note(self.root, rel, self.settings.index.max_file_bytes)
            raise AlreadyExists(f"{rel} already exists; use append or replace", path=rel, current_hash=current.sha256)
        fm, body = _given(rel, req)
        held = self._screen(rel, req, structure.in_write(rel, "create", body, None))
        if held is not None:
            return held
        data = frontmatter.render(frontmatter.normalise(fm, rel, _heading(body)), body)
        return self._single(rel, "created", None, data, req)

    def _append(self, rel: str, req: WriteRequest) -> WritePlan:
        if not (self.root / rel).exists():
            return self._create(rel, req.model_copy(update={"kind": "create"}))
        doc = self._editable(rel)
        given_fm, text = _given(rel, req)
        held = self._screen(rel, req, structure.in_write(rel, "append", text, None))
        if held is not None:
            return held
        body = canonical.append_text(_body(doc), text)
        only_timeline = canonical.TIMELINE_MARKER in body and all(
            _DATED_BULLET.match(line) for line in text.splitlines() if line.strip()
        )
        updates = {} if only_timeline else {"updated": frontmatter.today()}
        data = self._with_frontmatter(doc, given_fm, updates, body)
        return self._single(rel, "appended", doc.sha256, data, req)

    def _replace(self, rel: str, req: WriteRequest) -> WritePlan:
        if not req.expected_hash:
            raise UsageError("replace needs expected_hash: the hash of the version you read (see `dory get`)")
        data = read_bytes(self.root, rel, self.settings.index.max_file_bytes)
        # The hash decides first: a file caught half-saved by an editor is a conflict, not an error.
        if sha256_of(data) != req.expected_hash:
            raise HashConflict(
                f"{rel} changed since it was read: expected {req.expected_hash}, found {sha256_of(data)}",
                path=rel,
                current_hash=sha256_of(data),
                expected_hash=req.expected_hash,
            )
        doc = self._editable(rel, data)
        given_fm, body = _given(rel, req)
        held = self._screen(rel, req, structure.in_write(rel, "replace", body, _body(doc)))
        if held is not None:
            return held
        body = "\n" + body.strip("\n") if doc.body_start else body
        data = self._with_frontmatter(doc, given_fm, {"updated": frontmatter.today()}, body)
        return self._single(rel, "replaced", doc.sha256, data, req)

    def _forget(self, rel: str, req: WriteRequest) -> WritePlan:
        if not req.reason or not req.reason.strip():
            raise UsageError("forget needs a reason (it is kept in the tombstone)")
        if not (self.root / rel).exists():
            raise NotFound(f"no such file in the corpus: {rel}", path=rel)
        doc = self._editable(rel)
        if req.expected_hash and doc.sha256 != req.expected_hash:
            raise HashConflict(
                f"{rel} changed since it was read", path=rel, current_hash=doc.sha256, expected_hash=req.expected_hash
            )
        if doc.frontmatter.get("status") == "superseded" or doc.frontmatter.get("superseded_by"):
            raise WriteConflict(f"{rel} is already forgotten (superseded)", path=rel, current_hash=doc.sha256)
        stone_rel = tombstone_path(rel)
        if (self.root / stone_rel).exists():
            raise AlreadyExists(f"{stone_rel} already exists", path=stone_rel)
        updates = {
            "status": "superseded",
            "canonical": False,
            "superseded_by": PurePosixPath(stone_rel).name,
            "updated": frontmatter.today(),
        }
        page = self._with_frontmatter(doc, None, updates, _body(doc), force_block=True)
        stone = tombstone(doc, rel, req.reason.strip(), req.agent)
        plan = self._single(rel, "forgotten", doc.sha256, page, req)
        plan.changes.insert(0, FileChange(stone_rel, None, stone))
        plan.response.files = [stone_rel, rel]
        plan.response.tombstone = stone_rel
        return plan

    def _screen(self, rel: str, req: WriteRequest, problems: list[safety.Problem]) -> WritePlan | None:
        """None when the write goes ahead; else the plan that quarantines it (or the error is raised)."""
        problem = safety.screen(problems, req.soft, self.settings.write.suspect_content)
        return None if problem is None else self._quarantine(rel, req, problem)

    def _quarantine(self, rel: str, req: WriteRequest, problem: safety.Problem) -> WritePlan:
        extra = {
            "original_target": rel,
            "original_kind": req.kind,
            "agent": req.agent,
            "source": req.source,
            "original_frontmatter": req.frontmatter,
        }
        return plan_quarantine(
            self.settings.corpus, rel, req.content, f"{problem.code}: {problem.message}", extra, req.dry_run
        )

    # -- helpers -----------------------------------------------------------------------------
    def _editable(self, rel: str, data: bytes | None = None) -> Document:
        return read_editable(self.root, rel, self.settings.index.max_file_bytes, data)

    def _with_frontmatter(
        self, doc: Document, given: dict[str, Any] | None, updates: dict[str, Any], body: str, force_block: bool = False
    ) -> bytes:
        """The note with `body`: the caller's frontmatter merged and normalised when given, else
        the existing block edited in place."""
        if given:
            merged = frontmatter.merge(doc.frontmatter, given) | updates
            return frontmatter.render(frontmatter.normalise(merged, doc.path, doc.title), body)
        if doc.body_start == 0 and not force_block:
            nl = newline_of(doc)
            return (body.rstrip("\r\n") + nl).encode("utf-8")
        if doc.body_start == 0:
            fm = frontmatter.normalise({"title": doc.title} | updates, doc.path, doc.title)
            return frontmatter.render(fm, body)
        return set_fields(doc, updates, body)

    def _single(self, rel: str, action: str, previous: str | None, data: bytes, req: WriteRequest) -> WritePlan:
        response = WriteResponse(
            path=rel,
            action=action,
            dry_run=req.dry_run,
            hash=sha256_of(data),
            previous_hash=previous,
            bytes=len(data),
            files=[rel],
            preview=data.decode("utf-8") if req.dry_run else None,
        )
        return WritePlan(response, [FileChange(rel, previous, data)])


def read_bytes(root: Path, rel: str, max_bytes: int) -> bytes:
    """A note's bytes, read once: its hash and its parse must describe the same version."""
    try:
        return read_regular(root / rel, max_bytes)
    except FileNotFoundError as exc:
        raise NotFound(f"no such file in the corpus: {rel}", path=rel) from exc
    except ReadProblem as problem:
        raise UnreadableFile(
            f"{rel}: {problem.detail}{_HINTS.get(problem.reason, '')}", path=rel, reason=problem.reason
        ) from problem
    except OSError as exc:
        raise UnreadableFile(f"{rel}: {exc.strerror or exc}", path=rel, reason="unreadable") from exc


def read_note(root: Path, rel: str, max_bytes: int, data: bytes | None = None) -> Document:
    try:
        return parse_document(rel, read_bytes(root, rel, max_bytes) if data is None else data)
    except ReadProblem as problem:
        raise UnreadableFile(
            f"{rel}: {problem.detail}; fix or replace it in an editor", path=rel, reason=problem.reason
        ) from problem


def read_editable(root: Path, rel: str, max_bytes: int, data: bytes | None = None) -> Document:
    """A note Dory may rewrite: readable, and with frontmatter it could parse (else it is never touched)."""
    doc = read_note(root, rel, max_bytes, data)
    if doc.frontmatter_error:
        raise BrokenFrontmatter(
            f"{rel} has broken frontmatter ({doc.frontmatter_error}); Dory does not "
            "rewrite it: fix it in an editor first",
            path=rel,
            current_hash=doc.sha256,
        )
    return doc


def plan_quarantine(
    root: Path, label: str, content: str, reason: str, extra: dict[str, Any], dry_run: bool
) -> WritePlan:
    """Keep unsafe or unplaceable content for a person under inbox/quarantine/ (never indexed, never
    served to agents). The same content for the same target is one file, however often it comes."""
    digest = sha256_of(f"{label}\n{content}".encode("utf-8", "surrogatepass")).removeprefix("sha256:")[:12]
    target = f"{QUARANTINE_DIR}/{slugify(label.removesuffix('.md')) or 'note'}-{digest}.md"
    fm = {
        "title": f"Quarantine: {label}",
        "type": "capture",
        "status": "raw",
        "canonical": False,
        "source_kind": "generated",
        "quarantined_at": frontmatter.today(),
        "quarantine_reason": reason,
    }
    fm |= {key: value for key, value in extra.items() if value}
    data = frontmatter.render(fm, _fenced(content))
    plan = WritePlan(
        WriteResponse(
            path=target,
            action="quarantined",
            dry_run=dry_run,
            hash=sha256_of(data),
            bytes=len(data),
            files=[target],
            reason=reason,
            quarantine=target,
            preview=data.decode() if dry_run else None,
        )
    )
    if not (root / target).exists():
        plan.changes.append(FileChange(target, None, data))
    return plan


def tombstone_path(rel: str) -> str:
    return rel.removesuffix(".md") + ".tombstone.md"


def tombstone(doc: Document, rel: str, reason: str, agent: str | None) -> bytes:
    fm = {
        "title": f"Tombstone for {doc.title}",
        "type": frontmatter.type_for_path(rel),
        "status": "superseded",
        "canonical": False,
        "source_kind": "generated",
        "forgotten_path": rel,
        "forgotten_hash": doc.sha256,
        "reason": reason,
        "created": frontmatter.today(),
    }
    if agent:
        fm["agent"] = agent
    return frontmatter.render(fm, f"# Tombstone for {doc.title}\n\n{reason}")


def newline_of(doc: Document) -> str:
    """The note's own line ending: a CRLF note stays CRLF when Dory edits it."""
    return "\r\n" if "\r\n" in doc.text else "\n"


def set_fields(doc: Document, updates: dict[str, Any], body: str) -> bytes:
    """The note with `updates` made to its frontmatter block line by line (every other line, comment
    and key order as it was) followed by `body` as given (in the note's line endings)."""
    nl = newline_of(doc)
    block = doc.lines[1 : doc.body_start - 1] if doc.body_start else []  # no block yet: one is added
    for key, value in updates.items():
        line = frontmatter.render({key: value}, "").decode().split("\n")[1]
        start = next((i for i, text in enumerate(block) if (m := _TOP_KEY.match(text)) and m.group(1) == key), None)
        if start is None:
            block.append(line)
            continue
        end = start + 1
        while end < len(block) and (block[end][:1] in (" ", "\t", "-") or not block[end].strip()):
            end += 1
        block[start:end] = [line]
    text = f"---{nl}" + "".join(f"{line}{nl}" for line in block) + f"---{nl}"
    body = body.replace("\r\n", "\n").rstrip("\n")
    text += body.replace("\n", nl) + nl if body.strip() else ""
    return text.encode("utf-8")


def _given(rel: str, req: WriteRequest) -> tuple[dict[str, Any], str]:
    """The caller's frontmatter (an embedded block and/or the `frontmatter` field) and body."""
    fm: dict[str, Any] = {}
    body = req.content
    if body.startswith("---"):
        doc = parse_document(rel, body.encode("utf-8"))
        if doc.frontmatter_error:
            raise InvalidFrontmatter(f"the frontmatter in the content is broken: {doc.frontmatter_error}")
        if doc.body_start:
            fm, body = doc.frontmatter, "\n".join(doc.lines[doc.body_start :])
    return fm | (req.frontmatter or {}), body


def _body(doc: Document) -> str:
    """The note after its frontmatter, blank lines and line endings as they are."""
    return newline_of(doc).join(doc.lines[doc.body_start :])


def _heading(body: str) -> str | None:
    for line in body.splitlines():
        if line.startswith("# "):
            return line[2:].strip() or None
    return None


def _scanned_text(req: WriteRequest) -> str:
    """Everything of the request that ends up in a note: content, frontmatter keys and values at
    any depth, the reason and the agent's name."""
    parts = [req.content, *_strings(req.frontmatter or {}), req.reason or "", req.agent or ""]
    return "\n".join(part for part in parts if part)


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [text for key, item in value.items() for text in (str(key), *_strings(item))]
    if isinstance(value, list | tuple):
        return [text for item in value for text in _strings(item)]
    return [] if value is None else [str(value)]


def _fenced(content: str) -> str:
    """Quarantined content is kept for a person to review, inside a fence so no viewer renders it;
    control characters and unpaired surrogates are written as escapes so the file stays text."""
    content = content.encode("utf-8", "backslashreplace").decode("utf-8")
    content = re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", lambda m: f"\\x{ord(m.group()):02x}", content)
    fence = "`" * max(3, max((len(m) for m in re.findall(r"`+", content)), default=0) + 1)
    return f"{fence}text\n{content}\n{fence}"
