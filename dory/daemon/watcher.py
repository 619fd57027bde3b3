"""The filesystem watcher: watchdog events turned into corpus-relative paths for the change queue.

What an event *was* hardly matters (editors save in many ways: in place, temp file + rename,
rename-away + rename-back); what matters is which note paths may have changed. So every relevant
event queues its path(s) and the indexer re-reads the disk after the debounce. Temp, swap,
conflict and ignored names are dropped here; folders are queued whole (a moved-in folder, a
folder moved out of the corpus).

The watcher also keeps its own health: events seen, the last one, inotify queue overflows (after
which a reconcile is requested) and re-arms (a dead observer thread, or a corpus folder that was
replaced, gets a new observer). Whether it is alive is checked each time the daemon publishes its
record, not only at the heartbeat that re-arms it. A corpus folder that is gone is not re-armed:
the daemon exits (see Daemon.failure).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from dory.corpus.paths import IgnoreRules, is_note
from dory.daemon.changes import ChangeQueue
from dory.daemon.health import PartHealth
from dory.index.store import now_iso

log = logging.getLogger("dory.watch")
# Events that say nothing about content: reading a file, or closing it unchanged.
QUIET_EVENTS = frozenset({"opened", "closed_no_write"})
# watchdog logs one kernel overflow twice: here, once per IN_Q_OVERFLOW event, and again from
# watchdog.observers.inotify for each recursive watch it rebuilds. Listening to that one too
# counted every overflow twice and asked for two reconciles.
OVERFLOW_LOGGER = "watchdog.observers.inotify_c"


@dataclass
class WatcherHealth(PartHealth):
    started_at: str | None = None
    events_seen: int = 0
    paths_queued: int = 0
    last_event_at: str | None = None
    overflows: int = 0
    rearmed: int = 0


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: CorpusWatcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        self.watcher.handle(event)


class _OverflowSpy(logging.Handler):
    """watchdog rebuilds its watches after an inotify overflow but only *logs* that events were
    lost; this handler turns that log line into a reconcile request."""

    def __init__(self, on_overflow: Callable[[], None]) -> None:
        super().__init__(logging.WARNING)
        self.on_overflow = on_overflow

    def emit(self, record: logging.LogRecord) -> None:
        if "overflow" in record.getMessage().lower():
            self.on_overflow()


class CorpusWatcher:
    def __init__(
        self,
        root: Path,
        rules: IgnoreRules,
        queue: ChangeQueue,
        request_reconcile: Callable[[str], None],
        keep: Callable[[str, bool], bool] | None = None,
    ) -> None:
        """`keep(rel, is_dir)` narrows what is queued (the output folder of a read-only vault: only
        Dory's own folders are read from it)."""
        self.root = root.resolve()
        self.rules = rules
        self.keep = keep
        self.queue = queue
        self.request_reconcile = request_reconcile
        self.health = WatcherHealth()
        self._observer: Any = None
        self._root_id: tuple[int, int] | None = None
        self._lock = threading.Lock()
        self._stopped = False
        self._spy = _OverflowSpy(self._overflowed)

    # -- life --------------------------------------------------------------------------------
    def start(self) -> None:
        logging.getLogger(OVERFLOW_LOGGER).addHandler(self._spy)
        self._arm()

    def stop(self) -> None:
        with self._lock:
            self._stopped = True  # a heartbeat's re-arm that comes after must not start a new observer
            self._disarm()
        # Only now that the observer's threads (which log overflows) have ended.
        logging.getLogger(OVERFLOW_LOGGER).removeHandler(self._spy)

    def report(self) -> dict[str, Any]:
        """The health as published: `alive` is the state now, not as of the last heartbeat."""
        return {"alive": not self._stopped and self.problem() is None, **self.health.as_dict()}

    def _arm(self) -> bool:
        with self._lock:
            if self._stopped:
                return False
            self._disarm()
            st = self.root.stat()
            observer = Observer()
            observer.schedule(_Handler(self), str(self.root), recursive=True)
            observer.daemon = True
            observer.start()
            self._observer, self._root_id = observer, (st.st_dev, st.st_ino)
            self.health.started_at = now_iso()
            return True

    def _disarm(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None

    def check(self) -> bool:
        """Re-arm a watcher whose thread died or whose corpus folder was replaced; True if re-armed.
        A re-armed watcher may have missed events, so it also asks for a reconcile."""
        problem = self.problem()
        if problem is None or self._stopped:
            return False
        self.health.error(problem)
        if not self.root.is_dir():
            log.error("watcher: %s", problem)  # not re-armed: the daemon exits (Daemon.failure)
            return False
        log.warning("watcher: %s; re-arming", problem)
        if not self._arm():
            return False
        self.health.rearmed += 1
        self.request_reconcile("watcher re-armed")
        return True

    def problem(self) -> str | None:
        """What stops events from arriving, or None. The folder comes first: when it is deleted,
        watchdog's emitter stops too, and "an emitter stopped" would hide why."""
        try:
            st = self.root.stat()
        except OSError as exc:
            return f"the corpus folder is gone ({exc.strerror})"
        observer = self._observer
        if observer is None or not observer.is_alive():
            return "the observer thread is not running"
        if (st.st_dev, st.st_ino) != self._root_id:
            return "the corpus folder was replaced"
        if any(not emitter.is_alive() for emitter in list(observer.emitters)):
            return "an event emitter stopped"
        # watchdog's inotify observer reads the kernel queue in a thread of its own: when that one
        # dies, the observer and its emitters live on and no event ever arrives again.
        reader = getattr(observer, "_inotify_fd", None)
        if isinstance(reader, threading.Thread) and not reader.is_alive():
            return "the inotify reader thread stopped"
        return None

    # -- events ------------------------------------------------------------------------------
    def _overflowed(self) -> None:
        self.health.overflows += 1
        self.request_reconcile("inotify queue overflow: events were lost")

    def handle(self, event: FileSystemEvent) -> None:
        if event.event_type in QUIET_EVENTS:
            return
        raws = [event.src_path, *([event.dest_path] if event.dest_path else [])]
        if all(self._in_ignored_folder(raw, event.is_directory) for raw in raws):
            return  # Dory's own state folder (and .git, .obsidian, ...): not the corpus's events
        self.health.events_seen += 1
        self.health.last_event_at = now_iso()
        paths = [self._relevant(event.src_path, event.is_directory, event.event_type)]
        if event.dest_path:
            paths.append(self._relevant(event.dest_path, event.is_directory, event.event_type))
        queued = [path for path in paths if path]
        if queued:
            self.health.paths_queued += len(queued)
            self.queue.add(queued)

    def _in_ignored_folder(self, raw: bytes | str, is_dir: bool) -> bool:
        """The path is an ignored folder, or lies in one (the state folder, .git, ...)."""
        rel = os.path.relpath(os.fsdecode(raw), self.root).replace(os.sep, "/")
        folder = rel if is_dir else rel.rpartition("/")[0]
        return folder not in ("", ".") and not folder.startswith("..") and self.rules.ignores_path(folder, is_dir=True)

    def _relevant(self, raw: bytes | str, is_dir: bool, kind: str) -> str | None:
        path = os.fsdecode(raw)
        rel = os.path.relpath(path, self.root).replace(os.sep, "/")
        if rel == "." or rel.startswith("../"):
            return None
        if self.keep is not None and not self.keep(rel, is_dir):
            return None
        if is_dir:
            # A folder's "modified" only says its listing changed; the entries report themselves.
            if kind == "modified" or self.rules.ignores_path(rel, is_dir=True):
                return None
            return rel
        if not is_note(rel) or self.rules.ignores_path(rel, is_dir=False):
            return None
        return rel
