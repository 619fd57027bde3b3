"""Semantic writes: "remember this about X" → a claim event, its evidence, and X's page re-rendered.

The pipeline, in order: safety scan (a borderline injection score quarantines the write, as unsafe
content does with `soft`; the timeline marker is refused in any of its text); resolve the subject
through the entity registry (a decision gets its own page; an unknown subject with a `scope` gets a
new page in that family, otherwise it is rejected with the nearest candidates); build the claim
event (write adds, replace supersedes the entity's active claims of that kind, forget retires the
matching ones); replay the entity's events plus the new one to get its claims; render the page
from them (hand-written text kept); then write the immutable evidence artifact, the page and their
record in the write log (provenance.py) as one journaled operation.

Everything before the last step only reads, so a dry run shows exactly what a live write would do.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from dory.config import Settings
from dory.corpus.atomic import sha256_of
from dory.corpus.document import Document
from dory.corpus.journal import FileChange, Journal
from dory.errors import (
    AmbiguousSubject,
    CanonicalWriteRefused,
    NotFound,
    UnresolvedSubject,
)
from dory.memory import canonical, claims, frontmatter, provenance, safety, structure
from dory.memory.claims import ClaimEvent
from dory.memory.entities import FAMILIES, Entity, Registry, normalise_name, page_path, slugify
from dory.memory.exact import WritePlan, plan_quarantine, read_editable, set_fields
from dory.models import EntityRef, MemoryWriteRequest, MemoryWriteResponse

_EVENT_FOR_ACTION = {"write": "added", "replace": "replaced", "forget": "retired"}
_ACTION_DONE = {"write": "written", "replace": "replaced", "forget": "forgotten"}


@dataclass
class SemanticPlan:
    response: MemoryWriteResponse
    changes: list[FileChange]


class SemanticWriter:
    def __init__(
        self,
        settings: Settings,
        conn: sqlite3.Connection,
        journal: Journal,
        origin: provenance.Origin | None = None,
    ) -> None:
        self.settings = settings
        self.conn = conn
        self.journal = journal
        self.origin = origin or provenance.Origin()

    def write(self, req: MemoryWriteRequest) -> SemanticPlan:
        plan = self.plan(req)
        if not req.dry_run and plan.changes:
            written = provenance.Written("memory-write", plan.response.action, req.agent, req.source)
            log = provenance.record(self.settings.corpus, self.origin, written, plan.changes)
            plan.response.provenance = log.path
            self.journal.apply("memory-write", [*plan.changes, log], plan.response.model_dump(mode="json"))
        return plan

    def plan(self, req: MemoryWriteRequest) -> SemanticPlan:
        text = "\n".join(part for part in (req.subject, req.content, req.reason or "") if part)
        problems = safety.scan_content(text, self.settings.write.max_bytes) + structure.in_text(text)
        problem = safety.screen(problems, req.soft, self.settings.write.suspect_content)
        if problem is not None:
            return self._quarantine(req, f"{problem.code}: {problem.message}")
        try:
            entity, matched_by = self.resolve(req)
        except (UnresolvedSubject, AmbiguousSubject) as exc:
            if not req.soft:
                raise
            return self._quarantine(req, f"{exc.code}: {exc.message}")
        if not req.dry_run and not req.allow_canonical:
            raise CanonicalWriteRefused(
                f"{entity.path} is a canonical page: preview with --dry-run, queue it for review with "
                "`dory proposals create`, or pass --allow-canonical to write it now",
                path=entity.path,
            )
        return self._plan_for(req, entity, matched_by)

    # -- resolution --------------------------------------------------------------------------
    def resolve(self, req: MemoryWriteRequest) -> tuple[Entity, str]:
        registry = Registry.load(self.conn)
        if req.kind == "decision" and req.scope in (None, "decision"):
            return self._resolve_in(registry, req.subject, ("decision",), "decision")
        families = (req.scope,) if req.scope else tuple(f for f in FAMILIES if f != "decision")
        return self._resolve_in(registry, req.subject, families, req.scope)

    @staticmethod
    def _resolve_in(
        registry: Registry, subject: str, families: tuple[str, ...], new_family: str | None
    ) -> tuple[Entity, str]:
        found = registry.resolve(subject, families)
        if found.entity is not None:
            return found.entity, str(found.matched_by)
        refs = [_ref(e).model_dump() for e in found.candidates]
        if found.ambiguous:
            names = ", ".join(f"{r['id']} ({r['path']})" for r in refs)
            raise AmbiguousSubject(
                f"{subject!r} matches several entities: {names}; name one by its id or path",
                subject=subject,
                candidates=refs,
            )
        slug = slugify(subject)
        if new_family in ("person", "project", "concept", "decision") and slug:
            title = " ".join(subject.split())
            return Entity(f"{new_family}:{slug}", new_family, slug, page_path(new_family, slug), title), "new"
        hint = "; pass --scope person|project|concept to create a page for it" if slug else ""
        if refs:
            hint += "; did you mean " + ", ".join(f"{r['id']} ({r['path']})" for r in refs)
        raise UnresolvedSubject(f"no entity matches {subject!r}{hint}", subject=subject, candidates=refs)

    # -- the plan ----------------------------------------------------------------------------
    def _plan_for(self, req: MemoryWriteRequest, entity: Entity, matched_by: str) -> SemanticPlan:
        page_doc = self._page(entity.path)
        history = claims.events_for(self.conn, entity.id)
        active = [c for c in claims.replay(history) if c.status == "active" and c.kind == req.kind]
        response = MemoryWriteResponse(
            subject=req.subject,
            action=_ACTION_DONE[req.action],
            dry_run=req.dry_run,
            entity=_ref(entity),
            matched_by=matched_by,
            target_path=entity.path,
            previous_page_hash=page_doc.sha256 if page_doc else None,
        )
        statement = " ".join(req.content.split())
        if req.action == "write" and any(_same(c.statement, statement) for c in active):
            response.action = "unchanged"
            response.page_hash = response.previous_page_hash
            response.warnings.append("the same claim is already active; nothing was written")
            return SemanticPlan(response, [])
        event = self._event(req, entity, statement, active)
        page = self._render_page(entity, page_doc, [*history, event])
        artifact = artifact_bytes(event, entity, req.subject, req.source)
        response.claim_id, response.ended_claims = event.claim_id, list(event.ends)
        response.evidence_path, response.page_hash = event.path, sha256_of(page)
        response.files = [event.path, entity.path]
        response.preview = page.decode("utf-8") if req.dry_run else None
        before = page_doc.sha256 if page_doc else None
        return SemanticPlan(response, [FileChange(event.path, None, artifact), FileChange(entity.path, before, page)])

    def _event(self, req: MemoryWriteRequest, entity: Entity, statement: str, active: list[claims.Claim]) -> ClaimEvent:
        now = dt.datetime.now(dt.UTC)
        at = now.isoformat(timespec="microseconds").replace("+00:00", "Z")
        event_name = _EVENT_FOR_ACTION[req.action]
        ends: list[str] = []
        if req.action == "replace":
            ends = [c.claim_id for c in active]
        elif req.action == "forget":
            matching = [c.claim_id for c in active if _same(c.statement, statement)]
            ends = matching or [c.claim_id for c in active]
            if not ends:
                raise NotFound(f"no active {req.kind} claims about {entity.title} to forget", entity=entity.id)
        digest = hashlib.sha256(f"{entity.id}\n{req.kind}\n{statement}\n{at}".encode()).hexdigest()[:12]
        path = f"{claims.ARTIFACT_ROOT}{now:%Y/%m/%d}/{entity.slug[:60]}-{now:%H%M%S-%f}-{event_name}.md"
        return ClaimEvent(
            claim_id=f"clm-{digest}",
            entity=entity.id,
            kind=req.kind,
            event=event_name,
            statement=statement,
            at=at,
            ends=tuple(ends),
            reason=req.reason,
            agent=req.agent,
            path=path,
        )

    def _render_page(self, entity: Entity, doc: Document | None, events: list[ClaimEvent]) -> bytes:
        all_claims = claims.replay(events)
        if doc is None:
            return new_page_bytes(entity, events)
        page = canonical.parse_page("\n".join(doc.lines[doc.body_start :]))
        body = canonical.render_page(canonical.compile_page(page, entity.family, entity.slug, all_claims, events))
        updates = {"updated": events[-1].at[:10], "has_timeline": True}
        if doc.body_start == 0:
            fm = frontmatter.normalise({"title": doc.title} | updates, entity.path, doc.title)
            return frontmatter.render(fm, body)
        return set_fields(doc, updates, "\n" + body)

    def _page(self, rel: str) -> Document | None:
        if not (self.settings.corpus / rel).exists():
            return None
        return read_editable(self.settings.corpus, rel, self.settings.index.max_file_bytes)

    def _quarantine(self, req: MemoryWriteRequest, reason: str) -> SemanticPlan:
        extra = {
            "original_subject": req.subject,
            "original_kind": req.kind,
            "original_action": req.action,
            "agent": req.agent,
            "source": req.source,
        }
        plan: WritePlan = plan_quarantine(
            Path(self.settings.corpus), f"memory {req.subject}", req.content, reason, extra, req.dry_run
        )
        response = MemoryWriteResponse(
            subject=req.subject,
            action="quarantined",
            dry_run=req.dry_run,
            quarantine=plan.response.path,
            reason=reason,
            files=plan.response.files,
        )
        return SemanticPlan(response, plan.changes)


def artifact_bytes(
    event: ClaimEvent, entity: Entity, subject: str, source: str | None, evidence: str | None = None
) -> bytes:
    """The immutable evidence artifact of one claim event (the claim store is replayed from these).
    `evidence` is a link to the note the statement was read from (migrations), shown under it."""
    fm = {
        "title": f"Semantic {event.event}: {entity.title} ({event.kind})",
        "type": "source",
        "status": "done",
        "canonical": False,
        "source_kind": "semantic",
        **event.frontmatter(),
        "subject": subject,
        "entity_path": entity.path,
        "source": source,
        "created": event.at[:10],
    }
    body = event.statement + (f"\n\nReason: {event.reason}" if event.reason else "")
    body += f"\n\nEvidence: {evidence}" if evidence else ""
    return frontmatter.render({k: v for k, v in fm.items() if v is not None and v != []}, body)


def new_page_bytes(entity: Entity, events: list[ClaimEvent], aliases: tuple[str, ...] = ()) -> bytes:
    """A new canonical page for `entity`, compiled from its claim events."""
    all_claims = claims.replay(events)
    scaffold = canonical.scaffold(entity.family, entity.slug)
    body = canonical.render_page(canonical.compile_page(scaffold, entity.family, entity.slug, all_claims, events))
    fm = {
        "title": entity.title,
        "type": entity.family,
        "status": "active",
        "canonical": True,
        "source_kind": "canonical",
        "slug": entity.slug,
        "aliases": list(aliases) or None,
        "has_timeline": True,
        "created": events[-1].at[:10],
        "updated": events[-1].at[:10],
    }
    fm = {k: v for k, v in fm.items() if v is not None}
    return frontmatter.render(frontmatter.normalise(fm, entity.path), body)


def _same(a: str, b: str) -> bool:
    return normalise_name(a) == normalise_name(b)


def _ref(entity: Entity) -> EntityRef:
    return EntityRef(id=entity.id, family=entity.family, path=entity.path, title=entity.title)
