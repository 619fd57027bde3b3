"""`dory migrate undo RUN`: remove exactly the files a run created that nobody has edited since.

A file is removed only when its bytes still hash to what the run wrote (recorded in the manifest),
the earlier version of an item whose source changed between two attempts of the run included.
The check and the removal are one step as far as an editor can tell: the file is renamed aside,
hashed again, and put back if it changed in between; an editor that saved a new file at the path
meanwhile keeps it. Edited files are kept and listed; the claim events the run added disappear with
their artifacts (the claim store is replayed from them). Folders the run created (recorded with its
intents) are removed once empty; a folder that was there before the run stays. The manifest stays,
marked `undone`, so the same source can be migrated again later.

An undo killed midway is simply run again: a file it had set aside is put back first (then removed
if still unchanged), and an undo that recorded itself but not yet its report section adds it. A
run already undone changes nothing: the answer lists its files as already gone (so the caller's
index forgets them, should a killed undo have removed them without telling it) and the kept ones.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path, PurePosixPath

from dory.corpus.atomic import file_hash, remove_if_unchanged, repair_leftovers
from dory.errors import NotFound
from dory.migrate import manifest, report
from dory.migrate.manifest import ManifestWriter, RunRecord
from dory.models import MigrateUndoRequest, MigrateUndoResponse


def undo(corpus: Path, req: MigrateUndoRequest) -> MigrateUndoResponse:
    path = manifest.manifest_path(corpus, req.run)
    record = manifest.read(path) if path.is_file() and "/" not in req.run else None
    if record is None:
        raise NotFound(f"no migration run {req.run!r}; `dory migrate runs` lists them", run=req.run)
    response = MigrateUndoResponse(run=req.run, dry_run=req.dry_run)
    outputs = {o.path: o for o in record.created() if _inside(corpus, o.path)}
    if record.undone is not None:  # nothing to do; say what is gone and kept, as the first undo did
        response.already_gone = sorted(rel for rel in outputs if not (corpus / rel).exists())
        response.kept_edited = [str(p) for p in record.undone.get("kept", [])]
        if not req.dry_run:
            _finish_report(corpus, record)
        return response
    if not req.dry_run:
        _put_back(corpus, outputs)
    for rel, out in sorted(outputs.items()):
        target = corpus / rel
        current = file_hash(target)
        if current is None:
            response.already_gone.append(rel)
        elif current != out.sha256:
            response.kept_edited.append(rel)
        elif req.dry_run:
            response.removed.append(rel)
        else:
            _remove(target, rel, out.sha256, response)
    for out in record.replaced():  # only where the file is still the run's own
        target = corpus / out.path
        if _inside(corpus, out.path) and file_hash(target) == out.sha256:
            if req.dry_run:
                response.removed.append(out.path)
            else:
                _remove(target, out.path, out.sha256, response)
    if req.dry_run:
        return response
    _remove_empty(corpus, record.folders)
    line = {
        "t": "undone",
        "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "removed": len(response.removed),
        "already_gone": len(response.already_gone),
        "kept": response.kept_edited,
    }
    writer = ManifestWriter(path)
    try:
        writer.write(line, sync=True)
    finally:
        writer.close()
    report.append_undo(corpus, req.run, len(response.removed), len(response.already_gone), response.kept_edited)
    return response


def _inside(corpus: Path, rel: str) -> bool:
    """A path the manifest may name: relative, inside the corpus (a manifest is a file in the corpus,
    and a tampered one must not make undo delete anything elsewhere)."""
    parts = PurePosixPath(rel).parts
    if not parts or rel.startswith("/") or ".." in parts or "\\" in rel:
        return False
    return (corpus / rel).resolve().is_relative_to(corpus.resolve())


def _put_back(corpus: Path, outputs: dict[str, manifest.Planned]) -> None:
    """A file a killed undo had renamed aside goes back first (it is then removed or kept as any)."""
    for folder in sorted({(corpus / rel).parent for rel in outputs}):
        repair_leftovers(folder)


def _remove(target: Path, rel: str, sha256: str, response: MigrateUndoResponse) -> None:
    removed = remove_if_unchanged(target, sha256)
    if target.exists():  # edited in the instant of the check, or saved anew while it was aside
        response.kept_edited.append(rel)
    elif removed:
        response.removed.append(rel)
    else:
        response.already_gone.append(rel)


def _remove_empty(corpus: Path, folders: set[str]) -> None:
    """The folders the run created, deepest first, each only if nothing is left in it."""
    for rel in sorted(folders, key=lambda f: (-len(PurePosixPath(f).parts), f)):
        if not _inside(corpus, rel):
            continue
        try:
            (corpus / rel).rmdir()
        except OSError:  # not empty (someone's file, a kept note) or already gone
            continue


def _finish_report(corpus: Path, record: RunRecord) -> None:
    """An undo killed after it recorded itself: its report section, and no temporary file left."""
    repair_leftovers(manifest.folder(corpus))
    line = record.undone or {}
    kept = [str(p) for p in line.get("kept", [])]
    report.append_undo(corpus, record.run, int(line.get("removed", 0)), int(line.get("already_gone", 0)), kept)
