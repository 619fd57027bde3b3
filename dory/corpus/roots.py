"""Where a corpus path lives: in the corpus folder, or in the output folder of Dory's own files.

A corpus Dory owns keeps everything in one folder, and nothing here changes anything for it. A
folder of notes added with `dory add` (an Obsidian vault) is only read: the folders Dory generates
(`OUTPUT_FOLDERS`: digests, the wiki, proposals, maintenance reports, session transcripts) live in
an output folder of their own, with the same layout, so `digests/daily/2026-11-20.md` is
`<output>/digests/daily/2026-11-20.md` and every citation, link and path reads the same either way.
The price: notes of the vault under those folder names are not read (`dory add` names any it finds).
With no output folder (`--no-output`) those paths exist nowhere.

Writes into the corpus folder of a read-only corpus are refused here with `read_only_corpus`, before
anything is written; the journal refuses them too (dory/corpus/journal.py), as the last line.

The durable index of a corpus with an output folder covers both: the vault without Dory's folders,
plus the output's notes (digests and reports are searchable, as in a corpus Dory owns).
"""

from __future__ import annotations

from pathlib import Path

from dory.config import CONFIG_FILE, Settings
from dory.corpus.paths import SESSIONS_ROOT, WIKI_ROOT, IgnoreRules
from dory.corpus.scan import ScanResult, scan_corpus, scan_paths
from dory.errors import NotFound, ReadOnlyCorpus

OUTPUT_FOLDERS = (
    "digests",
    WIKI_ROOT,
    SESSIONS_ROOT,
    "inbox/proposed",
    "inbox/applied",
    "inbox/rejected",
    "inbox/maintenance",
)


def is_output_path(rel: str) -> bool:
    return any(rel == folder or rel.startswith(folder + "/") for folder in OUTPUT_FOLDERS)


def holds_output(rel: str, is_dir: bool) -> bool:
    """`rel` is in one of Dory's folders, or is a folder above one (`inbox` moved in whole)."""
    return is_output_path(rel) or (is_dir and any(folder.startswith(rel + "/") for folder in OUTPUT_FOLDERS))


def separate(settings: Settings) -> bool:
    """True when Dory's folders are not inside the corpus folder (an output folder of their own, or none)."""
    return settings.output_root != settings.corpus


def read_root(settings: Settings, rel: str) -> Path:
    """The folder `rel` is read from. NotFound for a generated path when output is off."""
    if not separate(settings) or not is_output_path(rel):
        return settings.corpus
    if settings.output_root is None:
        raise NotFound(f"{rel}: this corpus has no generated output (it was added with --no-output)", path=rel)
    return settings.output_root


def output_root(settings: Settings, what: str) -> Path:
    """The folder generated output is written to; ReadOnlyCorpus when the corpus has none."""
    if settings.output_root is None:
        name = settings.name or str(settings.corpus)
        raise ReadOnlyCorpus(
            f"cannot write {what}: the corpus {name} has no output folder (added with --no-output); "
            f"give it one with `dory add {settings.corpus} --name {name} --output DIR --replace`",
            corpus=str(settings.corpus),
        )
    return settings.output_root


def check_writable(settings: Settings, what: str) -> None:
    """Refuse a write into the corpus folder of a read-only corpus (nothing is written)."""
    if settings.read_only:
        name = settings.name or str(settings.corpus)
        raise ReadOnlyCorpus(
            f"cannot write {what}: the corpus {name} is read-only (Dory never writes into {settings.corpus}); "
            f"to allow it, add it again with `dory add {settings.corpus} --name {name} --writable --replace`",
            corpus=str(settings.corpus),
        )


def write_root(settings: Settings, rel: str) -> Path:
    """The folder a write of `rel` goes to, or ReadOnlyCorpus."""
    if separate(settings) and is_output_path(rel):
        return output_root(settings, rel)
    check_writable(settings, rel)
    return settings.corpus


def settings_file(settings: Settings) -> tuple[Path, tuple[str, ...]]:
    """Where Dory writes a setting it changes (`dory capture on`), and the table holding the
    sections: the corpus's dory.toml, or its entry in corpora.toml for a folder Dory must not
    write into."""
    if settings.owned or settings.user_config is None or settings.name is None:
        return settings.corpus / CONFIG_FILE, ()
    return settings.user_config, ("corpora", settings.name)


def config_files(settings: Settings) -> list[Path]:
    """The files settings are read from (the daemon re-reads them when they change)."""
    return [settings.corpus / CONFIG_FILE] + ([settings.user_config] if settings.user_config else [])


def writable_roots(settings: Settings) -> list[Path]:
    """The folders Dory may write into (and so may clean up after a crashed write of its own)."""
    found = [] if settings.read_only else [settings.corpus]
    if separate(settings) and settings.output_root is not None:
        found.append(settings.output_root)
    return found


# -- the durable index's view: the vault without Dory's folders, plus the output's notes -------------
def scan_notes(settings: Settings, rules: IgnoreRules, paths: list[str] | None = None) -> ScanResult:
    """What the durable index scans: the whole corpus, or just `paths` (as the watcher names them)."""
    if not separate(settings):
        return scan_corpus(settings.corpus, rules) if paths is None else scan_paths(settings.corpus, rules, paths)
    vault_rules = IgnoreRules(rules.globs, rules.excluded_dirs | set(OUTPUT_FOLDERS))
    if paths is None:
        notes, wanted, scope = scan_corpus(settings.corpus, vault_rules), list(OUTPUT_FOLDERS), None
    else:
        vault_paths = [rel for rel in paths if not is_output_path(rel)]
        notes = scan_paths(settings.corpus, vault_rules, vault_paths)
        wanted = [rel for rel in paths if is_output_path(rel)]
        # A vault folder above Dory's folders (`inbox`, a rename of the whole tree) covers them too.
        wanted += [f for f in OUTPUT_FOLDERS for rel in vault_paths if f.startswith(rel.rstrip("/") + "/")]
        scope = tuple(sorted(set(paths)))
    generated = _scan_output(settings.output_root, rules, wanted)
    return ScanResult(
        files={**notes.files, **generated.files},
        skipped=notes.skipped + generated.skipped,
        complete=notes.complete and generated.complete,
        scope=scope,
        leftovers=notes.leftovers + generated.leftovers,
    )


def _scan_output(output: Path | None, rules: IgnoreRules, wanted: list[str]) -> ScanResult:
    """A missing output folder (nothing generated yet, or none at all) holds no notes."""
    if output is None or not wanted or not output.is_dir():
        return ScanResult()
    return scan_paths(output, rules, sorted(set(wanted)))
