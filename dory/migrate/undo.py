"""`dory migrate undo RUN`: remove exactly the files a run created that nobody has edited since.

A file is removed only when its bytes still hash to what the run wrote (recorded in the manifest).
The check and the removal are one step as far as an editor can tell: the file is renamed aside,
hashed again, and put back if it changed in between. Edited files are kept and listed; the claim
events the run added disappear with their artifacts (the claim store is replayed from them).
Folders the run left empty are removed. The manifest stays, marked `undone`, so the same source
can be migrated again later.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from dory.corpus.atomic import file_hash, remove_if_unchanged
from dory.errors import NotFound
from dory.migrate import manifest, report
from dory.migrate.manifest import ManifestWriter
from dory.models import MigrateUndoRequest, MigrateUndoResponse


def undo(corpus: Path, req: MigrateUndoRequest) -> MigrateUndoResponse:
    path = manifest.manifest_path(corpus, req.run)
    record = manifest.read(path) if path.is_file() and "/" not in req.run else None
    if record is None:
        raise NotFound(f"no migration run {req.run!r}; `dory migrate runs` lists them", run=req.run)
    response = MigrateUndoResponse(run=req.run, dry_run=req.dry_run)
    if record.undone is not None:
        return response
    folders: set[Path] = set()
    for out in sorted({o.path: o for o in record.created()}.values(), key=lambda o: o.path):
        target = corpus / out.path
        current = file_hash(target)
        if current is None:
            response.already_gone.append(out.path)
        elif current != out.sha256:
            response.kept_edited.append(out.path)
        elif req.dry_run or remove_if_unchanged(target, out.sha256):
            response.removed.append(out.path)
            folders.add(target.parent)
        else:
            response.kept_edited.append(out.path)
    if req.dry_run:
        return response
    _remove_empty(folders, corpus)
    writer = ManifestWriter(path)
    try:
        at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        writer.write({"t": "undone", "at": at, "removed": len(response.removed), "kept": response.kept_edited}, True)
    finally:
        writer.close()
    report.append_undo(corpus, req.run, response)
    return response


def _remove_empty(folders: set[Path], corpus: Path) -> None:
    root = corpus.resolve()
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        current = folder
        while current.resolve() != root and current.is_relative_to(corpus):
            try:
                current.rmdir()
            except OSError:
                break
            current = current.parent
