"""Where dreaming files what it proposes (dory/jobs/dreaming.py with dory/sessions/facts.py), through the
real service and job runner on small sessions: nothing reaches core/user.md on one sighting, a repository's
facts go to the project's page, what named speakers say about themselves goes to their own pages, and a
conversation's encouragement, agreement and questions become no decision at all."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.digest_corpus import new_corpus, tree_hashes, write_transcript

from dory.config import load_settings
from dory.jobs import digest_daily
from dory.models import JobRun, JobRunRequest, Proposal, ReindexRequest
from dory.service import DoryService
from dory.sessions.transcript import Session, new_message

DAY = "2026-11-18"
PERIOD = "2026-11-20"


def at(clock: str) -> str:
    return f"{DAY}T{clock}Z"


def session(session_id: str, turns: list[tuple[str, str]], **extra: str) -> Session:
    messages = [
        new_message(session_id, role, at(f"10:{minute:02d}:00"), text)  # type: ignore[arg-type]
        for minute, (role, text) in enumerate(turns)
    ]
    return Session(
        session_id,
        "codex",
        "desk",
        title=session_id,
        status="done",
        started=messages[0].time,
        updated=messages[-1].time,
        messages=messages,
        extra=dict(extra),
    )


@pytest.fixture(autouse=True)
def utc_days(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(digest_daily, "local_zone", lambda: dt.UTC)


@pytest.fixture
def svc(tmp_path: Path) -> Iterator[DoryService]:
    root = new_corpus(tmp_path / "corpus")
    service = DoryService(load_settings(root, {"embedder.backend": "none", "digest.quiet_minutes": 0}, env={}))
    try:
        yield service
    finally:
        service.close()


def digest_and_dream(svc: DoryService, *sessions: Session) -> tuple[JobRun, list[Proposal]]:
    for item in sessions:
        write_transcript(svc.settings.corpus, item)
    svc.reindex(ReindexRequest())
    assert svc.run_job(JobRunRequest(job="daily-digest", period=DAY)).status == "ok"
    run = svc.run_job(JobRunRequest(job="dream", period=PERIOD))
    return run, svc.proposal_list("proposed").proposals


def routes(proposals: list[Proposal]) -> set[tuple[str, str, str | None]]:
    """(kind, subject, target page) of each proposal."""
    return {(p.write.kind, p.write.subject, p.plan.target_path) for p in proposals}


def test_a_preference_said_once_is_held_back_and_core_user_md_is_untouched(svc: DoryService) -> None:
    user_page = svc.settings.corpus / "core" / "user.md"
    before = user_page.read_bytes()
    run, proposals = digest_and_dream(
        svc, session("s-1", [("user", "I prefer short answers."), ("assistant", "Understood, short it is.")])
    )
    assert (run.outputs["stopped"], run.outputs["written"], proposals) == ({"said_once": 1}, 0, [])
    assert user_page.read_bytes() == before


def test_an_explicit_remember_about_the_user_is_strong_enough_for_core(svc: DoryService) -> None:
    _, proposals = digest_and_dream(svc, session("s-1", [("user", "Remember that I am allergic to peanuts.")]))
    assert routes(proposals) == {("fact", "user", "core/user.md")}


def test_repository_facts_go_to_the_project_page_never_to_core(svc: DoryService) -> None:
    corpus = svc.settings.corpus
    before = {rel: digest for rel, digest in tree_hashes(corpus / "core").items()}
    run, proposals = digest_and_dream(
        svc,
        session(
            "s-1",
            [
                ("user", "Remember that the staging cluster needs the VPN before any deploy."),
                ("user", "I always run the tests in this repo with the -x flag."),
                ("assistant", "Noted, I will keep both in mind."),
            ],
            cwd="/home/me/code/pelican",
        ),
    )
    assert routes(proposals) == {
        ("fact", "pelican", "projects/pelican/state.md"),
        ("preference", "pelican", "projects/pelican/state.md"),
    }
    assert run.outputs["stopped"] == {}
    assert tree_hashes(corpus / "core") == before  # proposals only, and none for core


def test_without_a_project_a_fact_about_a_thing_goes_to_that_thing_s_page(svc: DoryService) -> None:
    _, proposals = digest_and_dream(
        svc, session("s-1", [("user", "Remember that the staging cluster is called heron-7.")])
    )
    assert routes(proposals) == {("fact", "staging cluster", "concepts/staging-cluster.md")}


def test_named_speakers_are_people_not_the_corpus_owner(svc: DoryService) -> None:
    _, proposals = digest_and_dream(
        svc,
        session(
            "talk",
            [
                ("user", "**Alice**: I prefer green tea in the morning before work."),
                ("user", "**Bob**: Agreed, Alice. Let's keep going with our plans!"),
                ("user", "**Bob**: Last week, I decided to run the city marathon in April."),
                ("user", "**Alice**: What made you decide to run it this year?"),
                ("user", "**Bob**: Just remember that every small step counts in the end."),
            ],
        ),
    )
    assert routes(proposals) == {
        ("preference", "Alice", "people/alice.md"),
        ("decision", "Run the city marathon in April", "decisions/run-the-city-marathon-in-april.md"),
    }
    assert all(not (p.plan.target_path or "").startswith("core/") for p in proposals)


def test_proposal_ids_and_subjects_keep_whole_words(svc: DoryService) -> None:
    long_decision = (
        "We decided to move every nightly job onto the shared scheduler thread pool because the old timers drifted."
    )
    _, proposals = digest_and_dream(svc, session("s-1", [("assistant", long_decision)]))
    [proposal] = proposals
    subject = proposal.write.subject
    assert subject == "Move every nightly job onto the shared scheduler thread pool"
    slug = proposal.id.split("-", 2)[2].rsplit("-", 1)[0]  # between the time stamp and the hash
    assert len(slug) <= 40 and "move-every-nightly-job-onto-the-shared-scheduler".startswith(slug)
    assert slug.split("-")[-1] in subject.lower().split()  # the last word is a whole word of the subject
    stored = json.loads((svc.settings.corpus / "inbox" / "proposed" / f"{proposal.id}.json").read_text())
    assert stored["write"]["subject"] == subject
