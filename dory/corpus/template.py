"""`dory init`: copy the starting corpus into a folder without overwriting anything there."""

from __future__ import annotations

import shutil
from pathlib import Path

import dory
from dory.errors import ConfigError


def template_dir() -> Path:
    """The template ships inside the wheel; an editable install reads it from the repository."""
    package = Path(dory.__file__).parent
    for candidate in (package / "_corpus_template", package.parent / "corpus-template"):
        if candidate.is_dir():
            return candidate
    raise ConfigError("the corpus template is missing from this installation; reinstall dory")


def copy_template(target: Path, bare: bool = False) -> list[str]:
    """Copy missing template files into `target`; returns the relative paths created. `bare` copies
    the layout only (folders, dory.toml, .gitignore): no sample or starter notes."""
    source = template_dir()
    if target.exists() and not target.is_dir():
        raise ConfigError(f"{target} is a file, not a corpus folder", path=str(target))
    created = []
    for item in sorted(source.rglob("*")):
        rel = item.relative_to(source)
        dest = target / rel
        if item.is_dir():
            dest.mkdir(parents=True, exist_ok=True)
        elif bare and item.suffix == ".md":
            continue
        elif not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(item, dest)
            created.append(rel.as_posix())
    return created
