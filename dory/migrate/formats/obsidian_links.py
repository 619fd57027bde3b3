"""Where the links of an Obsidian vault point, and which of them must change when the vault is copied.

Obsidian finds `[[Name]]` by its path from the vault root, then by file name anywhere in the vault
(the shortest path first), and a partial path `[[folder/Name]]` by the end of a path. Dory's link
graph follows the same rules (dory.memory.graph.Names), so one table of each side answers both
questions: which file a link means in the vault, and where Dory would send the same words once the
notes sit at their corpus paths. A note link is rewritten only when the two differ. Attachments are
found the same way by their full file name (`photo.jpg`), and their links always get the full path.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from urllib.parse import unquote

from dory.memory.graph import Names
from dory.memory.links import is_explicit_path, link_key, relative_path

LINK = re.compile(
    r"(?P<wbang>!?)\[\[(?P<inner>[^\[\]\n]+)\]\]"
    r"|(?P<mbang>!?)\[(?P<label>[^\[\]\n]*)\]\((?P<href><[^<>\n]+>|[^()\s<>]+)\)"
)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def names_of(paths: Iterable[str]) -> Names:
    """Dory's name table over `paths` alone (as graph.names builds it over the index)."""
    table = Names()
    for path in sorted(paths):
        key = link_key(path)
        table.key_of[path] = key
        table.by_key.setdefault(key, path)
        table.by_stem.setdefault(key.rsplit("/", 1)[-1], []).append(path)
    for group in table.by_stem.values():
        group.sort(key=lambda p: (len(p), p))
    return table


class VaultLinks:
    """The vault's files (vault path → proposed corpus path) and the link rewriting over them."""

    def __init__(self, proposed: dict[str, str]) -> None:
        self.proposed = proposed
        notes = [rel for rel in proposed if rel.lower().endswith(".md")]
        self.vault_notes = names_of(notes)
        self.corpus_notes = names_of(proposed[rel] for rel in notes)
        self.files: dict[str, str] = {}  # link key of a non-note file's vault path → that path
        self.by_name: dict[str, list[str]] = {}  # a non-note file's name, lower case → its paths
        for rel in sorted(proposed):
            if not rel.lower().endswith(".md"):
                self.files.setdefault(link_key(rel), rel)
                self.by_name.setdefault(link_key(posixpath.basename(rel)), []).append(rel)
        for group in self.by_name.values():
            group.sort(key=lambda p: (len(p), p))

    def rewrite(self, match: re.Match[str], rel: str, source: str) -> str:
        """The link `match` (a LINK match) written in vault note `rel`, copied to corpus path `source`."""
        if match.group("inner") is not None:
            return self._wikilink(match, rel, source)
        return self._markdown(match, rel, source)

    def _wikilink(self, match: re.Match[str], rel: str, source: str) -> str:
        written = match.group(0)
        target, bar, label = match.group("inner").partition("|")
        escaped = target.endswith("\\")  # `[[note\|label]]` inside a table cell
        target = target.removesuffix("\\")
        name, hash_, heading = target.partition("#")
        if not name.strip():
            return written  # `[[#Heading]]`: this very note
        sep = "\\|" if escaped else "|"
        attachment = self.attachment(name.strip(), rel)
        if attachment is not None:
            path = self.proposed[attachment]
            shown = f"{sep}{label}" if bar else ""  # an image's `|300` is its size: kept as written
        else:
            found = self._moved_note(name.strip(), rel, source)
            if found is None:
                return written
            path = found.removesuffix(".md")
            shown = f"{sep}{label if bar else target.strip()}"
        return f"{match.group('wbang')}[[{path}{hash_}{heading}{shown}]]"

    def _moved_note(self, name: str, rel: str, source: str) -> str | None:
        """The corpus path of the note `[[name]]` means in the vault, when what is written would not
        reach it in the corpus; None when the link needs no change (or points at nothing)."""
        key = link_key(name)
        hit = self.vault_notes.resolve(rel, "wikilink", name, key)
        if hit is None:
            return None
        wanted = self.proposed[hit]
        return None if self.corpus_notes.resolve(source, "wikilink", name, key) == wanted else wanted

    def attachment(self, name: str, rel: str) -> str | None:
        """The vault path of the non-note file `name` means, seen from note `rel`."""
        if is_explicit_path(name):
            path = relative_path(rel, name)
            return self.files.get(link_key(path)) if path is not None else None
        key = link_key(name)
        if key in self.files:
            return self.files[key]
        found = self.by_name.get(key.rsplit("/", 1)[-1], [])
        hits = [path for path in found if "/" not in key or link_key(path).endswith("/" + key)]
        return hits[0] if hits else None

    def _markdown(self, match: re.Match[str], rel: str, source: str) -> str:
        written = match.group(0)
        href = match.group("href")
        href = href[1:-1].strip() if href.startswith("<") else href
        if not href or href.startswith("#") or _SCHEME.match(href):
            return written
        path, hash_, anchor = href.partition("#")
        wanted = unquote(path)
        hit = self._file_at(relative_path(rel, wanted)) or self._file_at(wanted.lstrip("/"))
        if hit is None:
            return written
        new = posixpath.relpath(self.proposed[hit], posixpath.dirname(source))
        if new == posixpath.normpath(wanted):
            return written
        quoted = new.replace("%", "%25").replace(" ", "%20").replace("(", "%28").replace(")", "%29")
        return f"{match.group('mbang')}[{match.group('label')}]({quoted}{hash_}{anchor})"

    def _file_at(self, path: str | None) -> str | None:
        if path is None:
            return None
        key = link_key(path)
        return self.vault_notes.by_key.get(key) or self.files.get(key)
