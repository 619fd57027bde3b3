"""The migrate-inbox job through the real service: exports dropped into inbox/import/ are migrated
once complete, moved to done/ (or failed/ with the reason), and listed by `status` with their report.
Nothing dropped there is indexed as a note before it is migrated."""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from dory.config import load_settings
from dory.errors import InvalidInput, PathNotAllowed
from dory.index.lock import WriterLock
from dory.jobs.ledger import JobLedger
from dory.models import (
    GetRequest,
    JobRun,
    JobRunRequest,
    LinkLintRequest,
    MigrateRequest,
    ReindexRequest,
    SearchRequest,
)
from dory.service import DoryService

INBOX = "inbox/import"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / INBOX).mkdir(parents=True)
    (root / "knowledge").mkdir()
    (root / "knowledge/mine.md").write_text("# Mine\n\nmy own note\n")
    return root


@pytest.fixture
def service(corpus: Path) -> Iterator[DoryService]:
    svc = DoryService(load_settings(corpus, {"embedder.backend": "none"}, env={}))
    svc.reindex(ReindexRequest())
    try:
        yield svc
    finally:
        svc.close()


def run(service: DoryService) -> JobRun:
    return service.run_job(JobRunRequest(job="migrate-inbox"))


def drop_folder(corpus: Path) -> Path:
    vault = corpus / INBOX / "vault"
    (vault / "sub").mkdir(parents=True)
    (vault / "Heron.md").write_text("# Heron\n\nThe zephyrheron waits; see [[sub/Egret]].\n")
    (vault / "sub/Egret.md").write_text("# Egret\n\nA white zephyrheron cousin.\n")
    (vault / "birds.json").write_text('{"bird": "zephyrheron"}')
    return vault


def drop_zip(corpus: Path, name: str = "notes.zip") -> Path:
    path = corpus / INBOX / name
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("Kestrel.md", "# Kestrel\n\nThe quillkestrel hovers; see [[Falcon]].\n")
        archive.writestr("Falcon.md", "# Falcon\n\nA quillkestrel relative.\n")
    return path


def words(service: DoryService, query: str) -> set[str]:
    return {hit.path for hit in service.search(SearchRequest(query=query, mode="bm25")).hits}


def test_a_dropped_folder_and_zip_are_migrated_once_complete_and_moved_to_done(
    corpus: Path, service: DoryService
) -> None:
    drop_folder(corpus)
    drop_zip(corpus)
    (corpus / INBOX / "big.zip.part").write_bytes(b"still downloading")
    (corpus / INBOX / ".hidden.md").write_text("# Hidden\n")

    first = run(service)  # the first look: nothing is known to be complete yet
    assert (first.status, first.outputs["entries"], first.outputs["waiting"], first.outputs["migrated"]) == (
        "ok",
        2,
        2,
        0,
    )
    assert not (corpus / "knowledge/vault").exists()
    service.reindex(ReindexRequest())
    assert words(service, "zephyrheron") == set() and words(service, "quillkestrel") == set()  # not notes yet

    second = run(service)
    assert second.status == "ok", second.warnings
    assert (second.outputs["migrated"], second.outputs["failed"], second.outputs["waiting"]) == (2, 0, 0)
    assert (corpus / "knowledge/vault/Heron.md").read_text().startswith("# Heron")
    assert (corpus / "knowledge/vault/birds.json.md").is_file()
    assert (corpus / "knowledge/notes/Kestrel.md").is_file()
    assert words(service, "zephyrheron") == {
        "knowledge/vault/Heron.md",
        "knowledge/vault/sub/Egret.md",
        "knowledge/vault/birds.json.md",
    }
    assert words(service, "quillkestrel") == {"knowledge/notes/Kestrel.md", "knowledge/notes/Falcon.md"}
    lint = service.link_lint(LinkLintRequest(max_items=1000))
    assert [b for b in lint.broken if b.source.startswith("knowledge/")] == []

    imports = {done.entry: done for done in service.status().imports}
    assert set(imports) == {"vault", "notes.zip"}
    for name, done in imports.items():
        assert done.outcome == "migrated" and done.run and done.reason is None
        assert done.report == f"references/reports/migrations/{done.run}.md"
        assert (corpus / done.report).is_file()
        assert done.moved_to == f"{INBOX}/done/{done.run}/{name}"
        assert (corpus / done.moved_to).exists()
    assert imports["vault"].created == 3 and imports["notes.zip"].created == 2
    # What was dropped is gone from the inbox but for the names that are never taken.
    assert sorted(os.listdir(corpus / INBOX)) == [".hidden.md", "big.zip.part", "done"]
    # The moved sources stay out of the index too.
    service.reindex(ReindexRequest())
    assert not any(path.startswith(INBOX) for path in words(service, "zephyrheron") | words(service, "quillkestrel"))

    third = run(service)
    assert (third.status, third.outputs["entries"], third.outputs["migrated"]) == ("ok", 0, 0)


def test_a_file_still_growing_waits_until_it_is_unchanged_between_two_looks(corpus: Path, service: DoryService) -> None:
    growing = corpus / INBOX / "diary.md"
    growing.write_text("# Diary\n\nfirst line\n")
    assert run(service).outputs["waiting"] == 1
    with growing.open("a") as handle:
        handle.write("second line\n")
    changed = run(service)  # not the file the last look saw: it may still be being written
    assert (changed.outputs["waiting"], changed.outputs["migrated"]) == (1, 0)
    assert growing.exists()
    settled = run(service)
    assert (settled.outputs["waiting"], settled.outputs["migrated"]) == (0, 1)
    (done,) = service.status().imports
    assert (corpus / done.moved_to).read_text() == "# Diary\n\nfirst line\nsecond line\n"
    assert "second line" in (corpus / "knowledge/diary-md/diary.md").read_text()


def test_broken_drops_go_to_failed_with_their_reason_and_the_job_goes_on(corpus: Path, service: DoryService) -> None:
    inbox = corpus / INBOX
    (inbox / "broken.zip").write_bytes(b"PK\x03\x04 this zip was cut short")
    (inbox / "program.exe").write_bytes(b"MZ\x90\x00")
    (inbox / "empty").mkdir()
    os.symlink(corpus / "knowledge", inbox / "link")
    drop_zip(corpus)  # a good one beside them still goes through
    run(service)

    bad = run(service)
    assert bad.status == "warning"  # a warning per bad entry, never a failed run
    assert (bad.outputs["migrated"], bad.outputs["failed"]) == (1, 4)
    failed = {done.entry: done for done in service.status().imports if done.outcome == "failed"}
    assert {name: (done.reason or "").split(":")[0] for name, done in failed.items()} == {
        "broken.zip": "bad_zip",
        "program.exe": "unknown_format",
        "empty": "nothing_to_import",
        "link": "symlink_skipped",
    }
    for name, done in failed.items():
        assert done.run is None and done.report is None
        assert done.moved_to and done.moved_to.startswith(f"{INBOX}/failed/") and done.moved_to.endswith("/" + name)
        assert os.path.lexists(corpus / done.moved_to)
        reason = (corpus / f"{done.moved_to}.reason.txt").read_text()
        assert reason.splitlines()[0] == done.reason
        assert any(name in warning and done.moved_to in warning for warning in bad.warnings)
    assert (corpus / "knowledge/mine.md").read_text() == "# Mine\n\nmy own note\n"  # the link's target untouched
    assert sorted(os.listdir(inbox)) == ["done", "failed"]

    after = run(service)  # nothing is retried: the next run is clean
    assert (after.status, after.outputs["entries"], after.warnings) == ("ok", 0, [])


def test_an_export_dropped_again_is_already_imported_and_creates_nothing(corpus: Path, service: DoryService) -> None:
    drop_zip(corpus)
    run(service)
    first = run(service)
    assert first.outputs["migrated"] == 1
    drop_zip(corpus)  # the same export, dropped once more
    run(service)
    again = run(service)
    assert (again.status, again.outputs["already_imported"], again.outputs["migrated"]) == ("ok", 1, 0)
    latest = service.status().imports[0]
    assert (latest.entry, latest.outcome, latest.run, latest.created) == ("notes.zip", "already_imported", None, 0)
    assert latest.moved_to and (corpus / latest.moved_to).is_file()
    assert sorted(p.name for p in (corpus / "knowledge/notes").iterdir()) == ["Falcon.md", "Kestrel.md"]


def test_an_entry_waits_while_another_migration_runs_and_goes_through_after(corpus: Path, service: DoryService) -> None:
    drop_zip(corpus)
    run(service)
    with WriterLock(service.settings.state_dir / "migrate.lock"):  # `dory migrate` running elsewhere
        busy = run(service)
    assert (busy.status, busy.outputs["deferred"], busy.outputs["migrated"]) == ("warning", 1, 0)
    assert "left for the next run" in busy.warnings[0]
    assert (corpus / INBOX / "notes.zip").is_file()
    free = run(service)
    assert (free.status, free.outputs["migrated"]) == ("ok", 1)


def test_an_entry_whose_runs_keep_being_cut_short_goes_to_failed(corpus: Path, service: DoryService) -> None:
    drop_zip(corpus)
    run(service)
    # Three runs on it started and never ended (what a daemon killed mid-run each time leaves).
    path = service.settings.state_dir / "inbox-import.json"
    record = json.loads(path.read_text())
    record["attempts"] = {"notes.zip": 3}
    path.write_text(json.dumps(record))
    given_up = run(service)
    assert (given_up.status, given_up.outputs["failed"]) == ("warning", 1)
    (done,) = service.status().imports
    assert done.outcome == "failed" and "cut short" in (done.reason or "")
    assert not (corpus / "knowledge/notes").exists()


def test_a_manual_run_is_never_refused_as_already_done(corpus: Path, service: DoryService) -> None:
    first, second = run(service), run(service)
    assert first.status == second.status == "ok" and first.period != second.period
    ledger = JobLedger(service.settings.ledger_path)
    try:
        assert [row["trigger"] for row in ledger.history("migrate-inbox")] == ["manual", "manual"]
    finally:
        ledger.close()


def test_notes_in_inbox_import_are_never_indexed_nor_served(corpus: Path, service: DoryService) -> None:
    (corpus / INBOX / "Loose.md").write_text("# Loose\n\nplumbago\n")
    service.reindex(ReindexRequest())
    assert words(service, "plumbago") == set()
    with pytest.raises(PathNotAllowed, match="ignored folder"):
        service.get(GetRequest(path=f"{INBOX}/Loose.md"))


def test_only_the_job_api_takes_a_source_from_inbox_import_and_only_its_direct_entries(
    corpus: Path, service: DoryService
) -> None:
    dropped = drop_zip(corpus)
    with pytest.raises(InvalidInput, match="inside the corpus"):  # `dory migrate`, HTTP: refused
        service.migrations.migrate(MigrateRequest(source=str(dropped)))
    deeper = corpus / INBOX / "done" / "mig-x"
    deeper.mkdir(parents=True)
    dropped.rename(deeper / "notes.zip")
    api = service.job_api(lambda fn: fn())
    for inside in (deeper / "notes.zip", corpus / INBOX, corpus / "knowledge"):
        with pytest.raises(InvalidInput, match="inside the corpus"):
            api.migrate(MigrateRequest(source=str(inside)))
    assert not (corpus / "knowledge/notes").exists()
