"""Late sessions: a day's digest runs again when the turns of that day changed after it ran.

Sessions reach the corpus late all the time: capture picks up a transcript after its day's digest
ran, a laptop ships its sessions once it is back online, Syncthing brings another machine's. A daily
digest records which turns it covered as a fingerprint (a hash of the ids of the day's turns in the
session plane); the day is due again when some transcript was written after the run started and
the day's fingerprint is no longer the one recorded. Transcripts growing on another day (a session
that runs past midnight) change the fingerprint of that other day only, so they re-run nothing here.
The re-run keeps hand edits, as every digest run does (dory/jobs/generated.py).
"""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import Any

from dory.config import Settings
from dory.jobs.schedule import local_zone
from dory.sessions.store import SessionStore

FINGERPRINT = "turns_fingerprint"
# File times come from a coarse clock, a few milliseconds behind the one that stamps runs.
MTIME_SLACK_NS = 1_000_000_000


def day_bounds(day: dt.date) -> tuple[str, str]:
    """The local day as UTC moments to the second: [start, end)."""
    zone = local_zone()
    start = dt.datetime.combine(day, dt.time(), zone)
    end = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), zone)
    first, last = (moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S") for moment in (start, end))
    return first, last


def fingerprint(settings: Settings, day: dt.date) -> str:
    """A hash of the ids of the day's turns in the session plane ("" when there is none)."""
    if not settings.sessions_db_path.exists():
        return ""
    store = SessionStore(settings.sessions_db_path, settings.index.tokenizer, readonly=True)
    try:
        ids = store.turn_ids_between(*day_bounds(day))
    finally:
        store.close()
    return hashlib.sha256("\n".join(ids).encode("utf-8")).hexdigest()[:16] if ids else ""


def input_changed(settings: Settings, run: dict[str, Any]) -> bool:
    """Whether a done daily-digest run (its ledger row) no longer covers its day's turns."""
    if not run.get("started") or not settings.sessions_db_path.exists():
        return False
    started = dt.datetime.fromisoformat(run["started"])
    store = SessionStore(settings.sessions_db_path, settings.index.tokenizer, readonly=True)
    try:
        touched = store.changed_since(int(started.timestamp() * 1e9) - MTIME_SLACK_NS)
    finally:
        store.close()
    if not touched:  # the cheap test first: no transcript was written since the run began
        return False
    recorded: object = run["outputs"].get(FINGERPRINT)
    return fingerprint(settings, dt.date.fromisoformat(run["period"])) != recorded
