"""Reading one note for a caller: the path checks every surface relies on, then the document."""

from __future__ import annotations

from dory.config import Settings
from dory.corpus.document import Document, ReadProblem, read_document
from dory.corpus.paths import IgnoreRules, normalize_rel, resolve_note
from dory.corpus.roots import read_root
from dory.errors import UnreadableFile


def read_note(settings: Settings, path: str) -> Document:
    """The note at a caller's `path`: refused outside the corpus, in ignored folders (`.git/`,
    `.dory/`, the quarantine) and for anything but a markdown file; UnreadableFile when it cannot be read.
    Dory's own folders (digests, transcripts, the wiki) are read from the corpus's output folder."""
    root = read_root(settings, normalize_rel(path))
    rel, _ = resolve_note(root, path, IgnoreRules(settings.index.ignore))
    try:
        return read_document(root, rel, settings.index.max_file_bytes)
    except ReadProblem as problem:
        raise UnreadableFile(f"{rel}: {problem.detail}", path=rel, reason=problem.reason) from problem
