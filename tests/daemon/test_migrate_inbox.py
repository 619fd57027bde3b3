"""A real daemon migrates what is dropped into inbox/import/: the export lands in the corpus and the
index, `dory status` links the run's report, a broken drop goes to failed/ with its reason while the
job keeps running clean, and a daemon killed in the middle of a migration finishes it after a restart."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path
from typing import Any

from support.daemon import daemon_env, indexed, wait_until

from dory.jobs.ledger import JobLedger

INBOX = "inbox/import"
EVERY_SECOND = "* * * * * *"


def make_corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / INBOX).mkdir(parents=True)
    (root / "knowledge").mkdir()
    (root / "knowledge/mine.md").write_text("# Mine\n\nmy own note\n")
    return root


def write_zip(path: Path, notes: int) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for n in range(notes):
            archive.writestr(f"Note {n:02d}.md", f"# Note {n}\n\nsandpiper {n}; next [[Note {(n + 1) % notes:02d}]]\n")


def imports(daemon: Any) -> dict[str, dict[str, Any]]:
    code, status, err = daemon.cli("status")
    assert code == 0, err
    return {done["entry"]: done for done in status["imports"]}


def job_runs(daemon: Any) -> list[dict[str, Any]]:
    ledger = JobLedger(daemon.settings.ledger_path)
    try:
        return ledger.history("migrate-inbox", 500)
    finally:
        ledger.close()


def test_a_dropped_export_is_migrated_by_the_daemon_and_status_links_its_report(tmp_path: Path, daemon_factory) -> None:
    root = make_corpus(tmp_path)
    env = daemon_env(DORY_JOBS_MIGRATE_INBOX=EVERY_SECOND)
    daemon = daemon_factory(root, env).start()
    write_zip(root / INBOX / "shorebirds.zip", 12)

    done = wait_until(lambda: imports(daemon).get("shorebirds.zip"), what="the drop to be migrated")
    assert done["outcome"] == "migrated" and done["created"] == 12 and done["problems"] == 0
    assert done["report"] == f"references/reports/migrations/{done['run']}.md"
    report = (root / done["report"]).read_text()
    assert "shorebirds.zip" in report and "files created: 12" in report
    assert done["moved_to"] == f"{INBOX}/done/{done['run']}/shorebirds.zip"
    assert (root / done["moved_to"]).is_file() and not (root / INBOX / "shorebirds.zip").exists()
    notes = {f"knowledge/shorebirds/Note {n:02d}.md" for n in range(12)}
    wait_until(lambda: notes | {done["report"]} <= set(indexed(root, env)), what="the notes to be indexed")
    assert not any(path.startswith("inbox/") for path in indexed(root, env))
    code, found, _ = daemon.cli("search", "sandpiper", "--mode", "bm25", "-k", "20")
    assert code == 0 and {hit["path"] for hit in found["hits"]} == notes

    # A broken drop: failed/ with its reason; the runs after it are clean (nothing retried).
    (root / INBOX / "cut.zip").write_bytes(b"PK\x03\x04 cut short")
    failed = wait_until(lambda: imports(daemon).get("cut.zip"), what="the broken drop to be taken")
    assert failed["outcome"] == "failed" and failed["reason"].startswith("bad_zip: ")
    assert (root / f"{failed['moved_to']}.reason.txt").read_text().startswith(failed["reason"])
    wait_until(lambda: clean_run_after(daemon, "cut.zip"), what="a clean run after the broken drop")
    assert all(r["status"] in ("ok", "warning") for r in job_runs(daemon))
    code, text = daemon_status_text(daemon)
    assert code == 0 and "shorebirds.zip: migrated" in text and done["report"] in text
    assert "cut.zip: failed at" in text
    assert daemon.stop() == 0


def daemon_status_text(daemon: Any) -> tuple[int, str]:
    run = subprocess.run(
        [*daemon.cmd, "--corpus", str(daemon.root), "status"], env=daemon.env, capture_output=True, text=True
    )
    return run.returncode, run.stdout


def clean_run_after(daemon: Any, entry: str) -> bool:
    """A run with no warning came after the one that warned about `entry`."""
    runs = job_runs(daemon)  # newest first
    warned = next((n for n, r in enumerate(runs) if any(entry in w for w in r["warnings"])), None)
    return warned is not None and any(r["status"] == "ok" for r in runs[:warned])


def test_a_daemon_killed_in_the_middle_of_a_migration_finishes_it_after_a_restart(
    tmp_path: Path, daemon_factory
) -> None:
    root = make_corpus(tmp_path)
    write_zip(root / INBOX / "waders.zip", 30)
    # The daemon kills itself (SIGKILL) right after the 10th file of the migration is in place.
    env = daemon_env(DORY_JOBS_MIGRATE_INBOX=EVERY_SECOND, DORY_FAULT="migrate.output#9")
    daemon = daemon_factory(root, env).start(wait=False)
    assert daemon.proc is not None
    assert daemon.proc.wait(120) == -9
    daemon.proc = None
    assert (root / INBOX / "waders.zip").is_file()  # not moved: the run did not end
    assert 0 < len(list((root / "knowledge/waders").iterdir())) < 30

    env = daemon_env(DORY_JOBS_MIGRATE_INBOX=EVERY_SECOND)
    daemon = daemon_factory(root, env).start()
    done = wait_until(lambda: imports(daemon).get("waders.zip"), what="the resumed migration to end")
    assert done["outcome"] == "migrated"
    assert sorted(p.name for p in (root / "knowledge/waders").iterdir()) == [f"Note {n:02d}.md" for n in range(30)]
    notes = {f"knowledge/waders/Note {n:02d}.md" for n in range(30)}
    wait_until(lambda: notes <= set(indexed(root, env)), what="every note to be indexed")
    assert daemon.stop() == 0
