"""An existing vault, used without changing it (issue 20): `dory add` it read-only, reindex, search, run
the daemon and every job of the registry through it (capture switched on while it runs), try every
kind of write, and check that not one byte, mtime or mode under the vault changed and no file was
added there, while the index went to the platform state folder and the digests, wiki, proposals,
report and captured session to the output folder. On a small fixture vault always, and on a slice
of the real obsidian-hub vault when the shared archive is there."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.daemon import DaemonProcess, daemon_env, wait_until
from support.vault import build_fixture, fingerprint, notes_in, slice_of_hub

from dory.jobs.registry import JOBS

CAPTURE_FIXTURES = Path(__file__).parents[1] / "sessions" / "fixtures" / "capture"
CLAUDE_ID = "7c1e2d3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f"


class Dory:
    """The real `dory` command in a user's environment of its own (config, data, state, home)."""

    def __init__(self, cmd: list[str], env: dict[str, str], cwd: Path) -> None:
        self.cmd, self.env, self.cwd = cmd, env, cwd

    def run(self, *args: str, cwd: Path | None = None, stdin: bytes | None = None) -> tuple[int, Any]:
        done = subprocess.run(
            [*self.cmd, *args, "--json"],
            env=self.env,
            cwd=cwd or self.cwd,
            input=stdin,
            capture_output=True,
            timeout=300,
        )
        out = done.stdout.decode()
        return done.returncode, json.loads(out) if out.strip() else done.stderr.decode()

    def ok(self, *args: str, cwd: Path | None = None) -> Any:
        code, out = self.run(*args, cwd=cwd)
        assert code == 0, (args, out)
        return out

    def refused(self, *args: str) -> dict[str, Any]:
        """A write the read-only corpus refuses: exit 8, read_only_corpus, naming the vault."""
        code, out = self.run(*args)
        assert code == 8, (args, out)
        assert out["error"]["code"] == "read_only_corpus", out
        return out["error"]


def user_env(tmp_path: Path, **more: str) -> dict[str, str]:
    home = tmp_path / "home"
    return daemon_env(
        HOME=str(home),
        TZ="UTC",
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local/share"),
        XDG_STATE_HOME=str(home / ".local/state"),
        DORY_DIGEST_QUIET_MINUTES="0",
        DORY_CAPTURE_DEVICE="laptop",
        DORY_CAPTURE_SWEEP_S="3600",
        **more,
    )


def claude_transcript(home: Path, day: str) -> None:
    """A recorded Claude Code session of `day`, where Claude Code keeps it: capture brings it in."""
    text = (CAPTURE_FIXTURES / "claude-code.jsonl").read_text(encoding="utf-8").replace("2026-11-20", day)
    path = home / ".claude/projects/-home-dev-shop" / f"{CLAUDE_ID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")


def a_word_of(vault: Path) -> tuple[str, str]:
    """(note, a word of its name) to search for: the first note whose name has a word of 5+ letters."""
    for rel in notes_in(vault):
        words = [w for w in Path(rel).stem.replace("-", " ").split() if len(w) >= 5 and w.isalpha()]
        if words:
            return rel, words[0]
    raise AssertionError("no note with a searchable name")


VAULTS: dict[str, Callable[[Path], Path]] = {"fixture": build_fixture, "obsidian-hub": slice_of_hub}


@pytest.mark.parametrize("kind", list(VAULTS))
def test_a_read_only_vault_is_never_written_by_reindex_search_the_daemon_or_any_job(
    tmp_path: Path, dory_cmd: list[str], daemon_factory: Callable[..., DaemonProcess], kind: str
) -> None:
    vault = VAULTS[kind](tmp_path / "My Vault")
    env = user_env(tmp_path)
    home = Path(env["HOME"])
    yesterday = (dt.datetime.now(dt.UTC).date() - dt.timedelta(days=1)).isoformat()
    claude_transcript(home, yesterday)
    dory = Dory(dory_cmd, env, tmp_path)
    before = fingerprint(vault)

    added = dory.ok("add", str(vault))
    assert (added["name"], added["writable"], added["owned"]) == ("my-vault", False, False)
    output, state = Path(added["output"]), Path(added["state_dir"])
    assert output == home / ".local/share/dory/my-vault" and state == home / ".local/state/dory/my-vault"

    reindexed = dory.ok("--corpus", "my-vault", "reindex")
    assert reindexed["new"] + len(reindexed["skipped"]) == len(notes_in(vault))
    note, word = a_word_of(vault)
    inside = vault / Path(note).parent  # found from a subfolder, as git finds its repository
    hits = dory.ok("search", word, "--limit", "50", cwd=inside)["hits"]
    assert note in [hit["path"] for hit in hits], (word, hits)
    status = dory.ok("status", cwd=inside)
    assert (status["corpus"], status["name"], status["read_only"]) == (str(vault), "my-vault", True)
    assert status["state_dir"] == str(state) and status["output"] == str(output)

    schedules = {job["name"]: job["schedule"] for job in dory.ok("--corpus", "my-vault", "ops", "jobs")["jobs"]}
    assert schedules["migrate-inbox"] == "off (the corpus is read-only)", schedules
    daemon = daemon_factory(vault, env).start()
    # Capture switched on while the daemon runs: recorded in corpora.toml (the vault has no dory.toml
    # to write), which the daemon re-reads at its next heartbeat; it then captures the transcript.
    switched = dory.ok("--corpus", "my-vault", "capture", "on")
    assert switched["config_file"] == str(home / ".config/dory/corpora.toml"), switched
    captured = output / "logs/sessions/claude-code/laptop"
    wait_until(lambda: list(captured.glob("*.md")), what="the transcript captured after `dory capture on`")
    ran = {}
    for job, spec in JOBS.items():  # by hand, through the running daemon, each one really run (--force)
        if spec.writes_notes:  # migrate-inbox would import into the vault: off, and refused by hand
            assert "read-only" in dory.refused("--corpus", "my-vault", "ops", "run", job, "--force")["message"]
            continue
        ran[job] = dory.ok("--corpus", "my-vault", "ops", "run", job, "--force")
        assert ran[job]["status"] != "failed", ran[job]
    assert ran["daily-digest"]["period"] == yesterday and ran["daily-digest"]["outputs"]["sessions"] == 1
    assert ran["dream"]["outputs"]["digests_read"] >= 1
    proposals = dory.ok("--corpus", "my-vault", "proposals", "list")["proposals"]
    assert proposals, "dreaming proposed nothing from the captured session's digest"
    found = dory.ok("--corpus", "my-vault", "search", "discount code", "--in", "all")["hits"]
    assert any(hit["path"].startswith(("digests/", "logs/sessions/")) for hit in found), found
    writes_refused(dory, vault, proposals[0]["id"])
    assert daemon.stop() == 0

    assert fingerprint(vault) == before  # not one byte, mtime or mode changed; nothing added or removed
    assert (output / f"digests/daily/{yesterday}.md").is_file()
    assert (output / "wiki/index.md").is_file() and (output / "inbox/proposed").is_dir()
    assert (output / f"inbox/maintenance/{dt.date.today().isoformat()}.md").is_file()
    assert (state / "index.sqlite").is_file() and (state / "jobs.sqlite").is_file()


def writes_refused(dory: Dory, vault: Path, proposal: str) -> None:
    """Every way of writing into the vault, refused before anything is written."""
    corpus = ("--corpus", "my-vault")
    error = dory.refused(*corpus, "write", "new.md", "--content", "# New")
    assert str(vault) in error["message"] and "--writable" in error["message"]
    dory.refused(*corpus, "write", "Welcome.md", "--kind", "append", "--content", "more")
    dory.refused(*corpus, "memory-write", "Maria", "Maria moved to Lisbon", "--scope", "person")
    dory.refused(*corpus, "proposals", "apply", proposal)
    dory.refused(*corpus, "ops", "run", "maintain", "--fix")
    dory.refused(*corpus, "migrate", str(CAPTURE_FIXTURES))
    code, out = dory.run(*corpus, "init", str(vault), "--no-model")  # init names the folder itself
    assert code == 8 and out["error"]["code"] == "read_only_corpus", out
    # A dry run writes nothing, so it is answered: what the write would do.
    assert dory.ok(*corpus, "write", "new.md", "--content", "# New", "--dry-run")["dry_run"] is True


def test_a_vault_without_output_is_only_indexed_and_searched(tmp_path: Path, dory_cmd: list[str]) -> None:
    vault = build_fixture(tmp_path / "notes")
    env = user_env(tmp_path)
    dory = Dory(dory_cmd, env, vault)
    before = fingerprint(vault)
    added = dory.ok("add", str(vault), "--no-output")
    assert added["output"] is None

    dory.ok("reindex")
    assert dory.ok("search", "grinder")["hits"][0]["path"] == "Coffee/Grinder.md"
    schedules = {job["name"]: job["schedule"] for job in dory.ok("ops", "jobs")["jobs"]}
    for name, spec in JOBS.items():
        if spec.writes_output:
            assert schedules[name] == "off (this corpus has no output folder)", (name, schedules)
            error = dory.refused("ops", "run", name)
            assert "no output folder" in error["message"]
    transcript = (CAPTURE_FIXTURES / "claude-code.jsonl").read_bytes()
    code, out = dory.run("sessions", "ingest", "-", "--format", "claude-code", stdin=transcript)
    assert code == 8 and out["error"]["code"] == "read_only_corpus", out
    assert dory.ok("proposals", "list")["proposals"] == []
    assert dory.ok("ops", "run", "reconcile")["status"] == "ok"

    assert fingerprint(vault) == before
    assert not (Path(env["XDG_DATA_HOME"]) / "dory").exists()  # no output folder was made either


def test_a_writable_vault_takes_the_writes_asked_for_and_nothing_else(tmp_path: Path, dory_cmd: list[str]) -> None:
    vault = build_fixture(tmp_path / "notes")
    dory = Dory(dory_cmd, user_env(tmp_path), vault)
    before = fingerprint(vault)
    dory.ok("add", str(vault), "--writable")
    dory.ok("reindex")
    assert fingerprint(vault) == before  # indexing still writes nothing there

    written = dory.ok("write", "Coffee/Filter.md", "--content", "# Filter")
    after = fingerprint(vault)
    added = {rel for rel in after if rel not in before and not rel.endswith("/")}
    assert added == {"Coffee/Filter.md", written["provenance"]}  # the note, and the record of the write
    assert not (vault / ".dory").exists()


def test_an_edit_in_the_output_folder_is_indexed_by_the_running_daemon(
    tmp_path: Path, dory_cmd: list[str], daemon_factory: Callable[..., DaemonProcess]
) -> None:
    vault = build_fixture(tmp_path / "notes")
    env = user_env(tmp_path)
    dory = Dory(dory_cmd, env, vault)
    before = fingerprint(vault)
    output = Path(dory.ok("add", str(vault))["output"])
    daemon = daemon_factory(vault, env).start()
    assert daemon.status().output_watcher is not None and daemon.status().output_watcher["alive"] is True
    page = output / "digests/daily/2026-01-02.md"  # the user adds a line to a digest
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text("# 2026-01-02\n\nThe zookeeper feeds the quokkas at dawn.\n", encoding="utf-8")
    (output / "stray.md").write_text("# Stray\n\nquokkas outside Dory's folders are not read\n", encoding="utf-8")

    def found() -> list[str]:
        return [hit["path"] for hit in dory.ok("search", "quokkas")["hits"]]

    wait_until(lambda: "digests/daily/2026-01-02.md" in found(), what="the output folder's edit to be indexed")
    assert daemon.stop() == 0
    assert found() == ["digests/daily/2026-01-02.md"] and fingerprint(vault) == before
