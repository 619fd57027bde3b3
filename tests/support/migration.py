"""Shared by the migration tests (tests/migrate): the migrate callable's type, a tree digest, and a
small mixed source with a corpus it clashes with."""

from __future__ import annotations

import hashlib
import re
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

from dory.migrate.formats.generic import target_path
from dory.migrate.model import Item, Observation, Output, ReadContext, SourceTreeLike, Yielded, digest_of
from dory.models import MigrateResponse

Migrate = Callable[..., MigrateResponse]


def tree_hashes(root: Path) -> dict[str, str]:
    """{relative path: sha256} of every file under root except derived state (.dory/)."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".dory" not in p.relative_to(root).parts
    }


# -- a small mixed source and a corpus it clashes with (the crash, resume and undo tests) ----------
MINE = "knowledge/vault/Beta.md"  # the corpus's own note, whose name the source's Beta.md wants
MIXED_SOURCE: dict[str, bytes] = {
    "Alpha.md": b"# Alpha\n\nThe heron waits by the weir.\n",
    "Beta.md": b"# Beta\n\nKingfishers nest in the bank.\n",
    "Case.md": b"# Case\n\nupper case name\n",
    "case.md": b"# case\n\nlower case name: the same name on a case-insensitive disk\n",
    "Zeta.md": b"# Zeta\n\nSee [[knowledge/vault/Beta|Beta]] and ![[knowledge/vault/pic.png]].\n",
    "sub/Gamma.md": b"# Gamma\n\nOtters in the sub folder.\n",
    "sub/deeper/Delta.md": b"# Delta\n\nA note two folders down.\n",
    "data.json": b'{"bird": "heron", "count": 3}',
    "table.csv": b"name,colour\nheron,grey\nkingfisher,blue\n",
    "pic.png": b"\x89PNG\r\n\x1a\n" + bytes(range(256)),
    "blob.bin": b"\x00\x01\x02",
}
MIXED_ZIP = {"inner/Epsilon.md": b"# Epsilon\n\nFrom inside a zip in the folder.\n"}


def mixed_source(base: Path, name: str = "vault") -> Path:
    """A folder with notes (a clash with the corpus, a case clash inside the source, a link to a
    renamed note), JSON and CSV evidence, an image, a file no reader takes and a zip of notes."""
    src = base / name
    for rel, data in MIXED_SOURCE.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(data)
    with zipfile.ZipFile(src / "archive.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        for rel, data in MIXED_ZIP.items():
            archive.writestr(rel, data)
    return src


def seed_corpus(root: Path) -> Path:
    """A corpus holding one note of its own, named as the source's Beta.md wants to be."""
    (root / MINE).parent.mkdir(parents=True, exist_ok=True)
    (root / MINE).write_bytes(b"my own Beta, not the source's\n")
    return root


# A run's id, the day it ran (frontmatter `created:` of evidence and reports) and whether it resumed:
# the only things two runs of the same source may differ in.
_RUN_ID = re.compile(rb"mig-\d{8}-\d{6}-[0-9a-f]{6}")
_DAY = re.compile(rb"^created: \d{4}-\d\d-\d\d$", re.M)
_RESUMED = re.compile(rb"^- resumed an interrupted run: (yes|no)$", re.M)


def comparable(root: Path) -> dict[str, bytes]:
    """Every file of the corpus but derived state, run ids, days and the resumed flag masked. The
    manifests are left out (lines are repeated by a resumed run): compare them with `manifest.read`."""
    found = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if not p.is_file() or ".dory" in p.relative_to(root).parts or rel.endswith(".manifest.jsonl"):
            continue
        data = _RESUMED.sub(b"- resumed: MASKED", _DAY.sub(b"created: DAY", _RUN_ID.sub(b"RUN", p.read_bytes())))
        found[_RUN_ID.sub(b"RUN", rel.encode()).decode()] = data
    return found


def temp_leftovers(root: Path) -> list[str]:
    """Temporary files of Dory's writes anywhere in the corpus (`.name.dory-new-…tmp`)."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if ".dory-" in p.name)


# -- a test format whose items carry entity observations (claim artifacts and canonical pages) ------
class PeopleReader:
    """Format `people-lines`: each file's lines `Name: statement` are observations about people,
    dated 2024-03-01 (so every run proposes the very same artifacts); the file itself is a note.
    Tests register it with monkeypatch on `dory.migrate.formats.READERS` and pass --from."""

    name = "people-lines"

    def detect(self, tree: SourceTreeLike) -> int:
        return 0

    def read(self, tree: SourceTreeLike, ctx: ReadContext) -> Iterator[Yielded]:
        for file in tree.files():
            data = file.read()
            lines = [line.split(":", 1) for line in data.decode().splitlines() if ":" in line]
            seen = [Observation(name.strip(), "person", text.strip(), at="2024-03-01") for name, text in lines]
            out = Output(target_path(ctx.into, file.rel, ".md"), b"# " + file.name.encode() + b"\n\n" + data, "note")
            yield Item(f"file:{file.rel}", "note", file.rel, digest_of(data), [out], observations=seen)


def people_source(base: Path) -> Path:
    """Two files naming two people (one in two spellings): 3 claims, 2 pages, 2 notes."""
    src = base / "people"
    src.mkdir(parents=True, exist_ok=True)
    (src / "a.people").write_text("Ada Lovelace: wrote the first program\nada lovelace: liked poetry\n")
    (src / "b.people").write_text("Charles Babbage: designed the analytical engine\n")
    return src
