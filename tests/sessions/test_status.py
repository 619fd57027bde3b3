"""`dory status` reports the session plane and warns while it lags behind the transcripts on disk."""

from __future__ import annotations

from collections.abc import Callable

from dory.models import ReindexRequest
from dory.service import DoryService

TRANSCRIPT = """---
title: Nginx logs
session_id: s-1
agent: codex
device: laptop
status: done
---

## user · 2026-11-20T10:00:00Z · m-0123456789ab

How do I rotate the nginx logs?
"""


def test_status_counts_sessions_and_warns_until_they_are_indexed(
    lexical_service: Callable[[dict[str, str | bytes]], DoryService],
) -> None:
    svc = lexical_service(
        {
            "notes/a.md": "# A\n\ntext\n",
            "logs/sessions/codex/laptop/2026-11-20-s-1.md": TRANSCRIPT,
            "logs/sessions/codex/laptop/2026-11-20-s-1.summary.md": "<continuation_summary>\n",
        }
    )
    before = svc.status()
    assert before.sessions == {"on_disk": 1}
    svc.reindex(ReindexRequest())
    after = svc.status()
    assert after.sessions == {"sessions": 1, "messages": 1, "on_disk": 1}
    assert not any("session index differs" in w for w in after.warnings)
    assert after.files_on_disk == 1  # transcripts are not durable notes
    (svc.settings.corpus / "logs/sessions/codex/laptop/2026-11-21-s-2.md").write_text(
        TRANSCRIPT.replace("s-1", "s-2"), encoding="utf-8"
    )
    lagging = svc.status()
    assert lagging.sessions["on_disk"] == 2 and lagging.sessions["sessions"] == 1
    assert any("session index differs from the transcripts on disk" in w for w in lagging.warnings)
