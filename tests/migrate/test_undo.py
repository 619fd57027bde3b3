"""`dory migrate undo RUN`: exactly what the run created and nobody edited goes, nothing else.

Migrate a small mixed source into a corpus with notes of its own, edit one created note, undo: the
other files are gone (and the folders the run made), the edited note is kept and listed, every file
and folder that was there before is untouched, the index forgets the removed notes, a second undo
changes nothing, and the same source then migrates again. Claim artifacts and the canonical page an
import compiled go too, and the claim store is as before. An undo killed at any of its crash points
completes when run again, and an edit racing the removal is never lost.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path

import pytest
from support.migration import (
    MINE,
    Migrate,
    PeopleReader,
    mixed_source,
    people_source,
    seed_corpus,
    temp_leftovers,
    tree_hashes,
)

from dory.config import Settings, load_settings
from dory.corpus import atomic
from dory.corpus.faults import FAULT_ENV, TRACE_ENV
from dory.memory import claims
from dory.migrate import formats, manifest
from dory.migrate.report import report_path
from dory.models import MigrateRequest, MigrateUndoRequest, SearchRequest
from dory.service import DoryService

EDITED = "knowledge/vault/Alpha.md"
# A word of each removed note, and of the kept one.
REMOVED_WORDS = ("Kingfishers", "Otters", "Epsilon", "kingfisher", "folders")


def folders(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_dir() and ".dory" not in p.parts}


def found(service: DoryService, word: str) -> set[str]:
    return {h.path for h in service.search(SearchRequest(query=word, mode="bm25")).hits}


def run_files(root: Path, run: str) -> set[str]:
    return {f"references/reports/migrations/{run}.md", f"references/reports/migrations/{run}.manifest.jsonl"}


def test_undo_keeps_the_edited_note_removes_the_rest_and_leaves_the_corpus_as_it_was(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    seed_corpus(corpus)
    (corpus / "knowledge/vault/sub").mkdir()  # an empty folder of the corpus's own, which the run fills
    (corpus / "projects").mkdir()  # and one it never touches
    files_before, folders_before = tree_hashes(corpus), folders(corpus)
    source = mixed_source(tmp_path)
    res = migrate(source)
    assert res.run and res.created == 11
    created = {o.path for o in manifest.read(manifest.manifest_path(corpus, res.run)).created()}  # type: ignore[union-attr]
    assert all(found(service, word) for word in REMOVED_WORDS)
    (corpus / EDITED).write_text("# Alpha\n\nThe heron waits by the weir. My own line.\n")

    undone = service.migrations.undo(MigrateUndoRequest(run=res.run))

    assert undone.kept_edited == [EDITED]
    assert sorted(undone.removed) == sorted(created - {EDITED}) and undone.already_gone == []
    edited_hash = hashlib.sha256((corpus / EDITED).read_bytes()).hexdigest()
    assert tree_hashes(corpus) == {
        **files_before,
        EDITED: edited_hash,
        **{rel: tree_hashes(corpus)[rel] for rel in run_files(corpus, res.run)},
    }
    assert folders(corpus) == folders_before | {"references", "references/reports", "references/reports/migrations"}
    assert (
        not (corpus / "knowledge/vault/sub/deeper").exists() and not (corpus / "knowledge/vault/archive.zip").exists()
    )
    for word in REMOVED_WORDS:
        assert found(service, word) == set(), word
    assert [r.state for r in service.migrations.runs().runs] == ["undone"]
    report = (corpus / report_path(res.run)).read_text()
    assert report.count("## Undone") == 1 and f"`{EDITED}`" in report

    before_second = tree_hashes(corpus)
    again = service.migrations.undo(MigrateUndoRequest(run=res.run))
    assert again.removed == [] and again.kept_edited == [EDITED]
    assert sorted(again.already_gone) == sorted(undone.removed)
    assert tree_hashes(corpus) == before_second

    third = migrate(source)
    assert third.run and third.run != res.run and third.created == 11 and not third.resumed
    assert (corpus / "knowledge/vault/Alpha (2).md").read_bytes() == b"# Alpha\n\nThe heron waits by the weir.\n"
    assert (corpus / MINE).read_bytes() == b"my own Beta, not the source's\n"
    assert found(service, "Otters") == {"knowledge/vault/sub/Gamma.md"}


def test_a_dry_run_undo_lists_and_removes_nothing(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    seed_corpus(corpus)
    res = migrate(mixed_source(tmp_path))
    before = tree_hashes(corpus)
    plan = service.migrations.undo(MigrateUndoRequest(run=res.run or "", dry_run=True))
    assert plan.dry_run and len(plan.removed) == 11 and plan.kept_edited == []
    assert tree_hashes(corpus) == before
    assert service.migrations.runs().runs[0].state == "finished"


def test_an_unknown_run_is_not_found(service: DoryService) -> None:
    from dory.errors import NotFound

    for run in ("mig-20200101-000000-abcdef", "../etc/passwd", "x/y"):
        with pytest.raises(NotFound):
            service.migrations.undo(MigrateUndoRequest(run=run))


def test_a_tampered_manifest_never_makes_undo_touch_a_file_outside_the_corpus(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    outside = tmp_path / "outside.md"
    outside.write_bytes(b"not the corpus's\n")
    res = migrate(mixed_source(tmp_path))
    path = manifest.manifest_path(corpus, res.run or "")
    outputs = [{"path": "../outside.md", "sha256": "sha256:" + hashlib.sha256(outside.read_bytes()).hexdigest()}]
    line = {"t": "intent", "key": "x", "digest": "d", "outputs": outputs, "folders": ["..", "../.."]}
    forged = json.dumps(line) + "\n"
    path.write_text(path.read_text().replace('{"t":"finished"', forged + '{"t":"finished"'))
    undone = service.migrations.undo(MigrateUndoRequest(run=res.run or ""))
    assert "../outside.md" not in undone.removed + undone.already_gone + undone.kept_edited
    assert outside.read_bytes() == b"not the corpus's\n" and corpus.is_dir()


# -- claim artifacts and canonical pages ---------------------------------------------------------
def test_undo_removes_the_claim_artifacts_and_pages_and_the_claim_store_is_as_before(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(formats, "READERS", [PeopleReader(), *formats.READERS])
    src = people_source(tmp_path)
    files_before = tree_hashes(corpus)
    assert claims.dump(service.store.conn) == []

    res = migrate(src, from_format="people-lines")
    roles = Counter(o.role for o in manifest.read(manifest.manifest_path(corpus, res.run or "")).created())  # type: ignore[union-attr]
    assert roles == {"note": 2, "artifact": 3, "page": 2}
    assert len(claims.dump(service.store.conn)) == 3
    assert (corpus / "people/ada-lovelace.md").is_file()

    undone = service.migrations.undo(MigrateUndoRequest(run=res.run or ""))
    assert len(undone.removed) == 7 and undone.kept_edited == []
    assert claims.dump(service.store.conn) == []
    assert set(tree_hashes(corpus)) == set(files_before) | run_files(corpus, res.run or "")
    assert not (corpus / "sources").exists() and not (corpus / "people").exists()


# -- crash points of undo, and edits racing it ----------------------------------------------------
def settings_for(root: Path) -> Settings:
    return load_settings(root, {"embedder.backend": "none"}, env={})


def undo_in_child(root: Path, run: str, env: dict[str, str]) -> int:
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.environ.update(env)
            svc = DoryService(settings_for(root))
            svc.migrations.undo(MigrateUndoRequest(run=run))
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def migrated(root: Path, source: Path) -> tuple[str, dict[str, str]]:
    """Seed `root`, migrate `source` into it; (the run, the corpus's files before the run)."""
    seed_corpus(root)
    before = tree_hashes(root)
    svc = DoryService(settings_for(root))
    try:
        run = svc.migrations.migrate(MigrateRequest(source=str(source))).run
    finally:
        svc.close()
    assert run is not None
    return run, before


def test_an_undo_killed_at_any_crash_point_completes_when_run_again(tmp_path: Path) -> None:
    source = mixed_source(tmp_path)
    traced = tmp_path / "traced"
    run, _ = migrated(traced, source)
    trace = tmp_path / "trace.txt"
    assert undo_in_child(traced, run, {TRACE_ENV: str(trace)}) == 0
    seen: Counter[str] = Counter()
    points = []
    for name in trace.read_text().split():
        points.append(f"{name}#{seen[name]}")
        seen[name] += 1
    assert seen["remove.aside"] == 11 and seen["atomic.temp-written"] == 1, seen
    for n, point in enumerate(points):
        root = tmp_path / f"crash-{n}"
        run, before = migrated(root, source)
        assert undo_in_child(root, run, {FAULT_ENV: point}) == -9, f"{point} never fired"
        svc = DoryService(settings_for(root))
        try:
            again = svc.migrations.undo(MigrateUndoRequest(run=run))
            assert again.kept_edited == [], point
            assert set(tree_hashes(root)) == set(before) | run_files(root, run), f"undo killed at {point}"
            assert temp_leftovers(root) == [], f"undo killed at {point}: temporary files left"
            assert [r.state for r in svc.migrations.runs().runs] == ["undone"], point
            assert (root / report_path(run)).read_text().count("## Undone") == 1, point
            assert found(svc, "Otters") == set() and found(svc, "heron") == set(), f"undo killed at {point}: index"
        finally:
            svc.close()


def test_an_edit_saved_while_a_killed_undo_had_the_note_aside_is_kept(tmp_path: Path) -> None:
    source = mixed_source(tmp_path)
    root = tmp_path / "corpus"
    run, _ = migrated(root, source)
    assert undo_in_child(root, run, {FAULT_ENV: "remove.aside#0"}) == -9
    assert not (root / EDITED).exists()  # it is aside, under a temporary name
    (root / EDITED).write_text("saved by an editor while undo was dead\n")
    svc = DoryService(settings_for(root))
    try:
        undone = svc.migrations.undo(MigrateUndoRequest(run=run))
    finally:
        svc.close()
    assert undone.kept_edited == [EDITED]
    assert (root / EDITED).read_text() == "saved by an editor while undo was dead\n"
    assert temp_leftovers(root) == []


@pytest.mark.parametrize("how", ["saved anew", "written in place"])
def test_an_edit_racing_the_removal_is_never_lost(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """An editor saves at the very moment undo has the note aside: as a new file at its path (how
    editors save), or into the file itself (an editor holding it open)."""
    res = migrate(mixed_source(tmp_path))
    target = corpus / EDITED
    edit = b"my edit, racing the undo\n"
    calls: list[str] = []

    def editor_saves(name: str) -> None:
        calls.append(name)
        if name != "remove.aside" or calls.count(name) != 1:
            return
        assert not target.exists()  # the first file undo removes is Alpha, set aside right now
        if how == "saved anew":
            target.write_bytes(edit)
        else:
            (aside,) = target.parent.glob(".Alpha.md.dory-old-*.tmp")
            with aside.open("r+b") as handle:
                handle.write(edit)
                handle.truncate()

    monkeypatch.setattr(atomic, "crash_point", editor_saves)
    undone = service.migrations.undo(MigrateUndoRequest(run=res.run or ""))
    assert target.read_bytes() == edit
    assert undone.kept_edited == [EDITED] and EDITED not in undone.removed
    assert len(undone.removed) == 10 and temp_leftovers(corpus) == []


def test_an_interrupted_run_can_be_undone_and_the_source_then_migrates_afresh(tmp_path: Path) -> None:
    source = mixed_source(tmp_path)
    root = seed_corpus(tmp_path / "corpus")
    before = tree_hashes(root)
    pid = os.fork()
    if pid == 0:
        try:
            os.environ[FAULT_ENV] = "create.linked#4"  # the fifth file in place, its temp name still there
            DoryService(settings_for(root)).migrations.migrate(MigrateRequest(source=str(source)))
        finally:
            os._exit(1)
    os.waitpid(pid, 0)
    (killed,) = manifest.runs(root)
    assert killed.state == "interrupted" and len(killed.done) == 4 and temp_leftovers(root) != []
    svc = DoryService(settings_for(root))
    try:
        undone = svc.migrations.undo(MigrateUndoRequest(run=killed.run))
        assert len(undone.removed) == 5 and undone.kept_edited == []
        manifest_only = {f"references/reports/migrations/{killed.run}.manifest.jsonl"}  # it never reached its report
        assert set(tree_hashes(root)) == set(before) | manifest_only
        assert temp_leftovers(root) == []
        again = svc.migrations.migrate(MigrateRequest(source=str(source)))
    finally:
        svc.close()
    assert again.run != killed.run and not again.resumed and again.created == 11
