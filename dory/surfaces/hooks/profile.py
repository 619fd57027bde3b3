"""The wake profile for a session, chosen by the folder the agent works in.

A folder inside a git work tree, or holding a project manifest, is code: the `coding` profile,
with the project named after the repository's folder (its `projects/<slug>/state.md` joins the
block when the corpus has one; otherwise wake notes it and carries on). Anywhere else: `default`.
Kept deliberately simple: `--profile` and `--project` on the hook command override it.
"""

from __future__ import annotations

from pathlib import Path

CODE_MARKERS = ("pyproject.toml", "package.json", "Cargo.toml", "go.mod", "pom.xml", "build.gradle", "Gemfile")


def choose(cwd: str | None) -> tuple[str, str | None]:
    """(profile, project) for a session working in `cwd`."""
    if not cwd:
        return "default", None
    folder = Path(cwd)
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return "coding", candidate.name or None
    if any((folder / marker).is_file() for marker in CODE_MARKERS):
        return "coding", folder.name or None
    return "default", None
