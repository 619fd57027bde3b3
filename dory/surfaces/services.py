"""The Dory a surface talks to: a running `dory serve` (over HTTP), else the corpus in this process.

Both the CLI (through clikit) and the agent hooks open it here. Importing this module is cheap: the
service itself (numpy, faiss) and the HTTP client load only when one is opened.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dory.service import DoryService
    from dory.surfaces.http.client import RemoteService

    Service = DoryService | RemoteService


@contextmanager
def open_service(
    corpus: str | None,
    state_dir: str | None,
    server: str | None = None,
    token: str | None = None,
    surface: str = "cli",
    **overrides: Any,
) -> Iterator[Service]:
    """What the global options name: `server` (`--server` / DORY_URL), else the corpus."""
    if server:
        from dory.surfaces.http.client import RemoteService

        remote = RemoteService(server, token)
        try:
            yield remote
        finally:
            remote.close()
        return
    from dory.service import DoryService  # numpy, faiss: loaded when a command needs the corpus
    from dory.service.settings import open_settings

    settings = open_settings(corpus, {"state_dir": state_dir, **overrides})
    svc = DoryService(settings, surface=surface)
    try:
        yield svc
    finally:
        svc.close()
