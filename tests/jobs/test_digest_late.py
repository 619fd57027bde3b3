"""Late sessions: a day's digest is due again when the day's turns changed after it ran, and only then.

The daemon asks `digest_late.input_changed` of every done daily-digest run in its catch-up window at
each heartbeat (tests/daemon/test_capture.py drives that through a real daemon); here each rule is
checked on its own, through real ingests and real digest runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.digest_corpus import ingest, new_corpus, rec

from dory.config import load_settings
from dory.jobs import digest_late
from dory.jobs.ledger import JobLedger
from dory.models import JobRunRequest
from dory.service import DoryService

DAY, NEXT = "2026-11-18", "2026-11-19"


def ledger_row(svc: DoryService, period: str = DAY) -> dict[str, Any]:
    ledger = JobLedger(svc.settings.ledger_path)
    try:
        row = ledger.run("daily-digest", period)
    finally:
        ledger.close()
    assert row is not None
    return row


def due(svc: DoryService) -> bool:
    return digest_late.input_changed(svc.settings, ledger_row(svc))


def run(svc: DoryService) -> dict[str, Any]:
    return svc.run_job(JobRunRequest(job="daily-digest", period=DAY, force=True)).outputs


def test_a_day_digested_before_its_sessions_arrived_is_due_again_until_it_has_them(tmp_path: Path) -> None:
    root = new_corpus(tmp_path / "corpus")
    svc = DoryService(load_settings(root, {"embedder.backend": "none", "digest.quiet_minutes": 0}, env={}))
    try:
        empty = svc.run_job(JobRunRequest(job="daily-digest", period=DAY))
        assert empty.status == "warning" and empty.outputs["turns_fingerprint"] == ""
        assert not due(svc)  # nothing arrived since

        ingest(svc, [rec("user", f"{DAY}T10:00:00Z", "We decided to ship the importer.", session_id="late")])
        assert due(svc)  # a session of that day arrived after the run
        outputs = run(svc)
        assert outputs["written"] == 1 and outputs["sessions"] == 1
        assert not due(svc)

        # The session goes on into the next day: its turns there change nothing for this day.
        ingest(svc, [rec("user", f"{NEXT}T12:00:00Z", "Still at it the next day.", session_id="late")])
        assert not due(svc)

        # The digest is edited by hand, then another session of the day arrives: the day runs again
        # and keeps the edit.
        digest = root / f"digests/daily/{DAY}.md"
        digest.write_text(digest.read_text() + "\nMy own note.\n")
        ingest(svc, [rec("user", f"{DAY}T15:00:00Z", "TODO: write the release notes.", session_id="later")])
        assert due(svc)
        outputs = run(svc)
        assert (outputs["kept_edited"], outputs["sessions"]) == (1, 2)
        assert digest.read_text().endswith("My own note.\n")
        assert not due(svc)
    finally:
        svc.close()
