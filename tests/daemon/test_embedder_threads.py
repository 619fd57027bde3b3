"""The daemon's background embedder sets its process to the background BLAS thread count."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.waiting import DEADLINE_S, wait_until

from dory import cpu
from dory.config import load_settings
from dory.daemon.process import Daemon

pytestmark = [
    pytest.mark.model,
    pytest.mark.skipif(cpu.blas_threads() is None, reason="numpy's BLAS is not an OpenBLAS found by ctypes"),
]


@pytest.mark.parametrize(("variable", "expected"), [(None, 1), ("2", 2)])
def test_the_daemon_embeds_on_the_background_thread_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str | None, expected: int
) -> None:
    if variable is None:
        monkeypatch.delenv(cpu.THREADS_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(cpu.THREADS_VARIABLE, variable)
    root = tmp_path / "corpus"
    (root / "notes").mkdir(parents=True)
    (root / "notes/bread.md").write_text("# Bread\n\nKnead the dough and let it rise overnight.\n")
    before = cpu.blas_threads()
    assert cpu.set_blas_threads(3)  # neither value the daemon may choose
    daemon = Daemon(load_settings(root, {"daemon.debounce_ms": 50}, env={}))
    daemon.start()
    try:
        assert daemon.startup_done.wait(DEADLINE_S), "the start-up reconcile never finished"
        wait_until(lambda: daemon.snapshot()["idle"], what="the first embedding pass")
        assert daemon.snapshot()["vectors_pending"] == 0
        assert cpu.blas_threads() == expected
    finally:
        daemon.stop()
        assert before is not None
        cpu.set_blas_threads(before)
