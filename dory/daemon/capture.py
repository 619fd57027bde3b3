"""The daemon's side of capture: when to run the capture job (dory/jobs/capture.py).

One thread runs it: every `[capture] sweep_s` (a transcript a watcher missed is still read), and
`debounce_ms` after the last change a watchdog observer saw in a harness folder (agents write a
transcript line by line; a burst of lines is one run). Nothing runs while `[capture] enabled` is
false; a reload of the settings (a changed dory.toml) takes effect at once, roots included. Harness
folders that do not exist yet (Codex installed later) are watched from the first sweep that finds
them. A run never overlaps another: the job ledger records each one (trigger `sweep` or `watch`).
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from dory.config import Settings
from dory.daemon.health import PartHealth, guarded
from dory.sessions.capture import roots

log = logging.getLogger("dory.capture")


class _Handler(FileSystemEventHandler):
    def __init__(self, loop: CaptureLoop) -> None:
        self.loop = loop

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory or event.event_type in ("opened", "closed_no_write"):
            return
        # Only harness folders are watched: any transcript there may have grown (capture decides).
        raws = [event.src_path, *([event.dest_path] if event.dest_path else [])]
        if any(os.fsdecode(raw).endswith(".jsonl") for raw in raws):
            self.loop.changed()


class CaptureLoop:
    def __init__(self, settings: Settings, run: Callable[[str], None]) -> None:
        self.settings = settings
        self._run = run  # runs the capture job once, given its trigger
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._changed_at: float | None = None
        self._observer: Any = None
        self._watched: frozenset[Path] = frozenset()
        self.health = PartHealth()
        self._thread = threading.Thread(
            target=guarded(self.health, "capture", self._loop), name="dory-capture", daemon=True
        )

    # -- life --------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(30)
        self._disarm()

    def configure(self, settings: Settings) -> None:
        """New capture settings (a reload): applied before the next run."""
        self.settings = settings
        self._wake.set()

    def changed(self) -> None:
        """A transcript changed: run once it has been quiet for the debounce."""
        with self._lock:
            self._changed_at = time.monotonic()
        self._wake.set()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    # -- the loop ----------------------------------------------------------------------------
    def _loop(self) -> None:
        next_sweep = time.monotonic()
        while not self._stop.is_set():
            cfg = self.settings.capture
            if not cfg.enabled:
                self._disarm()
                self._sleep(None)
                next_sweep = time.monotonic()  # switched on: sweep at once
                continue
            now = time.monotonic()
            with self._lock:
                quiet_at = None if self._changed_at is None else self._changed_at + cfg.debounce_ms / 1000
            due = next_sweep if quiet_at is None else min(next_sweep, quiet_at)
            if now < due:
                self._sleep(due - now)
                continue
            sweep = now >= next_sweep
            with self._lock:
                self._changed_at = None
            self._safely(self._arm, "cannot watch the harness folders (the sweep still runs)")
            self._safely(functools.partial(self._run, "sweep" if sweep else "watch"), "a run failed")
            if sweep:
                next_sweep = time.monotonic() + cfg.sweep_s

    def _sleep(self, seconds: float | None) -> None:
        self._wake.wait(seconds)
        self._wake.clear()

    def _safely(self, step: Callable[[], None], what: str) -> None:
        try:
            step()
        except Exception:  # a failed run is in the job ledger; the loop itself must live on
            log.exception("capture: %s", what)

    # -- watching the harness folders ---------------------------------------------------------
    def _arm(self) -> None:
        """Watch every harness folder that exists now (re-armed when that set changes)."""
        wanted = frozenset(root.resolve() for root in roots(self.settings).values() if root.is_dir())
        observer = self._observer
        if wanted == self._watched and (observer is None or observer.is_alive()):
            return
        self._disarm()
        if not wanted:
            return
        observer = Observer()
        for root in sorted(wanted):
            observer.schedule(_Handler(self), str(root), recursive=True)
        observer.daemon = True
        observer.start()
        self._observer, self._watched = observer, wanted
        log.info("capture: watching %s", ", ".join(str(root) for root in sorted(wanted)))

    def _disarm(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None
        self._watched = frozenset()
