"""Active memory over a real indexed corpus (vectors off): the classifier table, the source policy (coding never
quotes a personal page, even the best match), NONE without evidence, session recall only for recent-work
prompts, and deadline drops driven by a fake clock (never by real timing)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from support.fake_llm import FakeLlm

from dory.config import load_settings
from dory.context.active.block import render
from dory.context.active.classify import classify
from dory.context.active.policy import PageMeta, is_personal, policy_for
from dory.errors import UsageError
from dory.models import ActiveEvidence, ActiveMemoryRequest, ReindexRequest, SessionIngestRequest
from dory.service import DoryService
from tests.conftest import make_settings

FILES = {
    "people/maya.md": "---\ntitle: Maya\ntype: person\n---\n# Maya\n\nMaya prefers Postgres for the billing service. "
    "She lives in Lisbon.\n",
    "core/user.md": "# User\n\nMaya, a backend developer; prefers Postgres billing answers short.\n",
    "notes/friend.md": "---\ntitle: Friend\ntype: person\n---\n# Jo\n\nJo also prefers Postgres for billing.\n",
    "notes/secret.md": "---\nvisibility: private\n---\n# Secret\n\nThe billing Postgres root password rotates.\n",
    "projects/billing/state.md": "# Billing\n\n## State\n\nThe billing service runs on Postgres 16.\n"
    "The migration script lives in scripts/migrate.py and runs nightly.\n",
    "knowledge/garden.md": "# Garden\n\nTomatoes need six hours of sun.\n",
}
PROMPT = "Which database does Maya prefer for the billing service?"


class FakeClock:
    """Returns `start` until `jump_after` readings, then a time far past any deadline."""

    def __init__(self, jump_after: int) -> None:
        self.readings = 0
        self.jump_after = jump_after

    def __call__(self) -> float:
        self.readings += 1
        return 100.0 if self.readings > self.jump_after else 0.0


@pytest.fixture
def svc(lexical_service: Callable[[dict[str, str | bytes]], DoryService]) -> DoryService:
    service = lexical_service(dict(FILES))
    service.reindex(ReindexRequest())
    return service


@pytest.mark.parametrize(
    ("prompt", "profile"),
    [
        ("```python\nprint(1)\n```\nwhy?", "coding"),
        ('Traceback (most recent call last):\n  File "app.py", line 3', "coding"),
        ("it fails with KeyError on startup", "coding"),
        ("look at dory/search/engine.py:120 please", "coding"),
        ("refactor this function and add pytest tests", "coding"),
        ("why does parse_query() return None", "coding"),
        ("help me rewrite the intro paragraph of my essay", "writing"),
        ("make the tone of this newsletter warmer", "writing"),
        ("what should I cook tonight?", "default"),
        ("remind me what Jo said about the trip", "default"),
        ("draft a blog post about our database migration", "writing"),
    ],
)
def test_the_classifier_reads_shape_then_words(prompt: str, profile: str) -> None:
    assert classify(prompt)[0] == profile


def test_personal_pages_follow_the_corpus_layout() -> None:
    plain = PageMeta()
    assert is_personal("people/maya.md", plain) and is_personal("People/sub/x.md", plain)
    assert is_personal("core/user.md", plain) and is_personal("core/soul.md", plain)
    assert not is_personal("core/active.md", plain) and not is_personal("core/env.md", plain)
    assert is_personal("notes/jo.md", PageMeta(doc_type="person"))
    assert is_personal("notes/x.md", PageMeta(visibility="personal"))
    assert policy_for("coding").excludes("people/maya.md", plain) == "personal page (coding profile)"
    assert policy_for("writing").excludes("people/maya.md", plain) is None
    assert policy_for("writing").excludes("notes/a.md", PageMeta(visibility="private")) == "visibility: private"
    assert policy_for("privacy").excludes("notes/a.md", PageMeta(sensitivity="high")) is not None
    assert policy_for("default").excludes("notes/a.md", PageMeta(sensitivity="high")) is None


def test_coding_never_quotes_a_personal_page_even_the_best_match(svc: DoryService) -> None:
    open_res = svc.active_memory(ActiveMemoryRequest(prompt=PROMPT, profile="default"))
    assert open_res.found and open_res.evidence[0].path == "people/maya.md"  # the best match when allowed
    assert "notes/secret.md" not in {e.path for e in open_res.evidence}  # private: no profile quotes it

    res = svc.active_memory(ActiveMemoryRequest(prompt=PROMPT, profile="coding"))
    paths = {e.path for e in res.evidence}
    assert res.found and paths == {"projects/billing/state.md"}, res
    assert not paths & {"people/maya.md", "core/user.md", "notes/friend.md"}
    assert "people/maya.md: personal page (coding profile)" in res.excluded
    assert "Maya prefers" not in res.block and "Lisbon" not in res.block
    assert res.synthesis == "The billing service runs on Postgres 16."
    assert res.block.splitlines()[1].startswith("- projects/billing/state.md:")


def test_auto_profile_is_classified_and_reported(svc: DoryService) -> None:
    res = svc.active_memory(ActiveMemoryRequest(prompt=f"{PROMPT} see scripts/migrate.py"))
    assert res.profile == "coding" and "source file path" in res.profile_reason
    assert all(not e.path.startswith("people/") for e in res.evidence)


def test_none_when_nothing_is_evidence(svc: DoryService) -> None:
    res = svc.active_memory(ActiveMemoryRequest(prompt="quantum chromodynamics on a lattice"))
    assert (res.found, res.block, res.evidence, res.synthesis) == (False, "NONE", [], None)
    assert res.dropped_stages == []
    # Keyword-only: the top hit shares one word ("garden") of the prompt's four: not evidence.
    one_word = svc.active_memory(ActiveMemoryRequest(prompt="what colour should the garden fence paint be"))
    assert one_word.block == "NONE", one_word
    two_words = svc.active_memory(ActiveMemoryRequest(prompt="how many hours of sun do tomatoes want"))
    assert two_words.found and two_words.evidence[0].path == "knowledge/garden.md", two_words


def test_unknown_profile_and_bad_requests_are_refused(svc: DoryService) -> None:
    with pytest.raises(UsageError) as err:
        svc.active_memory(ActiveMemoryRequest(prompt=PROMPT, profile="nope"))
    assert err.value.code == "usage_error"
    for bad in ({"prompt": "   "}, {"prompt": "a\x00b"}, {"prompt": "x", "deadline_ms": 10}, {"prompt": "x" * 20_001}):
        with pytest.raises(ValueError):
            ActiveMemoryRequest.model_validate(bad)


def test_session_recall_only_when_the_prompt_asks_about_recent_work(svc: DoryService) -> None:
    session = "".join(
        json.dumps(r) + "\n"
        for r in (
            {
                "type": "user",
                "session_id": "s-1",
                "timestamp": "2025-04-02T09:00:00Z",
                "content": "Rotate the Kafka keys",
            },
            {"type": "assistant", "timestamp": "2025-04-02T09:00:30Z", "content": "Kafka keys rotated on staging."},
        )
    )
    svc.sessions.ingest(SessionIngestRequest(content=session, device="d"))
    plain = svc.active_memory(ActiveMemoryRequest(prompt="Kafka keys rotation", profile="default"))
    recall = next(s for s in plain.stages if s.name == "session_recall")
    assert not recall.ran and recall.note == "the prompt does not ask about recent work" and not plain.found

    asked = svc.active_memory(ActiveMemoryRequest(prompt="what did we do yesterday about the Kafka keys?"))
    assert asked.found and asked.evidence[0].source == "session", asked
    assert asked.evidence[0].path.startswith("logs/sessions/")


@pytest.mark.parametrize(
    ("jump_after", "dropped"),
    [
        # The clock is read once at the start, then as each stage begins and ends (profile 2-3, policy 4-5,
        # durable search 6-7, session recall 8-9).
        (1, ["profile", "policy", "durable_search"]),  # the deadline passed before anything ran
        (5, ["durable_search"]),  # profile and policy ran, then the clock jumped: the search is skipped
        (6, ["durable_search"]),  # the search began in time and ended past the deadline: its hits are thrown away
    ],
)
def test_a_late_stage_is_dropped_and_the_answer_still_returns(
    svc: DoryService, jump_after: int, dropped: list[str]
) -> None:
    res = svc.active_memory(ActiveMemoryRequest(prompt=PROMPT, profile="writing"), clock=FakeClock(jump_after))
    assert res.dropped_stages == dropped, res.stages
    assert (res.found, res.block) == (False, "NONE")
    assert [s.name for s in res.stages] == [
        "profile",
        "policy",
        "keyword_search",
        "durable_search",
        "session_recall",
        "admission",
        "block",
    ]


def test_a_dropped_recall_is_named_in_the_block(svc: DoryService) -> None:
    """The durable search ran in time; recall came after the deadline: the block keeps the evidence and says so."""
    prompt = "what did we decide earlier about the billing service database?"
    full = svc.active_memory(ActiveMemoryRequest(prompt=prompt, profile="coding"))
    assert full.found and full.dropped_stages == []
    res = svc.active_memory(ActiveMemoryRequest(prompt=prompt, profile="coding"), clock=FakeClock(7))
    assert res.dropped_stages == ["session_recall"], res.stages
    assert res.found and res.block.endswith("(dropped past the deadline: session_recall)")
    assert res.evidence == full.evidence


@pytest.mark.model
def test_with_the_real_model_coding_still_skips_personal_pages_and_nothing_is_logged(
    write_corpus: Callable[[dict[str, str | bytes]], Path],
) -> None:
    service = DoryService(load_settings(write_corpus(dict(FILES)), env={}))
    try:
        assert service.reindex(ReindexRequest()).vectors_pending == 0
        deadline = 10_000  # the stages' timing is not what this test is about
        res = service.active_memory(ActiveMemoryRequest(prompt=PROMPT, profile="coding", deadline_ms=deadline))
        assert res.found and res.evidence[0].path == "projects/billing/state.md", res
        assert not {e.path for e in res.evidence} & {"people/maya.md", "core/user.md", "notes/friend.md"}
        unrelated = "zebra stripes on the savannah"
        none = service.active_memory(ActiveMemoryRequest(prompt=unrelated, deadline_ms=deadline))
        assert none.block == "NONE", none
        assert not service.settings.recall_log_path.exists() or _recalled(service) == 0
        # The hybrid search ends past the deadline (clock readings: start, then begin and end of profile,
        # policy, keyword search, hybrid search): the keyword hits answer and the block says so.
        req = ActiveMemoryRequest(prompt=PROMPT, profile="coding")
        late = service.active_memory(req, clock=FakeClock(8))
        assert late.dropped_stages == ["durable_search"], late.stages
        assert late.evidence[0].path == "projects/billing/state.md"
        assert late.block.endswith("(dropped past the deadline: durable_search)")
    finally:
        service.close()


def _recalled(service: DoryService) -> int:
    with sqlite3.connect(service.settings.recall_log_path) as conn:
        return int(conn.execute("SELECT count(*) FROM recall_events").fetchone()[0])


def test_the_block_is_bounded_and_always_names_dropped_stages() -> None:
    item = ActiveEvidence(
        path="notes/long.md", start_line=3, end_line=9, quote="x" * 190, confidence="high", source="durable"
    )
    text = render("coding", "y" * 500, [item, item, item], ["session_recall"], 200)
    assert len(text) <= 200
    assert text.endswith("(dropped past the deadline: session_recall)")
    assert text.startswith("Memory (coding): yyy") and "notes/long.md" not in text  # a line never half-fits
    roomy = render("coding", "The answer.", [item, item], [], 1200)
    assert roomy.splitlines()[1:] == [f"- notes/long.md:3-9 — {'x' * 190}"] * 2


def test_max_evidence_bounds_the_lines(svc: DoryService) -> None:
    res = svc.active_memory(ActiveMemoryRequest(prompt="Postgres billing service", profile="default", max_evidence=1))
    assert res.found and len(res.evidence) == 1 and len(res.block.splitlines()) == 2


def test_expansion_and_rerank_turned_on_in_settings_never_reach_active_memory(
    write_corpus: Callable[[dict[str, str | bytes]], Path], llm: FakeLlm
) -> None:
    llm_settings = {"llm.backend": "openai", "llm.url": llm.url, "llm.model": llm.model}
    settings = make_settings(
        write_corpus(dict(FILES)),
        **{"embedder.backend": "none", "search.expand": True, "search.rerank": True, **llm_settings},
    )
    service = DoryService(settings)
    try:
        service.reindex(ReindexRequest())
        res = service.active_memory(ActiveMemoryRequest(prompt=PROMPT))
    finally:
        service.close()
    assert res.found and res.dropped_stages == []
    assert llm.requests == []  # its deadline is longer than active memory's whole budget
