"""`dory active-memory`: a staged, deadline-bound retrieval for one prompt (SPEC §5).

The stages and their order are in `run`; the deadline between them in `deadline`; the `auto` profile in
`classify`; which pages a profile may quote in `policy`; admission and the block's text in `block`.
"""

from __future__ import annotations

from dory.context.active.policy import PageMeta
from dory.context.active.run import ActiveDeps, active_memory

__all__ = ["ActiveDeps", "PageMeta", "active_memory"]
