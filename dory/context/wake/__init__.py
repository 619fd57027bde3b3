"""`dory wake`: the frozen block an agent reads at the start of a session (SPEC §5).

The block comes from core files in a per-profile order, an optional project state page, pinned
decisions and recent finished sessions. Sections are packed by priority (the order above): a section
over its own budget is cut line by line and says how to get the rest; a section with no room left is
listed in `omitted` and named on the block's last line. Whatever the corpus holds, the returned block
stays within the token budget and the character cap, because hooks silently cut what is over
(Claude Code keeps 10,000 characters of a SessionStart payload, field notes §3.12). The block
depends only on the files and the recent-session list, so the same corpus gives the same bytes.

The package holds the assembly (`assembly`: packing, budgets, truncation), the profiles (`profiles`), the
section readers (`sections`), the privacy rules (`privacy`) and what they share (`base`).
"""

from __future__ import annotations

from dory.context.wake.assembly import MAX_BUDGET, MAX_CHARS, build_wake
from dory.context.wake.base import RecentSession
from dory.context.wake.profiles import BUILTIN_PROFILES, PRIVACY_BOUNDARIES, PRIVACY_PROFILE, WRITING_VOICE
from dory.context.wake.sections import MAX_FILE_BYTES

__all__ = [
    "BUILTIN_PROFILES",
    "MAX_BUDGET",
    "MAX_CHARS",
    "MAX_FILE_BYTES",
    "PRIVACY_BOUNDARIES",
    "PRIVACY_PROFILE",
    "WRITING_VOICE",
    "RecentSession",
    "build_wake",
]
