"""`dory migrate` end to end through the real console script: the plan, a run, `runs`, `undo`, the
exit code of each error class, quiet output when not on a terminal, and a `dory migrate` process
killed with SIGKILL in the middle of its run (DORY_FAULT) that the next `dory migrate` resumes."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from support.migration import comparable, mixed_source, seed_corpus, temp_leftovers, tree_hashes

from dory.models import MigrateResponse, MigrateUndoResponse, MigrationRunsResponse


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return mixed_source(tmp_path)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return seed_corpus(tmp_path / "corpus")


@pytest.fixture
def run(dory, root: Path):
    """run(*args, env=None) -> Run: `dory --corpus ROOT <args>` (add "--json" for JSON)."""

    def call(*args: str, **popen):
        return dory("--corpus", str(root), *args, **popen)

    return call


def failed(result, exit_code: int, code: str) -> None:
    assert result.code == exit_code, result
    assert result.error()["code"] == code, result


def test_dry_run_prints_the_plan_and_writes_nothing(run, root: Path, source: Path) -> None:
    before = tree_hashes(root)
    text = run("migrate", str(source), "--dry-run")
    assert text.code == 0, text
    assert text.stdout.startswith(f"plan (dry run, nothing written): {source} as generic → knowledge/vault/")
    assert "items: attachment 1, evidence 2, note 8" in text.stdout
    assert "clash: knowledge/vault/Beta.md → knowledge/vault/Beta (2).md" in text.stdout
    assert "! blob.bin: unknown_format" in text.stdout and "report:" not in text.stdout
    as_json = run("migrate", str(source), "--dry-run", "--json")
    assert as_json.code == 0, as_json
    plan = as_json.json()
    assert set(plan) == set(MigrateResponse.model_fields)
    assert plan["dry_run"] is True and plan["run"] is None and plan["destinations"] == {"knowledge": 11}
    assert tree_hashes(root) == before and not (root / "references").exists()
    options_first = run("migrate", "--from", "generic", "--dry-run", str(source), "--json")  # any order
    assert options_first.code == 0 and options_first.json()["format"] == "generic", options_first
    helped = run("migrate", "--help")
    assert helped.code == 0 and "dory migrate undo RUN" in helped.stdout, helped


def test_a_run_then_runs_then_undo(run, root: Path, source: Path) -> None:
    before = tree_hashes(root)
    done = run("migrate", str(source), "--json")
    assert done.code == 0, done
    res = done.json()
    assert set(res) == set(MigrateResponse.model_fields)
    assert res["created"] == 11 and res["run"].startswith("mig-") and res["report"].endswith(f"{res['run']}.md")
    assert (root / res["report"]).is_file()

    listed = run("migrate", "runs", "--json")
    assert listed.code == 0, listed
    runs = MigrationRunsResponse.model_validate(listed.json()).runs
    assert [(r.run, r.state, r.created, r.problems) for r in runs] == [(res["run"], "finished", 11, 1)]
    text = run("migrate", "runs")
    assert text.code == 0 and res["run"] in text.stdout and "finished" in text.stdout

    again = run("migrate", str(source), "--json")
    assert again.code == 0 and again.json()["created"] == 0 and again.json()["run"] is None

    undone = run("migrate", "undo", res["run"], "--json")
    assert undone.code == 0, undone
    assert len(MigrateUndoResponse.model_validate(undone.json()).removed) == 11
    assert set(tree_hashes(root)) == set(before) | {
        f"references/reports/migrations/{res['run']}.md",
        f"references/reports/migrations/{res['run']}.manifest.jsonl",
    }
    text = run("migrate", "undo", res["run"])
    assert text.code == 0 and text.stdout.startswith(f"removed 0 files of {res['run']}; 11 were already gone")
    assert MigrationRunsResponse.model_validate(run("migrate", "runs", "--json").json()).runs[0].state == "undone"


def test_exit_codes_by_error_class(run, root: Path, source: Path, tmp_path: Path) -> None:
    failed(run("migrate", "undo", "mig-20200101-000000-abcdef", "--json"), 3, "not_found")
    failed(run("migrate", str(tmp_path / "no-such-export.zip"), "--json"), 3, "not_found")
    failed(run("migrate", str(source), "--from", "lotus-notes", "--json"), 2, "usage_error")
    failed(run("migrate", str(source), "--into", "../outside", "--json"), 2, "usage_error")
    failed(run("migrate", str(root / "knowledge"), "--json"), 4, "validation_error")
    text = run("migrate", "undo", "mig-20200101-000000-abcdef")
    assert text.code == 3 and "no migration run" in text.stderr and text.stdout == ""
    assert not (root / "references").exists()


def test_output_is_quiet_when_not_on_a_terminal(run, source: Path) -> None:
    """The progress bar is for terminals: piped, stderr stays empty and stdout is only the answer."""
    text = run("migrate", str(source))
    assert text.code == 0 and text.stderr == "", text
    assert text.stdout.startswith("run mig-") and text.stdout.rstrip().splitlines()[-1].startswith("  report: ")
    as_json = run("migrate", "runs", "--json")
    assert as_json.stderr == "" and len(as_json.json()["runs"]) == 1


def test_a_dory_migrate_killed_mid_run_is_resumed_by_the_next_one(
    dory, run, root: Path, source: Path, tmp_path: Path
) -> None:
    killed = run("migrate", str(source), "--json", env={"DORY_FAULT": "migrate.output#5"})
    assert killed.code == -signal.SIGKILL, killed
    assert killed.stdout == ""  # killed before it could answer
    listed = MigrationRunsResponse.model_validate(run("migrate", "runs", "--json").json()).runs
    assert [(r.state, r.created) for r in listed] == [("interrupted", 6)]

    resumed = run("migrate", str(source), "--json")
    assert resumed.code == 0, resumed
    res = resumed.json()
    assert res["resumed"] is True and res["run"] == listed[0].run and res["created"] == 11

    reference = seed_corpus(tmp_path / "reference")
    assert dory("--corpus", str(reference), "migrate", str(source), "--json").code == 0
    assert comparable(root) == comparable(reference)
    assert temp_leftovers(root) == []
    assert [r.state for r in MigrationRunsResponse.model_validate(run("migrate", "runs", "--json").json()).runs] == [
        "finished"
    ]
