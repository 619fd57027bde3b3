"""Runs that are interrupted, resumed, run again or run twice at once.

A run killed midway (a forked child SIGKILLed at a crash point, see test_run_crash_points.py) is
resumed by the next migration of the same source into the same folder, even when the source
changed in between or the run is killed again; a dry run shows the resume and writes nothing; a
finished run is never resumed, and its rerun creates nothing. Two migrations of the same source at
once (threads of one service, or two `dory` processes) import each item exactly once.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from support.migration import MINE, comparable, mixed_source, seed_corpus, temp_leftovers, tree_hashes

from dory.config import Settings, load_settings
from dory.corpus.faults import FAULT_ENV
from dory.errors import DoryError
from dory.migrate import manifest
from dory.migrate.manifest import RunRecord
from dory.models import MigrateRequest, MigrateResponse, MigrateUndoRequest
from dory.service import DoryService


def settings_for(root: Path) -> Settings:
    return load_settings(root, {"embedder.backend": "none"}, env={})


def migrate_here(root: Path, source: Path, **fields: object) -> MigrateResponse:
    svc = DoryService(settings_for(root))
    try:
        return svc.migrations.migrate(MigrateRequest(source=str(source), **fields))  # type: ignore[arg-type]
    finally:
        svc.close()


def killed_at(root: Path, source: Path, point: str) -> RunRecord:
    """Migrate in a forked child killed at `point`; the run it left."""
    pid = os.fork()
    if pid == 0:
        try:
            os.environ[FAULT_ENV] = point
            migrate_here(root, source)
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == 9, f"{point} never fired"
    (record,) = [r for r in manifest.runs(root) if r.state == "interrupted"]
    return record


def test_a_finished_run_is_not_resumed_and_its_rerun_creates_nothing(tmp_path: Path) -> None:
    source, root = mixed_source(tmp_path), seed_corpus(tmp_path / "corpus")
    migrate_here(root, source)
    before = tree_hashes(root)
    again = migrate_here(root, source)
    assert again.run is None and not again.resumed and again.created == 0 and again.skipped_unchanged == 11
    assert tree_hashes(root) == before


def test_a_dry_run_of_an_interrupted_run_shows_the_resume_and_writes_nothing(tmp_path: Path) -> None:
    source, root = mixed_source(tmp_path), seed_corpus(tmp_path / "corpus")
    killed = killed_at(root, source, "migrate.done#3")
    before = tree_hashes(root)
    plan = migrate_here(root, source, dry_run=True)
    assert plan.dry_run and plan.resumed and plan.run is None
    assert sum(plan.items.values()) == 11 and plan.destinations == {"knowledge": 11}
    assert tree_hashes(root) == before
    assert manifest.read(manifest.manifest_path(root, killed.run)).state == "interrupted"  # type: ignore[union-attr]


def test_a_run_killed_twice_resumes_twice_and_ends_as_one_run(tmp_path: Path) -> None:
    source = mixed_source(tmp_path)
    reference = seed_corpus(tmp_path / "reference")
    migrate_here(reference, source)
    root = seed_corpus(tmp_path / "corpus")
    first = killed_at(root, source, "create.linked#2")
    second = killed_at(root, source, "migrate.output#4")  # the resumed attempt, killed in turn
    assert second.run == first.run and len(second.done) > len(first.done)
    done = migrate_here(root, source)
    assert done.run == first.run and done.resumed and done.created == 11
    assert comparable(root) == comparable(reference)
    assert temp_leftovers(root) == [] and [r.state for r in manifest.runs(root)] == ["finished"]


def test_a_source_changed_between_attempts_is_resumed_and_undo_removes_every_file_the_run_made(
    tmp_path: Path,
) -> None:
    """Between the kill and the rerun, a note already written is edited in the source, one is added
    and one deleted: the run resumes, the new version lands beside the old one (never over it), and
    undo removes both."""
    source, root = mixed_source(tmp_path), seed_corpus(tmp_path / "corpus")
    before = tree_hashes(root)
    killed = killed_at(root, source, "migrate.done#2")
    assert "file:Alpha.md" in killed.done
    (source / "Alpha.md").write_bytes(b"# Alpha\n\nEdited in the source after the crash.\n")
    (source / "New.md").write_bytes(b"# New\n\nadded after the crash\n")
    (source / "table.csv").unlink()

    res = migrate_here(root, source)

    assert res.run == killed.run and res.resumed
    assert (root / "knowledge/vault/Alpha.md").read_bytes() == b"# Alpha\n\nThe heron waits by the weir.\n"
    assert (root / "knowledge/vault/Alpha (2).md").read_bytes() == b"# Alpha\n\nEdited in the source after the crash.\n"
    assert (root / "knowledge/vault/New.md").is_file() and not (root / "knowledge/vault/table.csv.md").exists()
    svc = DoryService(settings_for(root))
    try:
        undone = svc.migrations.undo(MigrateUndoRequest(run=res.run or ""))
    finally:
        svc.close()
    assert "knowledge/vault/Alpha.md" in undone.removed and undone.kept_edited == []
    assert set(tree_hashes(root)) == set(before) | {
        f"references/reports/migrations/{res.run}.md",
        f"references/reports/migrations/{res.run}.manifest.jsonl",
    }


def test_another_destination_is_another_run_and_the_interrupted_one_stays_listed(tmp_path: Path) -> None:
    source, root = mixed_source(tmp_path), seed_corpus(tmp_path / "corpus")
    killed = killed_at(root, source, "migrate.done#1")
    other = migrate_here(root, source, into="knowledge/elsewhere")
    assert other.run != killed.run and not other.resumed
    states = {r.run: r.state for r in manifest.runs(root)}
    assert states == {killed.run: "interrupted", other.run: "finished"}


def test_two_migrations_of_the_same_source_at_once_import_each_item_once(
    tmp_path: Path, corpus: Path, service: DoryService
) -> None:
    """Threads of one service: the migration lock makes the second wait, then find nothing new."""
    source = mixed_source(tmp_path)
    seed_corpus(corpus)
    start = threading.Barrier(2)
    results: list[MigrateResponse] = []
    errors: list[BaseException] = []

    def run() -> None:
        start.wait()
        try:
            results.append(service.migrations.migrate(MigrateRequest(source=str(source))))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(r.created for r in results) == [0, 11]
    assert [r.state for r in manifest.runs(corpus)] == ["finished"]
    files = [p.name for p in (corpus / "knowledge/vault").rglob("*") if p.is_file()]
    assert len(files) == 12 and sorted(files).count("Alpha.md") == 1 and "Alpha (2).md" not in files
    assert (corpus / MINE).read_bytes() == b"my own Beta, not the source's\n"


def test_two_dory_processes_migrating_the_same_source_at_once_import_each_item_once(
    tmp_path: Path, dory_cmd: list[str]
) -> None:
    import subprocess

    source, root = mixed_source(tmp_path), seed_corpus(tmp_path / "corpus")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DORY_")} | {"DORY_EMBEDDER_BACKEND": "none"}
    command = [*dory_cmd, "--corpus", str(root), "migrate", str(source), "--json"]
    procs = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outputs = [proc.communicate(timeout=300) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], outputs
    assert [r.state for r in manifest.runs(root)] == ["finished"]
    record = manifest.runs(root)[0]
    assert len(record.done) == 11 and len(record.created()) == 11
    reference = seed_corpus(tmp_path / "reference")
    migrate_here(reference, source)
    assert comparable(root) == comparable(reference)


def failing_at(root: Path, source: Path, fault: str) -> str:
    """Migrate in a forked child where the step `fault` names fails with an OSError; the child's
    error code (or "ok")."""
    outcome = root.parent / "outcome.txt"
    pid = os.fork()
    if pid == 0:
        said = "ok"
        try:
            os.environ[FAULT_ENV] = fault
            migrate_here(root, source)
        except DoryError as exc:
            said = exc.code
        except BaseException as exc:
            said = f"{type(exc).__name__}: {exc}"
        outcome.write_text(said)
        os._exit(0)
    os.waitpid(pid, 0)
    return outcome.read_text()


def test_a_file_system_error_stops_the_run_with_its_code_and_the_next_run_resumes(tmp_path: Path) -> None:
    source = mixed_source(tmp_path)
    reference = seed_corpus(tmp_path / "reference")
    migrate_here(reference, source)
    faults = {
        "migrate.intent#3=ENOSPC": "disk_full",
        "create.temp-written#3=EACCES": "permission_denied",
        "migrate.output#5=EROFS": "read_only",
        "atomic.temp-written#0=ENOSPC": "disk_full",  # the report
    }
    for n, (fault, code) in enumerate(faults.items()):
        root = seed_corpus(tmp_path / f"run-{n}" / "corpus")
        assert failing_at(root, source, fault) == code, fault
        (stopped,) = manifest.runs(root)
        assert stopped.state == "interrupted", fault
        again = migrate_here(root, source)
        assert again.resumed and again.run == stopped.run, fault
        assert comparable(root) == comparable(reference), fault
        assert temp_leftovers(root) == [], fault


def test_a_damaged_manifest_line_is_skipped_and_the_runs_still_list(tmp_path: Path) -> None:
    source, root = mixed_source(tmp_path), seed_corpus(tmp_path / "corpus")
    res = migrate_here(root, source)
    path = manifest.manifest_path(root, res.run or "")
    lines = path.read_text().splitlines()
    lines[3:3] = ['{"t": "intent"}', '{"t": "done", "key": 7}', '{"t": "intent", "key": "x", "outputs": [1]}', "[]"]
    path.write_text("\n".join(lines) + "\n")
    (record,) = manifest.runs(root)
    assert record.state == "finished" and len(record.done) == 11 and len(record.created()) == 11
    assert migrate_here(root, source).created == 0


def killed_then_resumed_matches_and_undoes(tmp_path: Path, source: Path, point: str) -> int:
    """Kill a migration of a real export at `point`, resume it, compare with an uninterrupted run,
    undo it: the corpus is as before. Returns the number of files the run created."""
    reference = seed_corpus(tmp_path / "reference")
    expected = migrate_here(reference, source)
    root = seed_corpus(tmp_path / "corpus")
    before = tree_hashes(root)
    killed = killed_at(root, source, point)
    resumed = migrate_here(root, source)
    assert resumed.resumed and resumed.run == killed.run and resumed.created == expected.created
    assert comparable(root) == comparable(reference) and temp_leftovers(root) == []
    svc = DoryService(settings_for(root))
    try:
        undone = svc.migrations.undo(MigrateUndoRequest(run=killed.run))
    finally:
        svc.close()
    assert len(undone.removed) == expected.created and undone.kept_edited == []
    assert set(tree_hashes(root)) == set(before) | {
        f"references/reports/migrations/{killed.run}.md",
        f"references/reports/migrations/{killed.run}.manifest.jsonl",
    }
    return expected.created


def test_a_real_notion_zip_killed_midway_resumes_to_the_same_corpus_and_undoes(tmp_path: Path, samples: Path) -> None:
    export = samples / "notion" / "appflowy-collab" / "design.zip"
    assert killed_then_resumed_matches_and_undoes(tmp_path, export, "create.linked#15") == 29


@pytest.mark.slow
def test_a_real_obsidian_vault_killed_midway_resumes_to_the_same_corpus_and_undoes(
    tmp_path: Path, samples: Path
) -> None:
    vault = samples / "obsidian" / "kepano-obsidian"
    assert killed_then_resumed_matches_and_undoes(tmp_path, vault, "migrate.output#70") == 135
