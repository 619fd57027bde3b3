"""`dory ops watch`: the one long-running process per corpus that owns the index.

Start-up order matters: take the writer lock; load (and if a crash left it behind, repair) the
vector store; open the job ledger and the control socket; arm the watcher *before* the start-up
reconcile, so nothing changed meanwhile is missed; then the embedder, the scheduler (which
first catches up on missed periods) and the capture loop (dory/daemon/capture.py, idle while
`[capture]` is off). The heartbeat also applies a changed dory.toml (dory/daemon/reload.py). On stop
the writer finishes what it has queued.

While it runs, the main thread watches over the parts: a worker thread that died or a corpus
folder that is gone ends the daemon with a non-zero exit and a record saying why (the decision
and its reasons are in dory/daemon/health.py).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from apscheduler.events import EVENT_JOB_ERROR, JobExecutionEvent
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler

from dory.config import Settings
from dory.corpus.paths import IgnoreRules
from dory.corpus.roots import holds_output, separate
from dory.daemon import control
from dory.daemon.capture import CaptureLoop
from dory.daemon.changes import ChangeQueue
from dory.daemon.embedder import EmbedWorker
from dory.daemon.health import PartHealth
from dory.daemon.reload import ConfigWatch
from dory.daemon.watcher import CorpusWatcher
from dory.daemon.writer import IndexWriter
from dory.errors import CorpusNotFound, DaemonAlreadyRunning, DoryError, IndexLocked, JobFailed
from dory.index import vector_pass
from dory.index.lock import WriterLock
from dory.index.store import IndexStore, now_iso
from dory.jobs.ledger import JobLedger
from dory.jobs.periods import run_key
from dory.jobs.registry import JOBS
from dory.jobs.runner import JobRunner, now_local
from dory.jobs.schedule import local_zone
from dory.models import JobRun, JobRunRequest, Readiness, ReindexRequest, ReindexResponse, WakeRequest
from dory.service import DoryService
from dory.service.control import socket_path
from dory.service.daemon_state import daemon_status, write_state
from dory.service.settings import open_settings
from dory.service.writes import WriterCall

log = logging.getLogger("dory.daemon")
STATE_EVERY_S = 0.5
SUPERVISE_EVERY_S = 0.5
# APScheduler's default grace of 1 s silently drops a run the machine slept through; the ledger
# decides what is really due, so the scheduler may always fire late.
JOB_DEFAULTS = {"coalesce": True, "misfire_grace_time": 12 * 3600, "max_instances": 1}


class Daemon:
    def __init__(self, settings: Settings, lock_wait_s: float = 0.0, surface: str = "daemon") -> None:
        """`surface` is what the write log records for writes made through this daemon's own service
        (`dory serve` passes "http": its HTTP and MCP callers use that service)."""
        self.settings = settings
        self.lock_wait_s = lock_wait_s
        self.service = DoryService(settings, surface=surface)
        cfg = settings.daemon
        self.changes = ChangeQueue(cfg.debounce_ms / 1000, cfg.max_delay_ms / 1000)
        self.writer = IndexWriter(self.service, self.changes, on_change=lambda: None)
        self.embedder = EmbedWorker(self.service, self.writer)
        self.writer.on_change = self.embedder.wake
        self.changes.on_add = self.writer.wake
        rules = IgnoreRules(settings.index.ignore)
        self.watcher = CorpusWatcher(settings.corpus, rules, self.changes, self.writer.request_reconcile)
        # A read-only vault's digests, wiki and proposals live in an output folder of their own: a
        # user's edit there is indexed as promptly as one in the vault.
        self.output_watcher: CorpusWatcher | None = None
        if separate(settings) and settings.output_root is not None:
            self.output_watcher = CorpusWatcher(
                settings.output_root, rules, self.changes, self.writer.request_reconcile, keep=holds_output
            )
        self.started_at: str | None = None
        self.http_url: str | None = None  # set by `dory serve`, published in the daemon state
        self.startup_done = threading.Event()
        self._stop = threading.Event()
        self._lock: WriterLock | None = None
        self._ledger: JobLedger | None = None
        self._runner: JobRunner | None = None
        self._scheduler: BackgroundScheduler | None = None
        self.scheduler_health = PartHealth()
        self._control: control.ControlServer | None = None
        self._reader: IndexStore | None = None
        self.capture = CaptureLoop(settings, self._capture)
        self._config = ConfigWatch(settings, lambda: open_settings(settings.corpus, {"state_dir": settings.state_dir}))
        self._exits = contextlib.ExitStack()
        self._state_thread = threading.Thread(target=self._publish_loop, name="dory-state", daemon=True)

    # -- life --------------------------------------------------------------------------------
    def start(self) -> None:
        self._take_lock()
        self.started_at = now_iso()
        self._exits.enter_context(self.service.resources.owning())  # for the daemon's whole life
        for warning in self.writer.start():
            log.warning("vectors: %s", warning)
        for line in self.writer.call(self.service.owner.recover):
            log.warning("recovery: %s", line)
        self._ledger = JobLedger(self.settings.ledger_path)
        interrupted = self._ledger.mark_interrupted()
        if interrupted:
            log.warning("%d job runs were interrupted by a crash; they will run again", interrupted)
        self._runner = JobRunner(self.settings, self._ledger, self.service.job_api(self.writer.owned))
        self.service.in_process_owner = self  # this process's own callers (HTTP) skip the socket
        self._control = control.ControlServer(socket_path(self.settings), self._handlers())
        self._control.start()
        self.watcher.start()
        if self.output_watcher is not None:
            self.output_watcher.root.mkdir(parents=True, exist_ok=True)
            self.output_watcher.start()
        self.writer.submit(self._startup_reconcile)
        self.embedder.start()
        self._start_scheduler()
        self.capture.start()
        self._state_thread.start()
        corpus, named = self.settings.corpus, self.settings.name or self.settings.corpus
        log.info("watching %s (pid %d); the index is in %s", corpus, os.getpid(), self.settings.state_dir)
        if self.settings.read_only:
            log.info(
                "read-only: Dory never writes into %s; digests, the wiki and proposals go to %s",
                corpus,
                self.settings.output_root or "nowhere (no output folder)",
            )
        log.info(
            "save or edit any .md note under %s in your editor and it is searchable in about a second; "
            'in another terminal: dory --corpus %s search "words from one of your notes", '
            "dory --corpus %s status, or bring in notes you have elsewhere with dory --corpus %s migrate "
            "PATH --dry-run  (Ctrl-C stops the daemon)",
            corpus,
            named,
            named,
            named,
        )

    def _take_lock(self) -> None:
        def waiting(holder: str) -> None:
            log.warning("waiting for pid %s to finish writing the index…", holder)

        lock = WriterLock(self.settings.lock_path, self.lock_wait_s, waiting)
        try:
            lock.__enter__()
        except IndexLocked as exc:
            status = daemon_status(self.settings)
            if status.running:
                raise DaemonAlreadyRunning(
                    f"a Dory daemon (pid {status.pid}) is already watching {self.settings.corpus}", pid=status.pid
                ) from exc
            raise
        self._lock = lock

    def _startup_reconcile(self) -> None:
        try:
            self.writer.reconcile_now()
        finally:
            self.startup_done.set()

    def stop(self, failure: DoryError | None = None) -> None:
        log.info("stopping")
        self._stop.set()
        self.watcher.stop()
        if self.output_watcher is not None:
            self.output_watcher.stop()
        self.capture.stop()
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=False)
        if self._control is not None:
            self._control.stop()
        self.embedder.stop()
        self.writer.stop()
        if self._state_thread.is_alive():
            self._state_thread.join(5)
        if failure is not None:
            self._record_exit(failure)
        if self._ledger is not None:
            self._ledger.close()
        if self._reader is not None:
            self._reader.close()
        self._exits.close()
        self.service.close()
        if failure is None:
            self.settings.daemon_state_path.unlink(missing_ok=True)
        if self._lock is not None:
            self._lock.__exit__(None, None, None)
        log.info("stopped")

    def run_until_signalled(self) -> int:
        """The foreground life: SIGTERM / SIGINT finish the current batch and exit 0; a failure
        (see `failure`) is raised after the stop, so the exit code is not 0."""
        received: list[int] = []

        def request_stop(signum: int, frame: FrameType | None) -> None:
            # Only an append: a handler runs between any two bytecodes of the main thread, also
            # inside a lock that thread holds. It used to log and set an Event, and a second
            # signal arriving while the first handler was inside Event.set() deadlocked the daemon.
            received.append(signum)

        signal.signal(signal.SIGTERM, request_stop)
        signal.signal(signal.SIGINT, request_stop)
        try:
            return self.run(lambda: f"received {signal.Signals(received[0]).name}" if received else None)
        finally:
            ignore_stop_signals()

    def run(
        self,
        stop_requested: Callable[[], str | None],
        after_start: Callable[[], None] | None = None,
        before_stop: Callable[[], None] | None = None,
    ) -> int:
        """Start (then `after_start`: `dory serve` starts serving HTTP), then watch over the parts until
        a stop is requested or the daemon cannot go on; then stop. `before_stop` runs first (`dory
        serve` stops serving there, so no request is still using the service when it closes). A
        failure is raised after the stop and stays in the daemon's record for `dory status`."""
        self.start()
        if after_start is not None:
            after_start()
        failure: DoryError | None = None
        try:
            while True:
                request = stop_requested()
                if request:
                    log.info("%s", request)
                    break
                failure = self.failure()
                if failure is not None:
                    log.critical("%s", failure.message)
                    break
                time.sleep(SUPERVISE_EVERY_S)
        finally:
            try:
                if before_stop is not None:
                    before_stop()
            finally:
                self.stop(failure)
        if failure is not None:
            raise failure
        return 0

    def failure(self) -> DoryError | None:
        """Why the daemon cannot go on, or None: its corpus folder is gone (nothing left to watch:
        a zombie that reports nothing is worse than an exit systemd restarts and the journal
        explains), or one of its threads died (fatal: see dory/daemon/health.py)."""
        corpus = self.settings.corpus
        if not corpus.is_dir():
            return CorpusNotFound(f"the corpus folder {corpus} was deleted or moved; exiting", corpus=str(corpus))
        server = self._control
        threads = (
            ("writer", self.writer.alive, self.writer.stats),
            ("embedder", self.embedder.alive or not self.embedder.stats.enabled, self.embedder.stats),
            ("control", server is None or server.alive, server.health if server else None),
            ("capture", self.capture.alive, self.capture.health),
        )
        for name, alive, health in threads:
            if not alive:
                why = (health.last_error if health else None) or f"the {name} thread ended"
                return DoryError(f"{why}; exiting, so that a fresh daemon is started", part=name)
        return None

    # -- scheduler ---------------------------------------------------------------------------
    def _start_scheduler(self) -> None:
        runner = self._runner
        assert runner is not None
        scheduler = BackgroundScheduler(
            executors={"default": ThreadPoolExecutor(2)}, job_defaults=JOB_DEFAULTS, timezone=local_zone()
        )
        self._schedule_jobs(scheduler, runner)
        scheduler.add_job(self._heartbeat, "interval", seconds=self.settings.daemon.heartbeat_s, id="heartbeat")
        # Catch up on periods missed while the daemon was down, once the start-up reconcile is done.
        scheduler.add_job(self._catch_up, id="catch-up")
        scheduler.add_listener(self._scheduled_call_raised, EVENT_JOB_ERROR)
        scheduler.start()
        self._scheduler = scheduler

    def _run_scheduled(self, name: str) -> None:
        if self._runner is not None:
            self._note_failed_runs(self._runner.run_due(name))

    def _schedule_jobs(self, scheduler: BackgroundScheduler, runner: JobRunner) -> None:
        """One scheduler entry per job with a cron (again after a reload: the old ones go first)."""
        for name in JOBS:
            if scheduler.get_job(name) is not None:
                scheduler.remove_job(name)
            schedule = runner.schedule(name)
            if schedule.enabled:
                scheduler.add_job(self._run_scheduled, schedule.trigger, args=[name], id=name, name=name)

    def _catch_up(self) -> None:
        self.startup_done.wait()
        if self._runner is not None:
            self._note_failed_runs(self._runner.run_all_due("catch-up"))

    def _heartbeat(self) -> None:
        self.watcher.check()
        if self.output_watcher is not None:
            self.output_watcher.check()
        self._reload_config()
        if self._runner is not None and self.startup_done.is_set():
            self._note_failed_runs(self._runner.run_all_due("heartbeat"))

    def _note_failed_runs(self, runs: list[JobRun]) -> None:
        """A failed job run is in the ledger; the scheduler's last error says so too."""
        for run in runs:
            if run.status == "failed":
                self.scheduler_health.error(JobFailed.for_run(run.job, run.period, run.error).message)

    def _scheduled_call_raised(self, event: JobExecutionEvent) -> None:
        exc = event.exception
        self.scheduler_health.error(f"scheduled call {event.job_id} raised {type(exc).__name__}: {exc}")

    def _reload_config(self) -> None:
        """Apply a changed dory.toml's schedules, capture and digest settings (dory/daemon/reload.py)."""
        change = self._config.check(self.settings)
        if change is None or self._runner is None:
            return
        self.settings = self._runner.settings = change.settings
        if "jobs" in change.applied and self._scheduler is not None:
            self._schedule_jobs(self._scheduler, self._runner)
        self.capture.configure(change.settings)

    def _capture(self, trigger: str) -> None:
        """One run of the capture job (from the capture loop's thread), once start-up is done."""
        self.startup_done.wait()
        if self._runner is not None and not self._stop.is_set():
            run = self._runner.run("capture", run_key(now_local(), True), trigger, force=True)
            if run.status == "failed":
                self.capture.health.error(JobFailed.for_run(run.job, run.period, run.error).message)

    # -- control requests --------------------------------------------------------------------
    def _handlers(self) -> dict[str, control.Handler]:
        return {
            "reindex": self._reindex,
            "run_job": self._run_job,
            "write": self._write,
            # Agent hooks ask here at every session start: the warm service answers in milliseconds.
            "wake": self._wake,
        }

    def _reindex(self, args: dict[str, Any]) -> dict[str, Any]:
        return self.reindex(ReindexRequest.model_validate(args)).model_dump()

    def _write(self, args: dict[str, Any]) -> dict[str, Any]:
        return self.write(WriterCall.model_validate(args))

    def _wake(self, args: dict[str, Any]) -> dict[str, Any]:
        return self.service.wake(WakeRequest.model_validate(args)).model_dump(mode="json")

    def _run_job(self, args: dict[str, Any]) -> dict[str, Any]:
        return self.run_job(JobRunRequest.model_validate(args)).model_dump()

    # -- the owner, for this process's service (dory.service.writes.InProcessOwner) ------------
    def reindex(self, req: ReindexRequest) -> ReindexResponse:
        report = self.writer.call(lambda: self.writer.reconcile_now(req.full))
        report.warnings.append("run by the daemon: vectors are embedded in the background (see `dory status`)")
        return report

    def write(self, call: WriterCall) -> dict[str, Any]:
        """A write, made on the writer thread like every index change. The request id makes a retry
        safe: a call already applied is answered from its receipt."""
        return self.writer.owned(lambda: self.service.run_call(call))

    def run_job(self, req: JobRunRequest) -> JobRun:
        assert self._runner is not None
        return self._runner.run(req.job, req.period, "manual", force=req.force, dry_run=req.dry_run, fix=req.fix)

    # -- the public record -------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        pending_paths = len(self.changes)
        vectors_pending = self._vectors_pending()
        writer_idle = not self.writer.busy and pending_paths == 0
        embed_idle = not self.embedder.busy and (vectors_pending == 0 or not self.embedder.stats.enabled)
        parts = self._parts()
        return {
            "pid": os.getpid(),
            "corpus": str(self.settings.corpus),
            "socket": str(socket_path(self.settings)),
            "started_at": self.started_at,
            "heartbeat_at": now_iso(),
            "idle": self.startup_done.is_set() and writer_idle and embed_idle,
            "pending_paths": pending_paths,
            "vectors_pending": vectors_pending,
            **parts,
            "last_error": _latest_error(parts),
            "http_url": self.http_url,
        }

    def readiness(self) -> Readiness:
        """What /readyz answers: each part's check, and how far the index is behind the corpus."""
        snap = self.snapshot()
        checks = {
            "index": self.settings.db_path.exists(),
            "startup_reconcile": self.startup_done.is_set(),
            "writer": snap["writer"]["alive"],
            "embedder": snap["embedder"]["alive"] or not self.embedder.stats.enabled,
            "watcher": bool(snap["watcher"].get("alive")) and snap.get("output_watcher", {}).get("alive", True),
            "scheduler": snap["scheduler"]["alive"],
            "control": snap["control"]["alive"],
        }
        return Readiness(
            ready=all(checks.values()),
            checks=checks,
            generation=self.service.generation(),
            pending_paths=snap["pending_paths"],
            vectors_pending=snap["vectors_pending"],
            last_error=snap["last_error"],
        )

    def _parts(self) -> dict[str, dict[str, Any]]:
        """Each part as published: whether its thread runs now, its counters, its last error."""
        scheduler, server = self._scheduler, self._control
        return {
            "watcher": self.watcher.report(),
            **({"output_watcher": self.output_watcher.report()} if self.output_watcher is not None else {}),
            "writer": {"alive": self.writer.alive, **self.writer.stats.as_dict()},
            "embedder": {"alive": self.embedder.alive, **self.embedder.stats.as_dict()},
            "scheduler": {"alive": scheduler is not None and scheduler.running, **self.scheduler_health.as_dict()},
            "control": {"alive": server is not None and server.alive, **(server.health.as_dict() if server else {})},
            "capture": {
                "alive": self.capture.alive,
                "enabled": self.settings.capture.enabled,
                **self.capture.health.as_dict(),
            },
        }

    def _vectors_pending(self) -> int:
        try:
            if self._reader is None:
                self._reader = IndexStore(self.settings.db_path, self.settings.index.tokenizer, readonly=True)
            return vector_pass.pending_count(self._reader)
        except (sqlite3.Error, DoryError):  # the very first start: the index is still being created
            return 0

    def _record_exit(self, failure: DoryError) -> None:
        """Leave the record with why the daemon exited, for `dory status` (a clean stop removes it)."""
        path = self.settings.daemon_state_path
        try:
            write_state(path, self.snapshot() | {"exited_at": now_iso(), "exit_reason": failure.message})
        except OSError as exc:  # e.g. the state folder went with a deleted corpus
            log.warning("could not leave the exit record %s: %s", path, exc)

    def _publish_loop(self) -> None:
        path: Path = self.settings.daemon_state_path
        while not self._stop.is_set():
            try:
                write_state(path, self.snapshot())
            except Exception:  # a full disk must not kill the daemon; status will show it stale
                log.exception("could not write %s", path)
            self._stop.wait(STATE_EVERY_S)


def _latest_error(parts: dict[str, dict[str, Any]]) -> str | None:
    """The most recent of the parts' last errors, with its part and time (ISO stamps sort)."""
    dated = [
        (part["last_error_at"], name, part["last_error"]) for name, part in parts.items() if part.get("last_error")
    ]
    if not dated:
        return None
    at, name, message = max(dated)
    return f"{name} at {at}: {message}"


def setup_logging(level: str, log_file: str | None) -> None:
    handlers: list[logging.Handler] = [logging.StreamHandler()]  # stderr: stdout stays clean
    if log_file:
        handlers.append(logging.FileHandler(log_file, encoding="utf-8"))
    logging.basicConfig(
        level=level.upper(), handlers=handlers, force=True, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # Their debug output is one line per inotify event; keep it out of ours.
    for noisy in ("apscheduler", "watchdog"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))


def ignore_stop_signals() -> None:
    """Once the daemon has stopped, a further SIGINT / SIGTERM has nothing left to stop. Python resets
    its own handlers to the default at exit, so such a signal arriving while the interpreter shuts
    down killed a cleanly stopped daemon (exit -2 instead of 0: seen on a loaded CI machine under a
    burst of signals). Ignored handlers are left as they are; call from the main thread only."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
