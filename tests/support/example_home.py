"""The machine a README reader has, made in a temporary home folder for the example runs.

The examples name things a reader already has: agent transcripts under `~/.claude/projects` and
`~/.codex/sessions`, a note they edited (`new.md`), an export from another tool to migrate. The
home made here has exactly these, and nothing of the developer's own machine:

- `~/.claude/projects/my-app/5b6f9a1e-….jsonl`: the Claude Code transcript of tests/sessions/fixtures
  (a flaky login test, a redirect firing twice), the one the README's `5b6f` examples name;
- `~/.claude/projects/my-app/a17e….jsonl`: a Claude Code session of the same day (2026-11-20) in which
  the user states a preference, asks to remember a value and takes a decision: what the nightly
  digest and dreaming turn into proposals;
- `~/.codex/sessions/2026/11/21/rollout-….jsonl`: the Codex transcript of tests/sessions/fixtures;
- `~/new.md`: the espresso note as the reader rewrote it (the `replace --file new.md` example);
- `~/Obsidian/Main`: the vault of a reader who already has notes (the `dory add` example).

A source for `dory migrate SRC` is made where an example names it (support/migration_sources.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "sessions" / "fixtures"
CLAUDE_FIXTURE = "5b6f9a1e-2c3d-4e5f-8a9b-0c1d2e3f4a5b.jsonl"
CODEX_FIXTURE = "rollout-2026-11-21T09-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl"
DURABLE_SESSION = "a17e3c52-8d4b-4f6a-9c2e-5b7d1f0e3a96"
DAY = "2026-11-20"  # the day of the README's examples (`dory ops run daily-digest --period 2026-11-20`)

# (role, text): what a person says that is worth keeping, and the agent's answers.
DURABLE_TURNS = [
    ("user", "I prefer tabs over spaces in every Python file."),
    ("assistant", "Noted: tabs over spaces."),
    ("user", "Remember that the staging database listens on port 5433."),
    ("assistant", "I will use port 5433 for staging."),
    ("user", "We decided to deploy on Fridays only after the tests pass."),
    ("assistant", "Decision recorded: Friday deploys only with green tests."),
]

EDITED_NOTE = "# Espresso\n\n18 g in, 40 g out, 30 s: a little longer tastes better.\n"
VAULT = {
    ".obsidian/app.json": "{}\n",
    "Recipes/Espresso recipe.md": "---\ntags: [coffee]\n---\n# Espresso recipe\n\n18 g in, 36 g out, 28 s.\n",
    "Daily/2026-11-20.md": "# 2026-11-20\n\nTried the [[Espresso recipe]] with the new beans.\n",
}


def make_home(home: Path) -> Path:
    """The reader's home folder: transcripts of two harnesses and a note they edited."""
    claude = home / ".claude" / "projects" / "my-app"
    codex = home / ".codex" / "sessions" / "2026" / "11" / "21"
    claude.mkdir(parents=True)
    codex.mkdir(parents=True)
    shutil.copyfile(FIXTURES / CLAUDE_FIXTURE, claude / CLAUDE_FIXTURE)
    shutil.copyfile(FIXTURES / CODEX_FIXTURE, codex / CODEX_FIXTURE)
    (claude / f"{DURABLE_SESSION}.jsonl").write_text(claude_code_transcript(DURABLE_SESSION, DURABLE_TURNS))
    (home / "new.md").write_text(EDITED_NOTE, encoding="utf-8")
    for rel, text in VAULT.items():
        (home / "Obsidian" / "Main" / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / "Obsidian" / "Main" / rel).write_text(text, encoding="utf-8")
    return home


def claude_code_transcript(session_id: str, turns: list[tuple[str, str]]) -> str:
    """A Claude Code transcript (JSON lines, as ~/.claude/projects holds them), one minute per turn."""
    records = []
    for n, (role, text) in enumerate(turns):
        content: Any = text if role == "user" else [{"type": "text", "text": text}]
        records.append(
            {
                "parentUuid": f"u-{n - 1:04d}" if n else None,
                "isSidechain": False,
                "userType": "external",
                "cwd": "/home/dev/my-app",
                "sessionId": session_id,
                "version": "2.0.14",
                "type": role,
                "message": {"role": role, "content": content},
                "uuid": f"u-{n:04d}",
                "timestamp": f"{DAY}T14:{n:02d}:00.000Z",
            }
        )
    return "".join(json.dumps(record) + "\n" for record in records)
