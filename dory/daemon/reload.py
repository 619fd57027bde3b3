"""A changed dory.toml (or, for a corpus added with `dory add`, its corpora.toml), noticed by the
running daemon (checked at every heartbeat).

What can change under a running daemon is applied at once: `[jobs]` (schedules), `[capture]` and
`[digest]` (what the next job run reads). Any other section is read by parts that are built once
(the index, the embedder, the watcher, the HTTP server): the daemon logs which sections changed and
that a restart applies them, and goes on with what it has. A file that no longer loads (bad TOML, a
bad cron line) is reported and ignored until it is fixed. The environment (DORY_*) is the process's
own and cannot change while it runs; its values still win over the file's.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dory.config import SECTIONS, Settings
from dory.corpus.roots import config_files
from dory.errors import DoryError

log = logging.getLogger("dory.daemon")
RELOADABLE = ("jobs", "capture", "digest")


@dataclass(frozen=True)
class ConfigChange:
    settings: Settings  # the daemon's settings with the reloadable sections as the file says now
    applied: list[str]
    restart: list[str]


class ConfigWatch:
    def __init__(self, settings: Settings, load: Callable[[], Settings]) -> None:
        self.paths = config_files(settings)
        self.path = self.paths[-1]  # named in the log: the file a person edits for this corpus
        self._load = load  # settings as the daemon would read them now (file and environment)
        self._stamp = self._stat()
        self._seen = load()

    def _stat(self) -> tuple[tuple[int, int, int] | None, ...]:
        return tuple(_stamp(path) for path in self.paths)

    def check(self, current: Settings) -> ConfigChange | None:
        """The change to apply when dory.toml changed since the last look (logged either way)."""
        stamp = self._stat()
        if stamp == self._stamp:
            return None
        self._stamp = stamp
        try:
            fresh = self._load()
        except DoryError as exc:
            log.error("%s changed but cannot be used (%s); the daemon keeps its settings", self.path, exc.message)
            return None
        changed = [name for name in SECTIONS if getattr(fresh, name) != getattr(self._seen, name)]
        self._seen = fresh
        applied = [name for name in changed if name in RELOADABLE]
        restart = [name for name in changed if name not in RELOADABLE]
        if restart:
            log.warning(
                "%s changed [%s]: restart the daemon to apply that (systemctl --user restart dory-watch)",
                self.path,
                "], [".join(restart),
            )
        if not applied:
            return None
        log.info("%s changed: applied [%s]", self.path, "], [".join(applied))
        update = {name: getattr(fresh, name) for name in applied}
        return ConfigChange(current.model_copy(update=update), applied, restart)


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)
