"""The service layer: the one API that every surface (CLI, HTTP, MCP) and the daemon call.

`DoryService` is bound to one corpus and serves many threads at once; see `api.py` for the
operations, `resources.py` for what they share and `owner.py` for the only code that writes the index.

The names below load on first use: importing a light module of this package (settings, control)
must not import the whole service (SPEC §11: a one-shot command loads only what it needs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dory.service.api import DoryService, init_corpus

__all__ = ["DoryService", "init_corpus"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from dory.service import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
