"""Where agent harnesses keep their transcripts on this machine, and which files there are transcripts.

Shared by the one-shot import (`dory sessions import-local`) and the daemon's capture, so both read
the same files: Claude Code's `~/.claude/projects/**/*.jsonl` (not `subagents/`: a subagent's answer
already reaches the main transcript as a tool result) and Codex's `~/.codex/sessions/**/*.jsonl`.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from dory.config import Settings
from dory.models import MAX_INGEST_BYTES
from dory.sessions.transcript import slug

Harness = Literal["claude-code", "codex"]
HARNESSES: tuple[Harness, ...] = ("claude-code", "codex")
# The harness's own default folder, and the older environment variable that moves it.
_DEFAULTS = {
    "claude-code": ("DORY_CLAUDE_PROJECTS_ROOT", "~/.claude/projects"),
    "codex": ("DORY_CODEX_SESSIONS_ROOT", "~/.codex/sessions"),
}


def this_device() -> str:
    return slug(socket.gethostname(), 40) or "unknown"


def harness_root(harness: str, settings: Settings, env: Mapping[str, str] | None = None) -> Path:
    """`[capture] claude_root` / `codex_root`, else the older variable, else the harness's default."""
    env = os.environ if env is None else env
    configured = settings.capture.claude_root if harness == "claude-code" else settings.capture.codex_root
    variable, default = _DEFAULTS[harness]
    return Path(configured or env.get(variable) or default).expanduser()


def is_transcript(root: Path, path: Path, harness: str) -> bool:
    """A `.jsonl` file below `root` that holds a session of its own."""
    if path.suffix != ".jsonl":
        return False
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        return False
    return not (harness == "claude-code" and "subagents" in parts)


def transcripts(
    root: Path, harness: str, since: float | None, warnings: list[str], max_bytes: int | None = MAX_INGEST_BYTES
) -> list[Path]:
    """The transcripts under `root` (modified at or after `since`, when given), in path order;
    unreadable files and files over `max_bytes` (read whole) are reported in `warnings` and left out."""
    if not root.is_dir():
        return []
    found = []
    for path in sorted(root.rglob("*.jsonl")):
        if not is_transcript(root, path, harness) or not path.is_file():
            continue
        try:
            st = path.stat()
        except OSError as exc:
            warnings.append(f"{path}: {exc.strerror}")
            continue
        if since is not None and st.st_mtime < since:
            continue
        if max_bytes is not None and st.st_size > max_bytes:
            warnings.append(f"{path}: {st.st_size} bytes is over the {max_bytes}-byte import cap; skipped")
            continue
        found.append(path)
    return found
