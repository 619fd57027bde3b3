"""Vaults Dory must not write into: a small Obsidian-like fixture, a slice of the real obsidian-hub vault
from the shared mdcorpus archive, and a fingerprint of a whole tree that changes with any byte,
mtime, mode or added file (a file created and removed again changes its folder's mtime)."""

from __future__ import annotations

import hashlib
import os
import tarfile
from pathlib import Path

import pytest

from dory.corpus.paths import UNSERVED_DIRS
from tests.conftest import write_files

MDCORPUS = Path(__file__).resolve().parents[3] / "shared" / "bench" / "mdcorpus.tar.gz"
HUB = "mdcorpus/corpus/obsidian-hub/"

FIXTURE_VAULT: dict[str, str | bytes] = {
    ".obsidian/app.json": '{"alwaysUpdateLinks": true}\n',
    ".obsidian/workspace.json": '{"main": {"id": "a1"}}\n',
    "Welcome.md": "# Welcome\n\nThis vault holds [[Espresso]] notes and [[Maria]].\n",
    "people/Maria.md": "---\ntype: person\naliases: [Mary]\n---\n# Maria\n\nMaria roasts her own espresso beans.\n",
    "Coffee/Espresso.md": (
        "---\ntags: [coffee, recipe]\n---\n# Espresso\n\n18 g in, 36 g out, 28 s. See [[Grinder]].\n"
    ),
    "Coffee/Grinder.md": "# Grinder\n\nA flat burr grinder set to 2.5 for espresso.\n",
    "inbox/Idea.md": "# Idea\n\nA note in the vault's own inbox: it is read like any other.\n",
    "Daily/2026-11-20.md": "---\ndate: 2026-11-20\n---\n# 2026-11-20\n\n- [ ] call the roaster about the blend\n",
    "Broken.md": "---\ntitle: [unclosed\n---\n# Broken frontmatter\n\nStill searchable as plain text.\n",
    "attachments/beans.png": b"\x89PNG\r\n\x1a\n" + bytes(range(64)),
    "Templates/Daily.md": "---\ndate: {{date}}\n---\n# {{title}}\n",
    # Where a corpus Dory owns takes exports to migrate: in a vault Dory must not write into, left alone.
    "inbox/import/From Evernote.md": "# From Evernote\n\nA note someone dropped here by hand.\n",
}


def build_fixture(root: Path) -> Path:
    return write_files(root, FIXTURE_VAULT)


def slice_of_hub(root: Path, count: int = 300) -> Path:
    """The first `count` files of the real obsidian-hub vault in the archive, unchanged (skips the
    test when the shared archive is absent)."""
    if not MDCORPUS.is_file():
        pytest.skip(f"{MDCORPUS} is absent")
    taken = 0
    with tarfile.open(MDCORPUS, "r:gz") as archive:
        for member in archive:
            if not member.isfile() or not member.name.startswith(HUB):
                continue
            target = root / member.name[len(HUB) :]
            target.parent.mkdir(parents=True, exist_ok=True)
            source = archive.extractfile(member)
            assert source is not None
            target.write_bytes(source.read())
            taken += 1
            if taken == count:
                break
    assert taken == count, f"the archive holds only {taken} files of obsidian-hub"
    return root


def fingerprint(root: Path) -> dict[str, tuple[object, ...]]:
    """Every folder (mode, mtime) and every file (mode, size, mtime, sha256) and link under `root`."""
    found: dict[str, tuple[object, ...]] = {}
    for folder, dirs, files in os.walk(root):
        st = os.lstat(folder)
        found[os.path.relpath(folder, root) + "/"] = ("dir", st.st_mode, st.st_mtime_ns)
        for name in dirs + files:
            path = os.path.join(folder, name)
            st = os.lstat(path)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                found[rel] = ("link", os.readlink(path), st.st_mtime_ns)
            elif name in files:
                digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
                found[rel] = ("file", st.st_mode, st.st_size, st.st_mtime_ns, digest)
    return found


def notes_in(root: Path) -> list[str]:
    """The markdown notes Dory indexes there: every .md outside hidden and unserved folders
    (inbox/import/, the quarantine), hidden names left out."""
    found = []
    for folder, dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        dirs[:] = [d for d in dirs if not d.startswith(".") and os.path.normpath(f"{rel}/{d}") not in UNSERVED_DIRS]
        found += [
            os.path.relpath(os.path.join(folder, n), root) for n in files if n.endswith(".md") and not n.startswith(".")
        ]
    return sorted(found)
