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
- `~/new.md`: the espresso note as the reader rewrote it (the `replace --file new.md` example).

A source for `dory migrate SRC` is made where the example names it, when nothing is there yet
(`migration_source`): by `--from FORMAT` when given, else by the name (a Notion export zip, a
ChatGPT `conversations.json`, or a folder of markdown notes such as an Obsidian vault).
"""

from __future__ import annotations

import json
import shutil
import zipfile
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


# -- sources for `dory migrate` ------------------------------------------------------------------
def migration_source(path: Path, from_format: str | None) -> str:
    """Make a small source at `path` for a migrate example; returns what it made (for the report)."""
    name = path.name.lower()
    if from_format == "notion" or (from_format is None and "notion" in name):
        _notion_zip(path)
        return "a Notion export zip (two linked pages)"
    if from_format == "chatgpt" or (from_format is None and ("conversations" in name or "chatgpt" in name)):
        _chatgpt_export(path)
        return "a ChatGPT conversations.json (one conversation)"
    _markdown_folder(path)
    return "a folder of markdown notes with [[wikilinks]] (an Obsidian-style vault)"


def _markdown_folder(path: Path) -> None:
    notes = {
        "Home.md": "# Home\n\nProjects: [[Garden]]. Reading list in [[Books]].\n",
        "Garden.md": "---\ntags: [outdoors]\n---\n# Garden\n\nTomatoes go in after the last frost.\n",
        "Books/Books.md": "# Books\n\n- The Overstory\n- Piranesi\n",
    }
    for rel, text in notes.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text, encoding="utf-8")


def _notion_zip(path: Path) -> None:
    home, sub = "104d4deadd2c803a935ef9917447529e", "7dd41ab5869e464a88fc21637efb50f3"
    export = "Export-99d4faad-5bc1-4fef-82ac-5f6c7a957b12"
    pages = {
        f"{export}/Home {home}.md": f"# Home\n\nSee [Garden](Home%20{home}/Garden%20{sub}.md).\n",
        f"{export}/Home {home}/Garden {sub}.md": f"# Garden\n\nBack to [Home](../Home%20{home}.md).\n",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in pages.items():
            archive.writestr(name, text)


def _chatgpt_export(path: Path) -> None:
    def node(nid: str, role: str | None, text: str, parent: str | None, child: str | None) -> dict[str, Any]:
        message = None
        if role is not None:
            message = {
                "author": {"role": role},
                "content": {"content_type": "text", "parts": [text]},
                "create_time": 1.7e9,
            }
        return {"id": nid, "message": message, "parent": parent, "children": [child] if child else []}

    mapping = {
        "root": node("root", None, "", None, "q"),
        "q": node("q", "user", "How long do tomato seeds take to sprout?", "root", "a"),
        "a": node("a", "assistant", "Five to ten days at 21-27 °C.", "q", None),
    }
    conversation = {"title": "Tomato seeds", "create_time": 1.7e9, "mapping": mapping, "id": "conv-1"}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([conversation]), encoding="utf-8")
