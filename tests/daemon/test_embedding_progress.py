"""`dory status` while the daemon's embedder works through a backlog: chunks pending, the recent
rate and the time left; "estimating…" before enough batches; nothing once the backlog is done.

A real `dory ops watch` embeds through an OpenAI-compatible endpoint that the test holds after a
given number of answers (support/fake_embeddings.py), so the backlog is observed where the test put
it: every wait is on the daemon's record or the status it reports, never on time.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from support.daemon import DaemonProcess, daemon_env
from support.fake_embeddings import GatedEmbeddings
from support.waiting import DEADLINE_S, wait_until

from dory.models import DaemonStatus

NOTES = 12
BATCH = 2  # chunks per embedder batch: six batches for the corpus


def make_corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    for i in range(NOTES):
        (root / f"n{i:02}.md").write_text(f"# Note {i}\n\nThe body of note number {i}.\n", encoding="utf-8")
    return root


def embedder_env(server: GatedEmbeddings) -> dict[str, str]:
    return daemon_env(
        lexical=False,
        DORY_EMBEDDER_BACKEND="openai",
        DORY_EMBEDDER_URL=server.url,
        DORY_EMBEDDER_MODEL="fake-embed",
        DORY_EMBEDDER_DIMS=str(server.dims),
        DORY_EMBEDDER_TIMEOUT_S=str(DEADLINE_S),  # a held request is a wait, not a failure
        DORY_DAEMON_EMBED_BATCH=str(BATCH),
    )


def record_shows(daemon: DaemonProcess, stored: int) -> DaemonStatus | None:
    st = daemon.status()
    return st if st.running and st.embedder.get("stored") == stored else None


def status(daemon: DaemonProcess) -> tuple[dict[str, Any], str]:
    """`dory status --json` and the human `dory status`, from the command line."""
    code, body, err = daemon.cli("status")
    assert code == 0, err
    text = subprocess.run(
        [*daemon.cmd, "--corpus", str(daemon.root), "status"],
        env=daemon.env,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )
    assert text.returncode == 0, text.stderr
    return body, text.stdout


def test_status_shows_the_backlog_its_rate_and_the_time_left(tmp_path: Path, daemon_factory) -> None:
    root = make_corpus(tmp_path)
    with GatedEmbeddings() as server:
        server.allow(2)
        daemon = daemon_factory(root, embedder_env(server)).start(wait=False)
        try:
            # Two batches embedded, the third held: too few batches to estimate from.
            wait_until(lambda: record_shows(daemon, 2 * BATCH), what="two batches embedded")
            body, text = status(daemon)
            pending = body["chunks"] - 2 * BATCH
            assert pending > 0 and body["vectors_pending"] == pending
            assert body["embedding"] == {"chunks_pending": pending, "rate_per_s": None, "eta_s": None}
            assert f"embedding    {pending} chunks pending · estimating…" in text.splitlines()

            # A third batch: now there is a rate, and the time left is the backlog at that rate.
            server.allow(3)
            record = wait_until(lambda: record_shows(daemon, 3 * BATCH), what="three batches embedded")
            assert record.embedder["rate_per_s"] is not None and record.embedder["rate_per_s"] > 0
            body, text = status(daemon)
            embedding = body["embedding"]
            rate, pending = embedding["rate_per_s"], body["chunks"] - 3 * BATCH
            assert embedding["chunks_pending"] == pending > 0 and rate == record.embedder["rate_per_s"]
            assert embedding["eta_s"] == round(pending / rate, 1)
            [line] = [line for line in text.splitlines() if line.startswith("embedding ")]
            assert line.startswith(f"embedding    {pending} chunks pending · ") and line.endswith(" left")
            assert "chunks/s" in line

            # The backlog done: no ETA, and the human status has no embedding line.
            server.allow(None)
            daemon.wait_idle()
            body, text = status(daemon)
            assert body["vectors_pending"] == 0 and body["embedding"] is None
            assert body["daemon"]["embedder"]["rate_per_s"] > 0  # the rate is kept for the next backlog
            assert not [line for line in text.splitlines() if line.startswith("embedding ")]
        finally:
            server.allow(None)
            assert daemon.stop() == 0
