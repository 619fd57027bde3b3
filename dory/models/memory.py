"""Semantic memory writes (subject, claim, entity page) and the proposals that queue them for review."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from dory.models.common import MAX_REQUEST_CHARS, _Model

ClaimKind = Literal["fact", "preference", "state", "decision", "note"]
Family = Literal["person", "project", "concept", "decision", "core"]


class EntityRef(_Model):
    id: str
    family: str
    path: str
    title: str


class MemoryWriteRequest(_Model):
    subject: str = Field(..., min_length=1, max_length=300, description="who or what: a name, slug, alias or id")
    content: str = Field(..., min_length=1, max_length=MAX_REQUEST_CHARS, description="the statement")
    kind: ClaimKind = "fact"
    action: Literal["write", "replace", "forget"] = "write"
    scope: Family | None = Field(None, description="the family to look in; a new page is made there if none matches")
    reason: str | None = Field(None, max_length=2000)
    allow_canonical: bool = Field(False, description="allow a live write into a canonical page")
    dry_run: bool = False
    soft: bool = Field(False, description="quarantine instead of failing on unsafe content or an unknown subject")
    agent: str | None = Field(None, max_length=200)
    source: str | None = Field(None, max_length=4096, description="where the statement came from (a note or session)")


class MemoryWriteResponse(_Model):
    subject: str
    action: Literal["written", "replaced", "forgotten", "unchanged", "quarantined"]
    dry_run: bool
    entity: EntityRef | None = None
    matched_by: str | None = Field(None, description="id, slug, title, alias, or new (a page is created)")
    target_path: str | None = None
    page_hash: str | None = Field(None, description="the page's hash after the write")
    previous_page_hash: str | None = None
    evidence_path: str | None = None
    claim_id: str | None = None
    ended_claims: list[str] = Field(default_factory=list, description="claims superseded or retired")
    files: list[str] = Field(default_factory=list)
    indexed: bool = False
    generation: int | None = Field(None, description="the index generation that holds this write (None: dry run)")
    preview: str | None = Field(None, description="dry run: the page as it would be rendered")
    quarantine: str | None = None
    reason: str | None = None
    provenance: str | None = Field(None, description="the write log that records who wrote this (logs/writes/)")
    warnings: list[str] = Field(default_factory=list)


ProposalStatus = Literal["proposed", "applied", "rejected"]


class ProposalCreateRequest(_Model):
    write: MemoryWriteRequest
    id: str | None = Field(None, max_length=120, description="an explicit id (slugified); default from the content")


class Proposal(_Model):
    id: str
    status: ProposalStatus
    created_at: str
    digest: str = Field(description="hash of source + subject + kind + action + content: the idempotency key")
    write: MemoryWriteRequest
    plan: MemoryWriteResponse = Field(description="the dry run made when the proposal was created")
    target_hash: str | None = Field(None, description="the target page's hash at creation (None: not yet created)")
    risk: dict[str, bool] = Field(default_factory=dict)
    applied_at: str | None = None
    result: MemoryWriteResponse | None = None
    rejected_at: str | None = None
    rejected_reason: str | None = None
    stale_at: str | None = Field(None, description="when an apply found it stale (it may then be created again)")


class ProposalCreateResponse(_Model):
    proposal: Proposal
    created: bool = Field(description="False when the same proposal already existed")


class ProposalListRequest(_Model):
    status: ProposalStatus | None = Field(None, description="only proposals with this status (default: all)")


class ProposalListResponse(_Model):
    proposals: list[Proposal]
    counts: dict[str, int]
    warnings: list[str] = Field(default_factory=list, description="proposal files that could not be read")


class ProposalDecision(_Model):
    id: str = Field(..., min_length=1, max_length=200)
    reason: str | None = Field(None, max_length=2000)
