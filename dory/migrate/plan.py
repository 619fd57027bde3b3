"""The first pass of a run: every item the source holds, what is new, and where each file goes.

The plan decides final paths before anything is written, so a name that is taken (a file already
in the corpus, or an earlier item of the same run) gets a suffix (`Name (2).md`) and every wikilink
of the run can be rewritten to it in the second pass. An item an earlier run imported with the same
content is skipped; one whose content changed is imported again under a new name and counted.
An interrupted run that is resumed keeps the paths its manifest already promised, and plans the
items it already wrote again without writing them: its renames, clashes and counts are those of the
whole run, and a later item links to an earlier one's final name as it would have without the crash.
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from dory.memory import safety
from dory.migrate.manifest import RunRecord
from dory.migrate.model import Item, ItemProblem, Observation, Output
from dory.migrate.names import with_suffix
from dory.models import MigrateClash, MigrateNote, MigrateProblem, MigrateQuarantined

QUARANTINE = "inbox/quarantine/migrations"
# What sends an imported note to quarantine instead of memory: text aimed at an agent reading it.
# Stray invisible or control characters are common in old notes and only reported by writes.
QUARANTINE_CODES = frozenset({"prompt_injection", safety.SUSPECT, "tag_characters", "bidi_control"})
SCANNED_ROLES = frozenset({"note", "evidence"})
# Output paths longer than these are refused (NAME_MAX is 255 bytes; a temporary name adds ~40).
MAX_PATH_BYTES = 1000
MAX_NAME_BYTES = 200


@dataclass
class Entry:
    key: str
    digest: str
    kind: str
    finals: list[str]  # the final path of each output, in output order
    resumed: bool = False  # paths taken from an interrupted attempt's intent
    # Written by an interrupted attempt of this very run: planned again (so the run's renames, clashes
    # and counts are whole and later items link to it right) but not written again.
    done: bool = False


@dataclass
class Plan:
    corpus: Path
    prior: dict[str, str]  # key -> digest imported by earlier runs still in place
    resumed: RunRecord | None = None
    prior_paths: dict[str, list[str]] = field(default_factory=dict)  # key -> where earlier runs put its outputs
    entries: dict[str, Entry] = field(default_factory=dict)
    items: Counter[str] = field(default_factory=Counter)
    destinations: Counter[str] = field(default_factory=Counter)
    renames: dict[str, str] = field(default_factory=dict)  # proposed path -> final path
    clashes: list[MigrateClash] = field(default_factory=list)
    quarantined: list[MigrateQuarantined] = field(default_factory=list)
    notes: list[MigrateNote] = field(default_factory=list)  # Item.note of the items this run imports
    problems: list[MigrateProblem] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)
    skipped_unchanged: int = 0
    changed_since: int = 0
    already_done: int = 0
    llm_inputs: list[int] = field(default_factory=list)  # characters of each LLM request (llm_claims.py)
    _taken: set[str] = field(default_factory=set)  # final paths of this run, case-folded
    _keys: set[str] = field(default_factory=set)
    _proposed: set[str] = field(default_factory=set)  # paths items of this run proposed, case-folded
    _not_folders: dict[str, bool] = field(default_factory=dict)  # corpus folder -> a file (or dead link) is there

    def add(self, found: Item | ItemProblem) -> bool:
        """Count an item and plan its files; True when this run will write it."""
        if isinstance(found, ItemProblem):
            self.problems.append(MigrateProblem(source=found.source, code=found.code, message=found.message))
            return False
        if found.key in self._keys:
            self.problems.append(MigrateProblem(source=found.source, code="duplicate_item", message=found.key))
            return False
        refused = [problem for problem in map(path_problem, (out.path for out in found.outputs)) if problem]
        if refused:  # a reader's bug must never write outside the corpus, into `.dory`, nor stop the run
            self.problems.append(MigrateProblem(source=found.source, code=refused[0][0], message=refused[0][1]))
            return False
        blocked = [out.path for out in found.outputs if self._blocked(out.path)]
        if blocked:
            why = f"the corpus has a file where a folder of {blocked[0]!r} should be"
            self.problems.append(MigrateProblem(source=found.source, code="path_blocked", message=why))
            return False
        self._keys.add(found.key)
        self.items[found.kind] += 1
        self.observations.extend(found.observations)
        done = self._done_before(found)
        if not done and not self._is_new(found):
            self._proposed.update(out.path.casefold() for out in found.outputs)
            self._follow(found)
            return False
        if found.note:
            self.notes.append(MigrateNote(source=found.source, note=found.note))
        ours = self._promised(found.key)
        finals = []
        for out in found.outputs:
            final = self._final(self._screened(out), ours)
            if final != out.path:
                self.renames[out.path] = final
            finals.append(final)
        for final in finals:
            self.destinations[final.split("/", 1)[0]] += 1
        self.entries[found.key] = Entry(found.key, found.digest, found.kind, finals, resumed=bool(ours), done=done)
        return not done

    def to_write(self) -> int:
        """How many items the write pass has left to write."""
        return sum(1 for entry in self.entries.values() if not entry.done)

    def _blocked(self, path: str) -> bool:
        """A folder on the way to `path` is a file (or a dangling link) in the corpus: nothing can be
        created there, and a suffix on the file's name would not help."""
        folder = posixpath.dirname(path)
        while folder:
            if folder not in self._not_folders:
                where = self.corpus / folder
                self._not_folders[folder] = (where.exists() or where.is_symlink()) and not where.is_dir()
            if self._not_folders[folder]:
                return True
            folder = posixpath.dirname(folder)
        return False

    def _screened(self, out: Output) -> str:
        """The output's path, or its place under quarantine when its text is aimed at agents."""
        if out.role not in SCANNED_ROLES or not out.path.endswith(".md"):
            return out.path
        text = out.data.decode("utf-8", "replace")
        found = [p for p in safety.scan_content(text, len(out.data) + 1) if p.code in QUARANTINE_CODES]
        if not found:
            return out.path
        path = f"{QUARANTINE}/{out.path}"
        self.quarantined.append(MigrateQuarantined(path=path, reason=found[0].message))
        return path

    def _done_before(self, item: Item) -> bool:
        done = self.resumed is not None and self.resumed.done.get(item.key) == item.digest
        self.already_done += done
        return done

    def _is_new(self, item: Item) -> bool:
        before = self.prior.get(item.key)
        if before == item.digest:
            self.skipped_unchanged += 1
            return False
        if before is not None:
            self.changed_since += 1
        return True

    def _follow(self, item: Item) -> None:
        """An item imported before stays where it was put; this run's links to it go there (an
        overlapping export into another folder, a name that had taken a suffix)."""
        if self.resumed is not None and item.key in self.resumed.intents:
            recorded = [out.path for out in self.resumed.intents[item.key][1]]
        else:
            recorded = self.prior_paths.get(item.key, [])
        for out, path in zip(item.outputs, recorded, strict=False):
            if path != out.path:
                self.renames[out.path] = path

    def _promised(self, key: str) -> set[str]:
        """Paths an interrupted attempt of this run already recorded for `key`."""
        if self.resumed is None or key not in self.resumed.intents:
            return set()
        return {out.path for out in self.resumed.intents[key][1]}

    def _final(self, proposed: str, ours: set[str]) -> str:
        final, n = proposed, 1
        while self._is_taken(final, ours):
            n += 1
            final = with_suffix(proposed, n)
        if final != proposed:
            if proposed.casefold() not in self._proposed:  # links to a path follow its first claimant
                self.renames[proposed] = final
            why = "an earlier item of this run" if proposed.casefold() in self._taken else "an existing file"
            self.clashes.append(MigrateClash(wanted=proposed, used=final, reason=f"the name is taken by {why}"))
        self._proposed.add(proposed.casefold())
        self._taken.add(final.casefold())
        return final

    def _is_taken(self, path: str, ours: set[str]) -> bool:
        if path.casefold() in self._taken:
            return True
        if path in ours:
            return False
        return (self.corpus / path).exists() or (self.corpus / path).is_symlink()

    def take(self, path: str) -> None:
        """A path used by a write that found its planned name taken after all."""
        self._taken.add(path.casefold())

    def fresh_path(self, proposed: str) -> str:
        return self._final(proposed, set())


def path_problem(path: str) -> tuple[str, str] | None:
    """Why an output path cannot be created, or None. It must be relative, of plain names, none
    hidden (so it stays inside the corpus and out of `.dory`), and short enough for every file
    system (a name leaves room for a clash suffix and a temporary file's prefix)."""
    parts = path.split("/")
    if any(p in ("", ".", "..") or p.startswith(".") for p in parts) or {"\\", "\x00"} & set(path):
        return "unsafe_path", f"not a plain path inside the corpus: {path!r}"
    if len(path.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        return "path_too_long", f"{path[:80]!r}… is longer than {MAX_PATH_BYTES} bytes"
    if any(len(p.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES for p in parts):
        return "path_too_long", f"a name in {path[:80]!r}… is longer than {MAX_NAME_BYTES} bytes"
    return None


_LINK = re.compile(r"(!?\[\[)([^\]|#\n]+)([\]|#])")


def rewrite_links(data: bytes, renames: dict[str, str]) -> bytes:
    """This run's wikilinks to a renamed path, pointed at the new one."""
    if not renames:
        return data
    targets = {_no_md(old): _no_md(new) for old, new in renames.items()}

    def swap(match: re.Match[str]) -> str:
        target = targets.get(match.group(2))
        return match.group(0) if target is None else f"{match.group(1)}{target}{match.group(3)}"

    text = data.decode("utf-8", "surrogateescape")
    return _LINK.sub(swap, text).encode("utf-8", "surrogateescape")


def _no_md(path: str) -> str:
    return path[:-3] if path.endswith(".md") else path
