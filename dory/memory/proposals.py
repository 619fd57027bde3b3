"""Proposals: semantic writes waiting for a person (or a trusted agent) to apply or reject them.

A proposal is a JSON file: `inbox/proposed/<id>.json` while it waits, moved to `inbox/applied/` or
`inbox/rejected/` when decided. Creating one runs the semantic write as a dry run and stores the
plan and the target page's hash; applying re-runs the dry run and refuses as stale when the
target page, the entity or the page's content moved on since, so nobody applies a plan made
against a page that no longer exists in that form. The same write from the same source is one
proposal, whatever folder it has reached.
"""

from __future__ import annotations

import builtins
import datetime as dt
import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path

from dory.config import Settings
from dory.corpus.atomic import file_hash, write_atomic
from dory.corpus.roots import output_root
from dory.corpus.shorten import shorten_slug
from dory.errors import NotFound, StaleProposal, UsageError, WriteConflict
from dory.memory.entities import slugify
from dory.models import (
    MemoryWriteRequest,
    MemoryWriteResponse,
    Proposal,
    ProposalCreateRequest,
    ProposalCreateResponse,
    ProposalListResponse,
    ProposalStatus,
)

FOLDERS: dict[ProposalStatus, str] = {
    "proposed": "inbox/proposed",
    "applied": "inbox/applied",
    "rejected": "inbox/rejected",
}
# A crash while moving may leave a copy in proposed/ too: the decided one counts.
_LOOKUP_ORDER: tuple[ProposalStatus, ...] = ("applied", "rejected", "proposed")
_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,119}$")
Planner = Callable[[MemoryWriteRequest], MemoryWriteResponse]


def digest_of(req: MemoryWriteRequest) -> str:
    key = "\n".join(
        [req.source or "", " ".join(req.subject.split()).lower(), req.kind, req.action, " ".join(req.content.split())]
    )
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


class ProposalStore:
    def __init__(self, corpus: Path, folders: Path) -> None:
        self.corpus = corpus  # the notes a proposal changes (their hashes tell a stale proposal)
        self.folders = folders  # where inbox/proposed, applied and rejected are (Dory's output)

    @classmethod
    def of(cls, settings: Settings) -> ProposalStore:
        """The corpus's proposals, in its output (refused with ReadOnlyCorpus when it has none)."""
        return cls(settings.corpus, output_root(settings, "proposals"))

    def create(self, req: ProposalCreateRequest, plan: Planner) -> ProposalCreateResponse:
        write = req.write.model_copy(update={"dry_run": True, "allow_canonical": False, "soft": False})
        digest = digest_of(write)
        existing = self._find_digest(digest)
        if existing is not None:
            return ProposalCreateResponse(proposal=existing, created=False)
        dry = plan(write)
        now = dt.datetime.now(dt.UTC)
        if req.id:
            proposal_id = _check_id(slugify(req.id))
            if self._path_of(proposal_id) is not None:
                raise WriteConflict(f"a proposal with id {proposal_id} already exists", id=proposal_id)
        else:
            proposal_id = self._free_id(f"{now:%Y%m%d-%H%M%S}-{shorten_slug(slugify(write.subject), 40)}-{digest[:8]}")
        target = self.corpus / str(dry.target_path) if dry.target_path else None
        proposal = Proposal(
            id=proposal_id,
            status="proposed",
            created_at=now.isoformat(timespec="seconds").replace("+00:00", "Z"),
            digest=digest,
            write=write,
            plan=dry,
            target_hash=file_hash(target) if target else None,
            risk={
                "canonical_target": True,
                "new_page": dry.matched_by == "new",
                "supersedes_claims": write.action == "replace" and bool(dry.ended_claims),
                "retires_claims": write.action == "forget",
                "unchanged": dry.action == "unchanged",
                # applying it would quarantine it (a borderline injection score): review the reason
                "quarantined": dry.action == "quarantined",
            },
        )
        self._save(proposal)
        return ProposalCreateResponse(proposal=proposal, created=True)

    def _free_id(self, base: str) -> str:
        """`base`, or `base-2`, `base-3`… when a proposal re-created after going stale takes it."""
        candidate, n = base, 1
        while self._path_of(candidate) is not None:
            n += 1
            candidate = f"{base}-{n}"
        return candidate

    def list(self, status: ProposalStatus | None = None) -> ProposalListResponse:
        warnings: list[str] = []
        found = [p for s in FOLDERS if status in (None, s) for p in self._load_all(s, warnings)]
        counts = {s: sum(1 for _ in self._files(s)) for s in FOLDERS}
        return ProposalListResponse(
            proposals=sorted(found, key=lambda p: (p.created_at, p.id)), counts=counts, warnings=warnings
        )

    def show(self, proposal_id: str) -> Proposal:
        path = self._path_of(_check_id(proposal_id))
        if path is None:
            raise NotFound(f"no proposal {proposal_id}", id=proposal_id)
        return _load(path)

    def check_fresh(self, proposal: Proposal, plan: Planner) -> MemoryWriteResponse:
        """Re-run the dry run; refuse when the target, the entity or the page moved on."""
        if proposal.status != "proposed":
            raise WriteConflict(f"proposal {proposal.id} is already {proposal.status}", id=proposal.id)
        dry = plan(proposal.write)
        old = proposal.plan
        changed = [
            what
            for what, now, then in (
                ("target page", dry.target_path, old.target_path),
                ("subject", dry.entity.id if dry.entity else None, old.entity.id if old.entity else None),
                (
                    "page content",
                    file_hash(self.corpus / dry.target_path) if dry.target_path else None,
                    proposal.target_hash,
                ),
            )
            if now != then
        ]
        if changed:
            self._save(proposal.model_copy(update={"stale_at": _now()}))
            raise StaleProposal(
                f"proposal {proposal.id} is stale: the {', '.join(changed)} changed since it was "
                "made; reject it and create it again",
                id=proposal.id,
                changed=changed,
            )
        return dry

    def mark_applied(self, proposal: Proposal, result: MemoryWriteResponse) -> Proposal:
        done = proposal.model_copy(update={"status": "applied", "applied_at": _now(), "result": result})
        self._move(proposal, done)
        return done

    def reject(self, proposal_id: str, reason: str | None) -> Proposal:
        proposal = self.show(proposal_id)
        if proposal.status != "proposed":
            raise WriteConflict(f"proposal {proposal.id} is already {proposal.status}", id=proposal.id)
        done = proposal.model_copy(update={"status": "rejected", "rejected_at": _now(), "rejected_reason": reason})
        self._move(proposal, done)
        return done

    # -- files -------------------------------------------------------------------------------
    def _files(self, status: ProposalStatus) -> builtins.list[Path]:
        folder = self.folders / FOLDERS[status]
        return sorted(folder.glob("*.json")) if folder.is_dir() else []

    def _load_all(self, status: ProposalStatus, warnings: builtins.list[str] | None = None) -> builtins.list[Proposal]:
        """Every readable proposal in one folder; an unreadable file is reported, never fatal."""
        found = []
        for path in self._files(status):
            try:
                found.append(_load(path))
            except UsageError as exc:
                if warnings is not None:
                    warnings.append(exc.message)
        return found

    def _path_of(self, proposal_id: str) -> Path | None:
        for status in _LOOKUP_ORDER:
            path = self.folders / FOLDERS[status] / f"{proposal_id}.json"
            if path.exists():
                return path
        return None

    def _find_digest(self, digest: str) -> Proposal | None:
        """The proposal already made for this write, if any. One rejected because it had gone
        stale does not count: its write may be proposed again against the page as it is now."""
        for status in _LOOKUP_ORDER:
            for proposal in self._load_all(status):
                if proposal.digest == digest and not (status == "rejected" and proposal.stale_at):
                    return proposal
        return None

    def _save(self, proposal: Proposal) -> None:
        path = self.folders / FOLDERS[proposal.status] / f"{proposal.id}.json"
        write_atomic(path, (proposal.model_dump_json(indent=2) + "\n").encode("utf-8"))

    def _move(self, old: Proposal, new: Proposal) -> None:
        self._save(new)
        (self.folders / FOLDERS[old.status] / f"{old.id}.json").unlink(missing_ok=True)


def _load(path: Path) -> Proposal:
    try:
        return Proposal.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path.name} is not a readable proposal: {exc}") from exc


def _check_id(proposal_id: str) -> str:
    if not _ID.match(proposal_id):
        raise UsageError(f"not a proposal id: {proposal_id!r}")
    return proposal_id


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
