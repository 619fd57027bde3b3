"""Progress on long commands (eval, sessions import-local, ops run reconcile; reindex and migrate have
their own tests):
the service reports each step to the progress callable it is given, with counts that only go up and
end at the total; the CLI draws a bar from it on a terminal and prints nothing extra otherwise.

Nothing here depends on time: the callable records every call, and the terminal test reads what
the finished command wrote to a pseudo-terminal (rich draws the bar once more as it stops).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from support.waiting import DEADLINE_S

from dory.config import load_settings
from dory.models import EvalRequest, JobRunRequest, ReindexRequest, SessionImportRequest
from dory.service import DoryService
from dory.surfaces.progress import terminal_progress

FIXTURES = Path(__file__).resolve().parents[1] / "sessions" / "fixtures"
CLAUDE = FIXTURES / "5b6f9a1e-2c3d-4e5f-8a9b-0c1d2e3f4a5b.jsonl"
CODEX = FIXTURES / "rollout-2026-11-21T09-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl"
NOTES = {f"n{i}.md": f"# Note {i}\nneedle {i}\n" for i in range(5)}
QUERIES = [{"query": "needle", "expected": [f"n{i}.md"]} for i in range(3)]

Calls = list[tuple[str, int, int]]


def recorder() -> tuple[Calls, Callable[[str, int, int], None]]:
    calls: Calls = []

    def progress(phase: str, done: int, total: int) -> None:
        calls.append((phase, done, total))

    return calls, progress


def counted_up_to_the_total(calls: Calls, phase: str, total: int) -> bool:
    counts = [done for name, done, _ in calls if name == phase]
    return (
        bool(counts)
        and all(t == total for name, _, t in calls if name == phase)
        and counts == sorted(set(counts))  # strictly increasing
        and counts[-1] == total
    )


def harness_folders(tmp_path: Path) -> dict[str, Path]:
    """Two Claude Code transcripts and one Codex rollout, where import-local is told to look."""
    claude, codex = tmp_path / "claude" / "proj", tmp_path / "codex" / "2026" / "11" / "21"
    claude.mkdir(parents=True)
    codex.mkdir(parents=True)
    shutil.copyfile(CLAUDE, claude / CLAUDE.name)
    data = CLAUDE.read_text(encoding="utf-8").replace("5b6f9a1e", "6c7a0b2f")
    (claude / CLAUDE.name.replace("5b6f9a1e", "6c7a0b2f")).write_text(data, encoding="utf-8")
    shutil.copyfile(CODEX, codex / CODEX.name)
    return {"claude_root": tmp_path / "claude", "codex_root": tmp_path / "codex"}


# -- the service drives the callable -------------------------------------------------------------
def test_eval_reports_each_query_of_each_mode(lexical_service) -> None:
    svc = lexical_service(NOTES)
    svc.reindex(ReindexRequest())
    calls, progress = recorder()
    res = svc.evaluate(EvalRequest(queries=QUERIES, modes=["bm25", "exact"]), progress)
    assert [m.mode for m in res.modes] == ["bm25", "exact"]
    assert calls == [("queries", n, 6) for n in range(1, 7)]


def test_eval_counts_a_skipped_mode_as_done(lexical_service) -> None:
    """Vectors are off here: the vector mode is skipped with a warning, and the bar still ends full."""
    svc = lexical_service(NOTES)
    svc.reindex(ReindexRequest())
    calls, progress = recorder()
    res = svc.evaluate(EvalRequest(queries=QUERIES, modes=["vector", "exact"]), progress)
    assert [m.mode for m in res.modes] == ["exact"] and res.warnings
    assert counted_up_to_the_total(calls, "queries", 6) and calls[0] == ("queries", 3, 6)


def test_import_local_reports_each_transcript(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    root.mkdir()
    folders = harness_folders(tmp_path)
    overrides = {"embedder.backend": "none", **{f"capture.{k}": str(v) for k, v in folders.items()}}
    svc = DoryService(load_settings(root, overrides, env={}))
    try:
        calls, progress = recorder()
        res = svc.sessions.import_local(SessionImportRequest(), progress)
    finally:
        svc.close()
    assert res.counts["created"] == 3
    assert calls == [("transcripts", 1, 3), ("transcripts", 2, 3), ("transcripts", 3, 3)]


def test_a_reconcile_run_by_hand_reports_the_lexical_pass(lexical_service) -> None:
    """Without a daemon, `dory ops run reconcile` indexes in this process: its progress shows."""
    svc = lexical_service(NOTES)
    calls, progress = recorder()
    run = svc.run_job(JobRunRequest(job="reconcile"), progress)
    assert run.status == "ok" and run.outputs["new"] == 5
    assert counted_up_to_the_total(calls, "lexical", 5)


# -- the CLI: quiet when not on a terminal, a bar when it is -------------------------------------
@pytest.fixture
def corpus(dory, tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A small indexed corpus, a queries file and the environment pointing import-local at fixtures."""
    root = tmp_path / "corpus"
    root.mkdir()
    for name, text in NOTES.items():
        (root / name).write_text(text, encoding="utf-8")
    assert dory("--corpus", str(root), "reindex").code == 0
    queries = tmp_path / "queries.jsonl"
    queries.write_text("".join(json.dumps(q) + "\n" for q in QUERIES), encoding="utf-8")
    folders = harness_folders(tmp_path)
    env = {
        "DORY_CAPTURE_CLAUDE_ROOT": str(folders["claude_root"]),
        "DORY_CAPTURE_CODEX_ROOT": str(folders["codex_root"]),
    }
    return root, queries, env


COMMANDS = {
    "eval": (["eval", "{queries}", "--mode", "bm25,exact"], b"evaluating queries"),
    "import-local": (["sessions", "import-local"], b"importing transcripts"),
    "reconcile": (["ops", "run", "reconcile", "--force"], b"indexing text"),  # new notes (see `edited`)
}


def edited(root: Path) -> None:
    """Notes saved since the last reindex, for reconcile to index."""
    for i in range(5, 9):
        (root / f"n{i}.md").write_text(f"# Note {i}\nneedle {i}\n", encoding="utf-8")


@pytest.mark.parametrize("name", COMMANDS)
def test_nothing_but_the_result_when_stderr_is_not_a_terminal(dory, corpus, name: str) -> None:
    root, queries, env = corpus
    args, _ = COMMANDS[name]
    for extra in ([], ["--json"]):
        edited(root)
        run = dory("--corpus", str(root), *[a.format(queries=queries) for a in args], *extra, env=env)
        assert run.code == 0, run
        assert run.stderr == "", run


def on_a_terminal(dory, args: list[str], env: dict[str, str], **options: Any) -> tuple[Any, bytes]:
    """Run with stderr on a pseudo-terminal; what the command wrote there, once it has finished."""
    main_fd, sub_fd = os.openpty()
    seen: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(main_fd, 4096)
            except OSError:
                return
            if not data:
                return
            seen.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        run = dory(*args, stderr=sub_fd, stdout=subprocess.PIPE, env={"TERM": "xterm", **env}, **options)
    finally:
        os.close(sub_fd)
        reader.join(DEADLINE_S)  # reads to the end of what the finished command wrote
        os.close(main_fd)
    assert not reader.is_alive()
    return run, b"".join(seen)


@pytest.mark.parametrize("name", COMMANDS)
def test_a_bar_on_a_terminal_and_stdout_stays_the_result(dory, corpus, name: str) -> None:
    root, queries, env = corpus
    args, label = COMMANDS[name]
    edited(root)
    run, terminal = on_a_terminal(
        dory, ["--corpus", str(root), *[a.format(queries=queries) for a in args], "--json"], env
    )
    assert run.code == 0, run
    assert json.loads(run.stdout)  # one JSON document, nothing of the bar in it
    assert label in terminal and b"/" in terminal  # the bar's label, and its done/total count


# -- the embedding bar: count, recent rate, time left (dory/index/eta.py) -------------------------
def test_the_bar_shows_the_rate_and_time_left_once_enough_batches_were_timed() -> None:
    """A terminal the test reads (rich draws once more as it stops) and a clock it sets: the vectors
    phase has four timed batches of 128 chunks in 2 s each, the session turns only one so far."""
    screen = io.StringIO()
    now = [0.0]
    console = Console(file=screen, force_terminal=True, width=160, color_system=None)
    with terminal_progress(console, clock=lambda: now[0]) as progress:
        for done in range(0, 5 * 128, 128):
            progress("vectors", done, 4096)
            now[0] += 2.0
        progress("session vectors", 0, 300)
        now[0] += 1.0
        progress("session vectors", 100, 300)
    drawn = screen.getvalue()
    assert "embedding " in drawn and "512/4,096 chunks · 64.0 chunks/s · 56 s left" in drawn
    assert "embedding session turns" in drawn and "100/300 turns · estimating…" in drawn


@pytest.mark.model
def test_reindex_on_a_terminal_shows_the_embedding_phase(dory, tmp_path: Path) -> None:
    """The real model on a real pseudo-terminal: the embedding bar and its count of chunks are drawn."""
    root = tmp_path / "corpus"
    root.mkdir()
    for name, text in NOTES.items():
        (root / name).write_text(text, encoding="utf-8")
    run, terminal = on_a_terminal(dory, ["--corpus", str(root), "reindex", "--json"], {}, backend=None)
    assert run.code == 0, run
    assert json.loads(run.stdout)["vectors_embedded"] == len(NOTES)
    assert b"embedding" in terminal and b"/5 chunks" in terminal
