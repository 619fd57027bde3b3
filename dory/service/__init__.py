"""The service layer: the one API that every surface (CLI, HTTP, MCP) and the daemon call.

`DoryService` is bound to one corpus and serves many threads at once; see `api.py` for the
operations, `resources.py` for what they share and `owner.py` for the only code that writes the index.
"""

from dory.service.api import DoryService, init_corpus

__all__ = ["DoryService", "init_corpus"]
