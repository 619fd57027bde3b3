"""The session plane while `dory ops watch` runs: a transcript dropped into logs/sessions/ becomes
recallable, `dory sessions ingest` hands its indexing to the daemon (searchable the moment it returns),
edits through the CLI apply at once, and a removed transcript leaves the session index."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.daemon import DaemonProcess, daemon_env, wait_until

DROPPED = "logs/sessions/codex/box/2025-02-02-dropped.md"
TRANSCRIPT = """---
title: Dropped in by hand
type: session
agent: codex
device: box
session_id: dropped
started: '2025-02-02T10:00:00Z'
updated: '2025-02-02T10:00:09Z'
---

## user · 2025-02-02T10:00:00Z · m-0123456789ab

Where is the marmalade recipe?

## assistant · 2025-02-02T10:00:09Z · m-0123456789ac

It needs Seville oranges;
the marmalade sets at 105 °C.
"""
LIVE = "".join(
    json.dumps(record) + "\n"
    for record in (
        {
            "type": "user",
            "session_id": "live",
            "title": "Arctic animals",
            "timestamp": "2025-01-01T00:00:00Z",
            "content": "walrus tusks are ivory",
        },
        {"type": "assistant", "timestamp": "2025-01-01T00:00:04Z", "content": "Yes, and they keep growing."},
    )
)


def test_the_session_plane_follows_the_daemon(tmp_path: Path, daemon_factory: Callable[..., DaemonProcess]) -> None:
    root = tmp_path / "corpus"
    (root / "notes").mkdir(parents=True)
    (root / "notes/a.md").write_text("# A note\n\nNothing about citrus here.\n")
    daemon = daemon_factory(root, daemon_env()).start()

    def ok(*args: str) -> Any:
        code, body, err = daemon.cli(*args)
        assert code == 0, (args, body, err)
        return body

    def hits(query: str) -> list[dict[str, Any]]:
        return ok("sessions", "search", query)["hits"]

    # 1. a transcript written straight into the plane is picked up by the watcher
    (root / DROPPED).parent.mkdir(parents=True)
    (root / DROPPED).write_text(TRANSCRIPT, encoding="utf-8")
    wait_until(lambda: bool(hits("marmalade")), what="the dropped transcript to be recallable")
    found = hits("marmalade")
    assert sorted((h["path"], h["turn"]["message_id"], h["start_line"], h["end_line"]) for h in found) == [
        (DROPPED, "m-0123456789ab", 11, 13),
        (DROPPED, "m-0123456789ac", 15, 18),
    ]  # each turn's exact lines
    assert ok("search", "marmalade")["hits"] == []  # durable search never reads transcripts

    # 2. an ingest while the daemon runs: indexed by the daemon before the command returns
    source = tmp_path / "live.jsonl"
    source.write_text(LIVE)
    res = ok("sessions", "ingest", str(source), "--device", "d")
    assert res["indexed"] is True
    [made] = res["sessions"]
    assert (made["action"], made["path"]) == ("created", "logs/sessions/unknown/d/2025-01-01-live.md")
    assert [h["turn"]["session_id"] for h in hits("walrus")] == ["live"]  # no waiting

    # 3. a CLI edit goes through the daemon too: hidden from recall at once
    assert ok("sessions", "delete", "live")["status"] == "deleted"
    assert hits("walrus") == []

    # 4. a transcript removed from disk leaves the index
    (root / DROPPED).unlink()
    wait_until(lambda: not hits("marmalade"), what="the removed transcript to leave the index")
    listed = ok("sessions", "list", "--all")
    assert [(s["session_id"], s["status"]) for s in listed["sessions"]] == [("live", "deleted")]
    assert daemon.stop() == 0
