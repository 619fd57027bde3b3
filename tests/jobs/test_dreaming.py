"""Dreaming (dory/jobs/dreaming.py), run through the real service: a daily digest's decision and preference
become proposals in inbox/proposed/ citing the session turn they came from, each on its page (the decision
named by its clause; the user's preference on core/user.md only once they said it in another session too;
a project's fact on the project's page; what a named speaker says on that person's page), and every gate
stops what it should (a turn that no longer says it, a claim already active, a deleted session, a forgotten
claim, a statement about the user said once);
runs are idempotent, a rejected proposal never comes back, dry runs write nothing. Recall promotion
proposes the note many distinct queries keep finding, never one query repeated, a canonical page or a
quarantined note.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.digest_corpus import ingest, new_corpus, rec, turns

from dory.config import load_settings
from dory.jobs import digest_daily
from dory.memory import claims
from dory.models import (
    JobRun,
    JobRunRequest,
    MemoryWriteRequest,
    Proposal,
    ProposalDecision,
    ReindexRequest,
    SearchHit,
    SearchRequest,
    SessionListRequest,
    SessionUpdateRequest,
)
from dory.search.recall_log import RecallLog
from dory.service import DoryService

DAY = "2026-11-18"
EARLIER = "2026-11-02"  # a day nobody digests: the preference was said then too
DIGEST = f"digests/daily/{DAY}.md"
PERIOD = "2026-11-20"
DECISION = "We decided to use SQLite FTS5 because it is fast."
PREFERENCE = "I prefer short answers."
RUST = "knowledge/rust-notes.md"
RUST_NOTE = (
    "---\ntitle: Rust notes\n---\n\n# Rust notes\n\n## Ownership\n\n"
    "The borrow checker enforces that a value has exactly one owner and references never outlive it.\n"
)
TOKIO = "concepts/tokio-runtime.md"
TOKIO_NOTE = (
    "---\ntitle: Tokio runtime\ntype: concept\n---\n\n# Tokio runtime\n\n"
    "The tokio executor schedules async tasks across a pool of worker threads.\n"
)
NOTHING = f"dream produced nothing for {PERIOD}"


@dataclass
class Dreamer:
    root: Path
    svc: DoryService
    transcript: str

    def dream(self, **fields: Any) -> JobRun:
        return self.svc.run_job(JobRunRequest(job="dream", period=PERIOD, **fields))

    def line_of(self, index: int) -> int:
        line = turns(self.root, self.transcript)[index].start_line
        assert line is not None
        return line

    def proposed(self) -> list[Proposal]:
        return self.svc.proposal_list("proposed").proposals

    def files(self, folder: str = "inbox/proposed") -> list[str]:
        return sorted(p.name for p in (self.root / folder).glob("*.json"))

    def by_content(self) -> dict[str, Proposal]:
        return {p.write.content: p for p in self.proposed()}


def first_line(d: Dreamer, rel: str) -> int:
    line = turns(d.root, rel)[0].start_line
    assert line is not None
    return line


@pytest.fixture(autouse=True)
def utc_days(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(digest_daily, "local_zone", lambda: dt.UTC)


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[Dreamer]:
    """A template corpus (core/user.md exists) with two notes, indexed, and two sessions: an older one where
    the user said their preference first, and the day's session; no digest yet."""
    root = new_corpus(tmp_path / "corpus")
    (root / RUST).write_text(RUST_NOTE, encoding="utf-8")
    (root / TOKIO).write_text(TOKIO_NOTE, encoding="utf-8")
    svc = DoryService(load_settings(root, {"embedder.backend": "none", "digest.quiet_minutes": 0}, env={}))
    try:
        svc.reindex(ReindexRequest())
        ingest(svc, [rec("user", f"{EARLIER}T09:00:00Z", "I prefer short answers, please.", session_id="s-0")])
        [rel] = ingest(
            svc,
            [
                rec(
                    "user",
                    f"{DAY}T10:00:00Z",
                    "Which search engine should the notes use?",
                    session_id="s-1",
                    title="Search",
                ),
                rec("assistant", f"{DAY}T10:01:00Z", DECISION),
                rec("user", f"{DAY}T10:02:00Z", PREFERENCE),
            ],
        )
        yield Dreamer(root, svc, rel)
    finally:
        svc.close()


@pytest.fixture
def d(fresh: Dreamer) -> Dreamer:
    """The session's day digested."""
    assert fresh.svc.run_job(JobRunRequest(job="daily-digest", period=DAY)).status == "ok"
    text = (fresh.root / DIGEST).read_text(encoding="utf-8")
    assert f"- {DECISION} ([" in text and f"- {PREFERENCE} ([" in text
    return fresh


def test_the_digest_s_decision_and_preference_become_proposals(d: Dreamer) -> None:
    run = d.dream()
    assert (run.job, run.status, run.warnings, run.error) == ("dream", "ok", [], None)
    outputs = dict(run.outputs)
    created = outputs.pop("proposals")
    assert outputs == {
        "digests_read": 1,
        "candidates": 2,
        "from_digests": 2,
        "from_recall": 0,
        "written": 2,
        "existing": 0,
        "stopped": {},
    }
    assert sorted(created) == sorted(p.id for p in d.proposed())
    assert d.files() == sorted(f"{p.id}.json" for p in d.proposed())

    got = d.by_content()
    assert set(got) == {DECISION, PREFERENCE}
    decision, preference = got[DECISION].write, got[PREFERENCE].write
    assert (decision.kind, decision.scope, decision.subject, decision.agent, decision.source, decision.reason) == (
        "decision",
        "decision",
        "Use SQLite FTS5",  # the clause it decides, not the sentence's first words
        "dory dream",
        f"{d.transcript}#L{d.line_of(1)}",
        f"from the daily digest {DIGEST}",
    )
    assert (preference.kind, preference.subject, preference.scope, preference.agent, preference.source) == (
        "preference",
        "user",
        None,
        "dory dream",
        f"{d.transcript}#L{d.line_of(2)}",
    )
    [older] = [p for p in d.svc.sessions.list(SessionListRequest()).sessions if p.session_id == "s-0"]
    again = f"{older.path}#L{first_line(d, older.path)}"
    assert preference.reason == f"from the daily digest {DIGEST}; the user said it in another session too ({again})"
    assert {p.plan.target_path for p in d.proposed()} == {"decisions/use-sqlite-fts5.md", "core/user.md"}
    lines = (d.root / d.transcript).read_text(encoding="utf-8").split("\n")
    assert lines[d.line_of(1) - 1].endswith(turns(d.root, d.transcript)[1].id)  # the source is the turn's heading
    for proposal in d.proposed():
        assert proposal.status == "proposed" and proposal.write.dry_run
        stored = json.loads((d.root / "inbox" / "proposed" / f"{proposal.id}.json").read_text(encoding="utf-8"))
        assert stored["write"]["agent"] == "dory dream"
    assert claims.dump(d.svc.store.conn) == []  # proposals only: nothing was written


def test_a_turn_that_no_longer_says_it_is_not_grounded(d: Dreamer) -> None:
    path = d.root / d.transcript
    text = path.read_text(encoding="utf-8")
    assert text.count(DECISION) == 1
    path.write_text(text.replace(DECISION, "We talked about the weather and nothing more."), encoding="utf-8")
    d.svc.reindex(ReindexRequest())
    run = d.dream()
    assert run.outputs["stopped"] == {"not_grounded": 1}
    assert set(d.by_content()) == {PREFERENCE}


def test_an_already_active_claim_is_not_proposed(d: Dreamer) -> None:
    written = d.svc.memory_write(
        MemoryWriteRequest(subject="user", content=PREFERENCE, kind="preference", allow_canonical=True)
    )
    assert written.action == "written"
    run = d.dream()
    assert run.outputs["stopped"] == {"already_active": 1}
    assert set(d.by_content()) == {DECISION}


def test_a_deleted_session_is_a_tombstone(d: Dreamer) -> None:
    d.svc.sessions.update(SessionUpdateRequest(id="s-1", action="delete"))
    run = d.dream()
    assert (run.status, run.warnings) == ("warning", [NOTHING])
    # Every statement bullet citing the deleted session stops there (the question in Work Done too).
    assert (run.outputs["stopped"], run.outputs["written"]) == ({"tombstoned": 3}, 0)
    assert d.files() == []


def test_a_forgotten_claim_is_a_tombstone(d: Dreamer) -> None:
    d.svc.memory_write(MemoryWriteRequest(subject="user", content=PREFERENCE, kind="preference", allow_canonical=True))
    forgot = d.svc.memory_write(
        MemoryWriteRequest(subject="user", content=PREFERENCE, kind="preference", action="forget", allow_canonical=True)
    )
    assert forgot.action == "forgotten"
    assert any(c["status"] == "retired" and c["statement"] == PREFERENCE for c in claims.dump(d.svc.store.conn))
    run = d.dream()
    assert run.outputs["stopped"] == {"tombstoned": 1}
    assert set(d.by_content()) == {DECISION}


def test_a_second_run_proposes_nothing_new(d: Dreamer) -> None:
    assert d.dream().outputs["written"] == 2
    before = d.files()
    again = d.dream()
    assert (again.status, again.reason) == ("skipped", "already done for this period")
    forced = d.dream(force=True)
    assert (forced.status, forced.warnings) == ("warning", [NOTHING])
    assert (forced.outputs["digests_read"], forced.outputs["written"]) == (0, 0)  # the digest was dreamed already
    assert d.files() == before


def test_a_rejected_proposal_is_never_proposed_again(d: Dreamer) -> None:
    assert d.dream().outputs["written"] == 2
    rejected = d.svc.proposal_reject(ProposalDecision(id=d.by_content()[PREFERENCE].id, reason="not true"))
    assert rejected.status == "rejected"

    redigest = d.svc.run_job(JobRunRequest(job="daily-digest", period=DAY, force=True))
    assert (redigest.status, redigest.outputs["unchanged"]) == ("ok", 1)
    digest = d.root / DIGEST
    digest.write_bytes(digest.read_bytes() + b"\nA note added by hand.\n")  # the digest's hash changes
    run = d.dream(force=True)
    assert (run.outputs["digests_read"], run.outputs["candidates"], run.outputs["existing"]) == (1, 2, 2)
    assert (run.status, run.outputs["written"], run.warnings) == ("warning", 0, [NOTHING])
    assert set(d.by_content()) == {DECISION}
    assert d.files("inbox/rejected") == [f"{rejected.id}.json"]


def test_a_dry_run_creates_no_proposal(d: Dreamer) -> None:
    dry = d.dream(dry_run=True)
    assert (dry.status, dry.outputs["written"], dry.outputs["stopped"]) == ("dry_run", 2, {})
    assert sorted(dry.outputs["proposals"]) == sorted(
        [f"(dry run) Use SQLite FTS5: {DECISION}", f"(dry run) user: {PREFERENCE}"]
    )
    assert d.files() == [] and d.files("inbox/applied") == [] and d.files("inbox/rejected") == []
    real = d.dream()  # the dry run did not mark the digest as dreamed
    assert (real.status, real.outputs["written"]) == ("ok", 2)


# -- recall promotion -----------------------------------------------------------------------------------
def search(svc: DoryService, query: str, **fields: Any) -> list[str]:
    return [h.path for h in svc.search(SearchRequest(query=query, **fields)).hits[:3]]


def test_a_note_recalled_by_three_distinct_queries_is_proposed_as_a_concept(fresh: Dreamer) -> None:
    for query in ("borrow checker", "value owner references", "Rust ownership"):
        assert RUST in search(fresh.svc, query)
    for _ in range(5):  # one question asked five times
        assert "knowledge/sourdough-notes.md" in search(fresh.svc, "sourdough starter")
    for query in ("tokio executor", "async tasks worker threads", "Tokio runtime"):  # a canonical page
        assert TOKIO in search(fresh.svc, query)

    run = fresh.dream()
    assert (run.status, run.outputs["from_recall"], run.outputs["written"], run.outputs["stopped"]) == ("ok", 1, 1, {})
    [proposal] = fresh.proposed()
    write = proposal.write
    assert (write.subject, write.kind, write.scope, write.agent, write.source) == (
        "Rust notes",
        "fact",
        "concept",
        "dory dream",
        f"{RUST}#L5",
    )
    assert write.content == (
        "The borrow checker enforces that a value has exactly one owner and references never outlive it."
    )
    assert write.reason is not None and write.reason.startswith("recalled by 3 distinct queries (e.g. ")
    assert RUST_NOTE.split("\n")[4] == "# Rust notes"  # line 5: where the recalled passage starts

    again = fresh.dream(force=True)  # still recalled, already proposed
    assert (again.outputs["written"], again.outputs["existing"]) == (0, 1)


def test_a_quarantined_note_is_never_proposed(fresh: Dreamer) -> None:
    quarantined = "inbox/quarantine/leak.md"
    (fresh.root / quarantined).parent.mkdir(parents=True, exist_ok=True)
    (fresh.root / quarantined).write_text("# Leak\n\nThe password is hunter2 for every account.\n", encoding="utf-8")
    log = RecallLog(fresh.svc.settings.recall_log_path)
    try:  # the index never holds quarantine: its recall events are written straight to the log
        for query in ("password", "account password", "hunter2"):
            log.record(
                query,
                [
                    SearchHit(
                        path=quarantined,
                        title="Leak",
                        chunk_id="q:1",
                        start_line=1,
                        end_line=3,
                        heading_path=[],
                        snippet="",
                        evidence_class="inbox",
                        confidence="low",
                        score=1.0,
                    )
                ],
            )
    finally:
        log.close()
    run = fresh.dream()
    assert (run.outputs["from_recall"], run.outputs["stopped"], run.outputs["written"]) == (0, {"quarantined": 1}, 0)
    assert fresh.files() == []


def test_searches_that_record_nothing_promote_nothing(fresh: Dreamer) -> None:
    for query in ("borrow checker", "value owner references", "Rust ownership"):
        assert RUST in search(fresh.svc, query, record=False)
    assert not fresh.svc.settings.recall_log_path.exists()
    run = fresh.dream()
    assert (run.outputs["from_recall"], run.outputs["written"], run.warnings) == (0, 0, [NOTHING])
