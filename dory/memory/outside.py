"""Links to notes the durable index leaves out on purpose: session transcripts and the compiled wiki.

The link graph only knows indexed notes, so a link to `wiki/hot` or to a transcript under
`logs/sessions/` is broken for it, though the file is there (digests cite transcripts, the wiki links
its own pages). This finds such a file on disk, reading the target as the graph reads it: from the
linking note's folder, then from the corpus root.
"""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path

from dory.corpus.paths import SESSIONS_ROOT, WIKI_ROOT
from dory.memory import links

OUTSIDE_INDEX = (SESSIONS_ROOT + "/", WIKI_ROOT + "/")


def outside_index_target(corpus: Path, source: str, kind: str, target: str) -> str | None:
    """The corpus path of the transcript or wiki page a link in `source` points to, or None."""
    target = target.partition("#")[0]
    candidates: list[str | None] = []
    if kind == "markdown" or links.is_explicit_path(target):
        candidates.append(links.relative_path(source, target))
    if not links.is_explicit_path(target):
        candidates.append(links.relative_path("", target))
    for rel in candidates:
        if rel and rel.startswith(OUTSIDE_INDEX):
            name = rel if rel.lower().endswith(".md") else rel + ".md"
            with suppress(OSError):  # a hostile target (a name too long) is just not a file
                if (corpus / name).is_file():
                    return name
    return None
