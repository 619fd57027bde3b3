"""What a format reader hands the migration: items, each with the files it creates in the corpus.

A reader never writes. It walks a `SourceTree` and yields `Item`s (one source thing: a note, a
conversation, an entity, an attachment) and `ItemProblem`s (one source thing it could not read;
the rest goes on). Every output names the corpus path the reader *proposes*; the run decides the
final path (a name already taken gets a suffix) and rewrites this run's wikilinks to match, so a
reader links to another item by its proposed path: `wikilink(path, label)`.

Entities found in the source (an MCP memory graph's entities, a mem0 user, a note's people) are
not files yet: readers yield `Observation`s and the run clusters them across the whole source
(case, accents, aliases) before it compiles canonical pages and claim artifacts (entities.py).
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Literal, Protocol

Role = Literal["note", "session", "attachment", "evidence", "page", "artifact", "proposal", "quarantine"]


@dataclass(frozen=True)
class SourceFile:
    """One file inside the source: a folder's file, a zip member (nested zips joined with `!/`)."""

    rel: str  # posix path inside the source, never absolute and never with `..`
    size: int
    opener: object = field(repr=False, compare=False)  # () -> bytes; kept untyped to stay frozen and hashable
    streamer: object = field(default=None, repr=False, compare=False)  # () -> binary stream, or None

    def read(self) -> bytes:
        reader = self.opener
        assert callable(reader)
        data = reader()
        assert isinstance(data, bytes)
        return data

    def open(self) -> IO[bytes]:
        """The file as a binary stream, for formats read a part at a time (a large `.enex` must not
        be held whole). Files without a streamer are read whole into memory."""
        streamer = self.streamer
        if streamer is None:
            return io.BytesIO(self.read())
        assert callable(streamer)
        stream = streamer()
        assert isinstance(stream, io.IOBase)
        return stream  # type: ignore[return-value]

    @property
    def name(self) -> str:
        return self.rel.rsplit("/", 1)[-1]

    @property
    def suffix(self) -> str:
        name = self.name
        return name.rsplit(".", 1)[-1].lower() if "." in name else ""


@dataclass(frozen=True)
class Output:
    """One file the item creates: `path` is the proposed corpus path, `data` its bytes."""

    path: str
    data: bytes
    role: Role = "note"


@dataclass(frozen=True)
class Observation:
    """A statement about an entity found in the source (becomes a claim on its canonical page)."""

    name: str  # as written in the source
    family: str  # person | project | concept | decision
    statement: str
    kind: str = "fact"  # fact | preference | state | decision | note (claims.CLAIM_KINDS)
    aliases: tuple[str, ...] = ()
    links: tuple[str, ...] = ()  # names of related entities ("works on X"): links on the page
    at: str | None = None  # when the source says it was true (ISO), else the run's time
    source: str = ""  # where in the source it was said (`memory.jsonl#Ada`): the claim artifact's `source`
    evidence: str | None = None  # proposed corpus path of the imported note that holds it (linked)


@dataclass
class Item:
    """One source thing and what it becomes. `key` is stable across runs of the same source (it
    identifies the thing, not its content); `digest` changes when the thing's content does."""

    key: str
    kind: str  # note, session, attachment, evidence, entity-source, quarantine, …: counted in the plan
    source: str  # where in the source it came from (SourceFile.rel, plus `#id` inside a file)
    digest: str
    outputs: list[Output] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)
    note: str = ""  # why it went where it went (quarantine reason, classification), for the report
    llm: bool = True  # `--llm` may read a note/evidence item's text for claims (False: already typed)


@dataclass(frozen=True)
class ItemProblem:
    """A source thing that could not be imported; `code` is stable (see problems in README)."""

    source: str
    code: str
    message: str


Yielded = Item | ItemProblem


class Reader(Protocol):
    """One source format. `detect` scores a tree (0: not this format); `read` yields its items."""

    name: str

    def detect(self, tree: SourceTreeLike) -> int: ...

    def read(self, tree: SourceTreeLike, ctx: ReadContext) -> Iterator[Yielded]: ...


class SourceTreeLike(Protocol):
    label: str  # a short name for the source (the folder's or file's stem), slug material
    hidden_dirs: set[str]  # hidden folders the file list leaves out (`.obsidian`, `vault/.git`)

    def files(self) -> Iterator[SourceFile]: ...

    def get(self, rel: str) -> SourceFile | None: ...


@dataclass(frozen=True)
class ReadContext:
    """What a reader may use besides the tree: where its notes go (`into`, a corpus folder, no
    trailing slash) and the run's time (ISO, for outputs that need a date and have none)."""

    into: str
    now: str


def digest_of(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass") if isinstance(part, str) else part)
        h.update(b"\x00")
    return h.hexdigest()


def wikilink(path: str, label: str | None = None) -> str:
    """A link to another output of this run by its proposed corpus path (the run rewrites it when
    the path changes). `label` is what the reader shows; `|` and `]` in it are escaped away."""
    target = path[:-3] if path.endswith(".md") else path
    if label is None:
        return f"[[{target}]]"
    clean = label.replace("|", "-").replace("]", ")").replace("[", "(").replace("\n", " ").strip()
    return f"[[{target}|{clean}]]" if clean else f"[[{target}]]"
