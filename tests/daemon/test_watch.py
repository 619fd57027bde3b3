"""Editors save notes in many ways; a real `dory ops watch` must end up with the note indexed.

Each test drives the real filesystem (and real tools: sed, vim, git) against one daemon process,
then waits until the daemon's index equals what a fresh full reindex makes of the corpus.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from support.daemon import DaemonProcess, daemon_env, fresh_reindex, indexed
from support.waiting import DEADLINE_S, wait_until

from dory.jobs.registry import JOBS
from dory.models import DaemonStatus

NOTE = "---\ntitle: {title}\n---\n# {title}\n\n{body}\n"
# No scheduled job (a reconcile, a report written into the corpus) in a test that counts what the
# watcher did: a job firing meanwhile would depend on the time of day the test runs.
JOBS_OFF = {f"DORY_JOBS_{name.upper().replace('-', '_')}": "off" for name in JOBS}
# The longest debounce there is (max delay too): nothing the test does is due before it stops the
# daemon, which applies everything queued on the way out.
LONG_DEBOUNCE = {"DORY_DAEMON_DEBOUNCE_MS": "60000", "DORY_DAEMON_MAX_DELAY_MS": "600000"}


def note(title: str, body: str) -> str:
    return NOTE.format(title=title, body=body)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    for i in range(5):
        (root / "notes").mkdir(parents=True, exist_ok=True)
        (root / "notes" / f"n{i}.md").write_text(note(f"Note {i}", f"ordinary text number {i}"))
    (root / "dory.toml").write_text('[index]\nignore = ["private/*"]\n')
    return root


@pytest.fixture
def daemon(corpus: Path, daemon_factory: Callable[..., DaemonProcess]) -> DaemonProcess:
    return daemon_factory(corpus).start()


def settles_to_fresh(daemon: DaemonProcess, tmp_path: Path) -> dict[str, str]:
    """Wait until the daemon's index equals a fresh full reindex of the corpus as it is now."""
    expected = fresh_reindex(daemon.root, daemon.env, tmp_path / "fresh-state")
    wait_until(lambda: indexed(daemon.root, daemon.env) == expected, what="the index to match a fresh reindex")
    return expected


def chunk_ids(daemon: DaemonProcess, path: str) -> list[int]:
    from dory.index.store import IndexStore

    store = IndexStore(daemon.settings.db_path, daemon.settings.index.tokenizer, readonly=True)
    try:
        return [
            r[0]
            for r in store.conn.execute(
                "SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.path = ? ORDER BY c.ordinal",
                (path,),
            )
        ]
    finally:
        store.close()


def test_startup_reconcile_indexes_the_corpus(daemon: DaemonProcess, tmp_path: Path) -> None:
    assert len(settles_to_fresh(daemon, tmp_path)) == 5


def test_in_place_save(daemon: DaemonProcess, tmp_path: Path) -> None:
    path = daemon.root / "notes/n1.md"
    with open(path, "w") as handle:
        handle.write(note("Note 1", "rewritten in place with quokka"))
    settles_to_fresh(daemon, tmp_path)
    code, body, _ = daemon.cli("search", "quokka", "-m", "bm25")
    assert code == 0 and [h["path"] for h in body["hits"]] == ["notes/n1.md"]


def test_atomic_save_by_temp_file_and_rename(daemon: DaemonProcess, tmp_path: Path) -> None:
    tmp = daemon.root / "notes/.n2.md.tmp"
    tmp.write_text(note("Note 2", "atomically replaced wombat"))
    os.replace(tmp, daemon.root / "notes/n2.md")
    expected = settles_to_fresh(daemon, tmp_path)
    assert "notes/.n2.md.tmp" not in expected and "notes/n2.md" in expected


def test_sed_in_place(daemon: DaemonProcess, tmp_path: Path) -> None:
    subprocess.run(["sed", "-i", "s/ordinary/sedited/", str(daemon.root / "notes/n3.md")], check=True)
    settles_to_fresh(daemon, tmp_path)
    _code, body, _ = daemon.cli("search", "sedited", "-m", "bm25")
    assert [h["path"] for h in body["hits"]] == ["notes/n3.md"]


@pytest.mark.parametrize("backup", ["set nobackup nowritebackup", "set backup writebackup backupcopy=no"])
def test_real_vim_write_with_swap_and_backup_files(daemon: DaemonProcess, tmp_path: Path, backup: str) -> None:
    if shutil.which("vim") is None:
        pytest.skip("vim is not installed")
    path = daemon.root / "notes/n4.md"
    ids_before = chunk_ids(daemon, "notes/n4.md")
    subprocess.run(
        ["vim", "-u", "NONE", "-N", "-es", "-c", backup, "-c", "%s/ordinary/vimmed/", "-c", "wq", str(path)],
        check=True,
        timeout=DEADLINE_S,
    )
    expected = settles_to_fresh(daemon, tmp_path)
    assert sorted(expected) == [f"notes/n{i}.md" for i in range(5)]  # no swap, backup or 4913 file
    assert "vimmed" in path.read_text()
    assert chunk_ids(daemon, "notes/n4.md") != ids_before  # re-indexed (chunk ids are never reused)


def test_jetbrains_safe_write(daemon: DaemonProcess, tmp_path: Path) -> None:
    folder = daemon.root / "notes"
    (folder / "n0.md___jb_tmp___").write_text(note("Note 0", "safe write of a jetbrains numbat"))
    os.rename(folder / "n0.md", folder / "n0.md___jb_old___")
    os.rename(folder / "n0.md___jb_tmp___", folder / "n0.md")
    (folder / "n0.md___jb_old___").unlink()
    settles_to_fresh(daemon, tmp_path)
    _, body, _ = daemon.cli("search", "numbat", "-m", "bm25")
    assert [h["path"] for h in body["hits"]] == ["notes/n0.md"]


def test_obsidian_workspace_churn_and_trash_folder(daemon: DaemonProcess, tmp_path: Path) -> None:
    obsidian = daemon.root / ".obsidian"
    obsidian.mkdir()
    (obsidian / "workspace.json").write_text("{}")
    (obsidian / "snippet.md").write_text("# never indexed\n")
    with open(daemon.root / "notes/n1.md", "w") as handle:  # Obsidian saves in place
        handle.write(note("Note 1", "obsidian edit of a platypus"))
    (daemon.root / ".trash").mkdir()
    os.rename(daemon.root / "notes/n2.md", daemon.root / ".trash/n2.md")  # Obsidian "delete"
    expected = settles_to_fresh(daemon, tmp_path)
    assert "notes/n2.md" not in expected and not any(p.startswith((".obsidian", ".trash")) for p in expected)


def test_rename_and_folder_move_keep_chunks_and_reindex_nothing(daemon: DaemonProcess, tmp_path: Path) -> None:
    ids = chunk_ids(daemon, "notes/n1.md")
    os.rename(daemon.root / "notes/n1.md", daemon.root / "notes/renamed.md")
    settles_to_fresh(daemon, tmp_path)
    assert chunk_ids(daemon, "notes/renamed.md") == ids
    moved_ids = {p: chunk_ids(daemon, f"notes/{p}") for p in ("n0.md", "n2.md", "renamed.md")}
    os.rename(daemon.root / "notes", daemon.root / "archive")
    settles_to_fresh(daemon, tmp_path)
    assert {p: chunk_ids(daemon, f"archive/{p}") for p in moved_ids} == moved_ids


def test_delete_is_applied_but_delete_then_recreate_keeps_the_note(
    corpus: Path, daemon_factory: Callable[..., DaemonProcess], tmp_path: Path
) -> None:
    # The recreate must come within the debounce, however slowly this test runs: a long debounce, and
    # the daemon is stopped (which applies what it queued) instead of waited for.
    slow = daemon_factory(corpus, daemon_env(**LONG_DEBOUNCE, **JOBS_OFF)).start()
    ids = chunk_ids(slow, "notes/n3.md")
    text = (corpus / "notes/n3.md").read_text()
    (corpus / "notes/n3.md").unlink()
    (corpus / "notes/n3.md").write_text(text)  # an editor's delete-then-recreate
    wait_until(lambda: slow.status().pending_paths == 1, what="the daemon to queue the deleted note")
    assert slow.stop() == 0
    assert chunk_ids(slow, "notes/n3.md") == ids  # never dropped, so never re-chunked
    daemon = daemon_factory(corpus).start()
    (corpus / "notes/n4.md").unlink()
    assert "notes/n4.md" not in settles_to_fresh(daemon, tmp_path)
    assert chunk_ids(daemon, "notes/n3.md") == ids


def test_moves_from_and_to_unwatched_folders_and_new_folders(daemon: DaemonProcess, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "incoming.md").write_text(note("Incoming", "arrived from outside"))
    (outside / "single.md").write_text(note("Single", "one file moved in"))
    os.rename(outside / "deep", daemon.root / "deep")
    os.rename(outside / "single.md", daemon.root / "notes/single.md")
    nested = daemon.root / "a/b/c"
    nested.mkdir(parents=True)
    (nested / "fresh.md").write_text(note("Fresh", "in a brand new folder"))
    expected = settles_to_fresh(daemon, tmp_path)
    assert {"deep/incoming.md", "notes/single.md", "a/b/c/fresh.md"} <= set(expected)
    os.rename(daemon.root / "deep", outside / "deep-back")
    os.rename(daemon.root / "notes/n0.md", outside / "n0.md")
    expected = settles_to_fresh(daemon, tmp_path)
    assert "deep/incoming.md" not in expected and "notes/n0.md" not in expected


def test_temp_swap_conflict_and_ignored_files_are_never_indexed(daemon: DaemonProcess, tmp_path: Path) -> None:
    junk = [
        "notes/.n1.md.swp",
        "notes/.n1.md.swx",
        "notes/n1.md~",
        "notes/4913",
        "notes/n1.sync-conflict-20260101.md",
        "notes/n1 (conflicted copy 2026-01-01).md",
        "notes/.hidden.md",
        "private/secret.md",
        ".git/notes.md",
        "notes/sedAbC123",
    ]
    for rel in junk:
        (daemon.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (daemon.root / rel).write_text(note("junk", "should never be indexed zebra"))
    (daemon.root / "notes/real.md").write_text(note("Real", "a real zebra note"))
    expected = settles_to_fresh(daemon, tmp_path)
    assert "notes/real.md" in expected
    assert not set(junk) & set(indexed(daemon.root, daemon.env))
    _, body, _ = daemon.cli("search", "zebra", "-m", "bm25")
    assert [h["path"] for h in body["hits"]] == ["notes/real.md"]


def test_a_note_synced_in_by_syncthing_is_indexed_like_any_save(daemon: DaemonProcess, tmp_path: Path) -> None:
    """Syncthing writes `.syncthing.<name>.tmp` beside the note and renames it into place; it keeps
    conflicting versions as `<name>.sync-conflict-<date>-<time>-<device>.md`, old versions in
    `.stversions/` and a `.stfolder` marker. Only the synced notes themselves enter the index."""
    notes = daemon.root / "notes"
    for name, body in (("n4.md", "changed on the laptop, a narwhal"), ("from-laptop.md", "a new narwhal note")):
        temp = notes / f".syncthing.{name}.tmp"
        temp.write_text(note(name, body))
        os.replace(temp, notes / name)
    junk = [
        "notes/n4.sync-conflict-20261126-013104-7NCQ3XW.md",
        ".stversions/notes/n4~20261126-013104.md",
        "notes/.syncthing.half-written.md.tmp",
        ".stfolder/marker.md",
    ]
    for rel in junk:
        (daemon.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (daemon.root / rel).write_text(note("junk", "an older narwhal"))
    expected = settles_to_fresh(daemon, tmp_path)
    assert not set(junk) & set(expected)
    _, body, _ = daemon.cli("search", "narwhal", "-m", "bm25")
    assert sorted(h["path"] for h in body["hits"]) == ["notes/from-laptop.md", "notes/n4.md"]


BATCH = re.compile(r"batch of (\d+) paths: (\d+) new, (\d+) changed, (\d+) renamed, (\d+) deleted")


def test_git_checkout_of_thousands_of_files_is_batched(corpus: Path, daemon_factory, tmp_path: Path) -> None:
    """How many batches a checkout takes while the daemon runs depends on how fast git writes and the
    writer applies, so it is not asserted. What is promised whatever the speed: each note is queued once
    however many events it makes, what is queued is applied in batches of at most 500 paths (on SIGTERM,
    before the daemon exits), and each note is indexed exactly once."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    git = ["git", "-C", str(corpus), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    subprocess.run([*git, "checkout", "-qb", "big"], check=True)
    bulk = corpus / "bulk"
    for i in range(2000):
        (bulk / f"d{i % 20}").mkdir(parents=True, exist_ok=True)
        (bulk / f"d{i % 20}" / f"f{i}.md").write_text(note(f"Bulk {i}", f"bulk file {i} about topic {i % 7}"))
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "bulk"], check=True)
    subprocess.run([*git, "checkout", "-q", "main"], check=True)

    # Nothing the checkout touches is due before the test stops the daemon (unless queueing 2000 paths
    # takes a minute: a hang, and the log check below says so). Debug logging shows each batch.
    daemon = daemon_factory(corpus, daemon_env(DORY_DAEMON_LOG_LEVEL="debug", **LONG_DEBOUNCE, **JOBS_OFF)).start()
    log_start = daemon.log.stat().st_size
    subprocess.run([*git, "checkout", "-q", "big"], check=True)
    queued = 2000 + 1 + 20  # every note and every new folder (folders are queued whole), once each
    last: list[DaemonStatus] = []

    def all_queued() -> bool:
        last[:] = [daemon.status()]
        return last[0].pending_paths >= queued or last[0].watcher["overflows"] > 0  # lost events: see below

    wait_until(all_queued, what=f"the daemon to queue {queued} paths")
    assert last[0].pending_paths == queued and last[0].writer["batches"] == 0, last[0]
    assert daemon.stop() == 0  # SIGTERM: the writer applies everything already queued, then exits

    log = daemon.log.read_bytes()[log_start:].decode()
    before_stop, _, on_stop = log.partition(" stopping\n")
    assert on_stop and not BATCH.search(before_stop), f"a batch was applied before the stop:\n{before_stop[-3000:]}"
    batches = [tuple(map(int, found)) for found in BATCH.findall(on_stop)]
    assert [b[0] for b in batches] == [500, 500, 500, 500, 21], batches  # coalesced, ≤ 500 paths a batch
    assert [sum(b[i] for b in batches) for i in range(1, 5)] == [2000, 0, 0, 0], batches  # each note once

    restarted = daemon_factory(corpus).start()  # the usual debounce
    assert restarted.status().writer["files_changed"] == 0  # the start-up reconcile found nothing left
    assert len(settles_to_fresh(restarted, tmp_path)) == 2005
    subprocess.run([*git, "checkout", "-q", "main"], check=True)
    assert len(settles_to_fresh(restarted, tmp_path)) == 5


def test_sigterm_and_sigint_exit_zero_and_clean_up(corpus: Path, daemon_factory) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        daemon = daemon_factory(corpus).start()
        assert daemon.stop(sig) == 0
        status = daemon.status()
        assert not status.running and status.note is None  # no stale record left
        assert not daemon.settings.daemon_state_path.exists()


def test_a_burst_of_stop_signals_ends_the_daemon_cleanly(corpus: Path, daemon_factory) -> None:
    """Issue 15, item 8 (the daemon that never stopped while its watcher re-armed): the signal
    handler logged and set an Event, so a signal arriving while an earlier handler ran re-entered
    it: inside Event.set() it deadlocked, inside logging it recursed until RecursionError broke the
    stop half-way. SIGINT and SIGTERM are sent in turn, without pause, until the daemon has stopped."""
    daemon = daemon_factory(corpus).start()
    pid = daemon.proc.pid

    def stopped() -> bool:
        return daemon.proc.poll() is not None or "dory.daemon: stopped" in daemon.log.read_text()

    def burst() -> bool:
        for n in range(500):
            if stopped():
                return True
            os.kill(pid, (signal.SIGINT, signal.SIGTERM)[n % 2])
        return stopped()

    wait_until(burst, what="the daemon to stop")
    assert daemon.proc.wait(DEADLINE_S) == 0
    assert "Traceback" not in daemon.log.read_text()
    assert not daemon.settings.daemon_state_path.exists()


def test_a_second_daemon_on_the_same_corpus_is_refused(daemon: DaemonProcess, daemon_factory) -> None:
    second = daemon_factory(daemon.root, daemon_env(DORY_DAEMON_DEBOUNCE_MS="100"))
    run = subprocess.run(
        [*second.cmd, "--corpus", str(daemon.root), "ops", "watch", "--wait", "0"],
        env=second.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 6
    assert f"error [daemon_already_running]: a Dory daemon (pid {daemon.proc.pid}) is already watching" in run.stderr


def test_reindex_and_status_while_the_daemon_runs(daemon: DaemonProcess, tmp_path: Path) -> None:
    code, body, err = daemon.cli("reindex", "--full")
    assert code == 0, err
    assert body["unchanged"] == 0 and body["changed"] == 5
    assert any("run by the daemon" in w for w in body["warnings"])
    code, status, _ = daemon.cli("status")
    assert code == 0
    assert status["daemon"]["running"] is True and status["daemon"]["pid"] == daemon.proc.pid
    assert status["daemon"]["watcher"]["alive"] is True
    assert (status["files_on_disk"], status["files_indexed"], status["pending_changes"]) == (5, 5, 0)


def test_kill_9_leaves_a_stale_record_that_status_reports_and_restart_repairs(
    daemon: DaemonProcess, daemon_factory, tmp_path: Path
) -> None:
    pid = daemon.proc.pid
    daemon.kill9()
    (daemon.root / "notes/while-down.md").write_text(note("Down", "written while the daemon was dead"))
    _code, status, _ = daemon.cli("status")
    assert status["daemon"]["running"] is False
    assert f"a daemon (pid {pid}) stopped without cleaning up" in status["daemon"]["note"]
    assert status["pending_changes"] == 1
    daemon.start()
    assert "notes/while-down.md" in settles_to_fresh(daemon, tmp_path)
