"""What the deterministic daily digest (dory/jobs/digest_daily.py) lists as Decisions, and how it shortens a
long sentence: only sentences that state a decision taken ("we decided…", "let's go with…", "I'll use X
instead of Y"), never agreement, encouragement, questions or talk about deciding; a bullet too long for
one line is cut after a whole word. Run through the real service and job runner on a written transcript."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.digest_corpus import link, new_corpus, turns, write_transcript

from dory.config import load_settings
from dory.jobs import digest_daily
from dory.jobs.digest import sections_of
from dory.models import JobRunRequest, ReindexRequest
from dory.service import DoryService
from dory.sessions.transcript import Session, new_message

DAY = "2026-11-18"
TALK = [
    ("user", "Which queue should the uploader use?"),
    ("assistant", "Both work; what made you decide against Redis last time?"),
    ("user", "Agreed, that is a big decision. Let's keep going!"),
    ("assistant", "I haven't decided yet, maybe we'll use Redis after all."),
    ("user", "Let's go with SQS for the uploader queue."),
    ("assistant", "I'll use boto3 instead of the raw HTTP client."),
    ("user", "Thanks, that looks right to me."),
]
REAL = {4: "Let's go with SQS for the uploader queue.", 5: "I'll use boto3 instead of the raw HTTP client."}
LONG = " ".join(
    f"The nightly uploader step number {n} copies the staging archives to the cold storage bucket" for n in range(6)
)


def transcript(session_id: str, said: list[tuple[str, str]]) -> Session:
    messages = [
        new_message(session_id, role, f"{DAY}T10:{minute:02d}:00Z", text)  # type: ignore[arg-type]
        for minute, (role, text) in enumerate(said)
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
    )


@pytest.fixture
def svc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[DoryService]:
    monkeypatch.setattr(digest_daily, "local_zone", lambda: dt.UTC)
    root = new_corpus(tmp_path / "corpus")
    service = DoryService(load_settings(root, {"embedder.backend": "none", "digest.quiet_minutes": 0}, env={}))
    try:
        yield service
    finally:
        service.close()


def digest(svc: DoryService, *sessions: Session) -> dict[str, list[str]]:
    for item in sessions:
        write_transcript(svc.settings.corpus, item)
    svc.reindex(ReindexRequest())
    assert svc.run_job(JobRunRequest(job="daily-digest", period=DAY)).status == "ok"
    text = (svc.settings.corpus / digest_daily.path_for(dt.date.fromisoformat(DAY))).read_text(encoding="utf-8")
    return sections_of(text.split("\n---\n", 1)[1])


def test_decisions_are_the_choices_made_and_nothing_else(svc: DoryService) -> None:
    got = digest(svc, transcript("queue", TALK))
    rel = "logs/sessions/codex/desk/2026-11-18-queue.md"
    said = turns(svc.settings.corpus, rel)
    assert got["Decisions"] == [f"- {text} {link(rel, said[index])}" for index, text in REAL.items()]


def test_a_long_sentence_is_cut_after_a_whole_word(svc: DoryService) -> None:
    got = digest(svc, transcript("long", [("assistant", LONG + "."), ("user", "Thanks, that looks right.")]))
    [bullet] = [line for line in got["Work Done"] if "nightly uploader" in line]
    text = bullet[2 : bullet.index(" ([m-")]
    assert len(text) <= 400 and text.endswith("…")
    kept = text.removesuffix("…").split()
    assert kept == LONG.split()[: len(kept)]  # every word whole, the last one too
