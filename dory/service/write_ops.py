"""Applying writer calls as the index's owner, each request id once.

A call already applied (its receipt exists) is answered from the receipt. Exact and semantic writes
record their receipt through the journal, at the same moment the files are final; applying a
proposal records the semantic write under `<id>:memory` first and its own receipt last, so a retry
after a crash in between marks the proposal applied without writing the memory twice.
"""

from __future__ import annotations

from typing import Any

from dory.config import Settings
from dory.memory.exact import ExactWriter
from dory.memory.proposals import ProposalStore
from dory.memory.provenance import Origin
from dory.memory.semantic import SemanticWriter
from dory.models import (
    MemoryWriteRequest,
    MemoryWriteResponse,
    Proposal,
    ProposalDecision,
    WriteRequest,
    WriteResponse,
)
from dory.service.owner import IndexOwner
from dory.service.writes import ExactWriteOp, IndexPathsOp, MemoryWriteOp, ProposalApplyOp, WriterCall

# The folders a semantic write resolves against (entity pages and evidence artifacts).
MEMORY_ROOTS = ["people", "projects", "concepts", "decisions", "core", "sources/semantic"]


class WriteRunner:
    def __init__(self, settings: Settings, owner: IndexOwner, surface: str = "api") -> None:
        self.settings = settings
        self.owner = owner
        self.surface = surface  # the surface the calls come through, for the write log

    def run(self, call: WriterCall) -> dict[str, Any]:
        op, rid = call.operation, call.request_id
        if isinstance(op, IndexPathsOp):  # indexing is idempotent by nature
            return self.owner.index_paths(op.request.paths).model_dump(mode="json")
        if call.chosen_id:
            self.owner.receipts().bind(rid, call.fingerprint())
        if isinstance(op, ExactWriteOp):
            return self.exact(op.request, rid).model_dump(mode="json")
        if isinstance(op, ProposalApplyOp) and (done := self.owner.receipts().get(rid)) is not None:
            return done
        # A semantic write first re-reads the pages and artifacts it resolves against, so one saved
        # a moment ago (before the watcher's debounce) counts.
        self.owner.index_paths(MEMORY_ROOTS)
        if isinstance(op, MemoryWriteOp):
            return self.memory(op.request, rid).model_dump(mode="json")
        assert isinstance(op, ProposalApplyOp)
        return self.apply_proposal(op.request, rid).model_dump(mode="json")

    # A write's receipt is recorded when its files are final, before they are indexed: a retry
    # answered from the receipt indexes them too (a no-op when they already are), so its answer also
    # names the generation that holds the write.

    def exact(self, req: WriteRequest, rid: str) -> WriteResponse:
        done = self.owner.receipts().get(rid)
        if done is not None:
            response = WriteResponse.model_validate(done)
        else:
            writer = ExactWriter(self.settings, self.owner.journal(rid), Origin(rid, self.surface))
            response = writer.write(req).response
        response.generation = self.owner.index_paths(response.files).generation
        response.indexed = response.action != "quarantined"  # quarantine is never indexed
        return response

    def semantic_writer(self, rid: str | None = None) -> SemanticWriter:
        conn = self.owner.resources.store().conn
        return SemanticWriter(self.settings, conn, self.owner.journal(rid), Origin(rid, self.surface))

    def memory(self, req: MemoryWriteRequest, rid: str) -> MemoryWriteResponse:
        done = self.owner.receipts().get(rid)
        if done is not None:
            response = MemoryWriteResponse.model_validate(done)
        else:
            response = self.semantic_writer(rid).write(req).response
        if response.files:
            response.generation = self.owner.index_paths(response.files).generation
            response.indexed = response.action != "quarantined"
        return response

    def apply_proposal(self, req: ProposalDecision, rid: str) -> Proposal:
        store = ProposalStore.of(self.settings)
        proposal = store.show(req.id)
        memory_rid = f"{rid}:memory"
        if self.owner.receipts().get(memory_rid) is None:
            store.check_fresh(proposal, lambda write: self.semantic_writer().plan(write).response)
        live = proposal.write.model_copy(update={"dry_run": False, "allow_canonical": True})
        applied = store.mark_applied(proposal, self.memory(live, memory_rid))
        self.owner.receipts().record(rid, "proposal_apply", applied.model_dump(mode="json"))
        return applied
