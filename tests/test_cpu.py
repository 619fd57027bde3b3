"""The thread policy in dory/cpu.py: the one-thread limit of the query path and its bookkeeping."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import pytest

from dory import cpu

pytestmark = pytest.mark.skipif(cpu.blas_threads() is None, reason="numpy's BLAS is not an OpenBLAS found by ctypes")


@pytest.fixture(autouse=True)
def two_threads() -> Iterator[None]:
    """Every test starts from 2 BLAS threads (whatever the machine has) and leaves the count as it found it."""
    before = cpu.blas_threads()
    assert cpu.set_blas_threads(2)
    yield
    assert before is not None
    cpu.set_blas_threads(before)


def test_the_limit_holds_one_thread_inside_and_restores_the_count_after() -> None:
    with cpu.single_blas_thread():
        assert cpu.blas_threads() == 1
        with cpu.single_blas_thread():  # nested: still one, and the outer exit restores
            assert cpu.blas_threads() == 1
        assert cpu.blas_threads() == 1
    assert cpu.blas_threads() == 2


def test_the_count_is_restored_even_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError), cpu.single_blas_thread():
        raise RuntimeError("boom")
    assert cpu.blas_threads() == 2


def test_overlapping_holders_in_two_threads_restore_the_count_only_when_the_last_leaves() -> None:
    inside, release = threading.Event(), threading.Event()
    seen: list[int | None] = []

    def other() -> None:
        with cpu.single_blas_thread():
            inside.set()
            release.wait()
            seen.append(cpu.blas_threads())

    worker = threading.Thread(target=other)
    with cpu.single_blas_thread():
        worker.start()
        assert inside.wait(60)
    # This thread left first: the other still holds the limit.
    assert cpu.blas_threads() == 1
    release.set()
    worker.join(60)
    assert seen == [1]
    assert cpu.blas_threads() == 2


def test_a_count_set_while_the_limit_is_held_applies_when_it_is_released() -> None:
    with cpu.single_blas_thread():
        assert cpu.set_blas_threads(3)
        assert cpu.blas_threads() == 1
    assert cpu.blas_threads() == 3


def test_results_on_one_thread_equal_those_on_two() -> None:
    rng = np.random.default_rng(7)
    a = rng.standard_normal((300, 384)).astype(np.float32)
    b = rng.standard_normal((384, 1536)).astype(np.float32)
    many = a @ b
    with cpu.single_blas_thread():
        one = a @ b
    np.testing.assert_allclose(one, many, rtol=0, atol=1e-4)


@pytest.mark.parametrize(
    ("value", "foreground", "background"),
    [(None, "cpus", 1), ("3", 3, 3), ("0", "cpus", 1), ("two", "cpus", 1), (" 2 ", 2, 2)],
)
def test_dory_blas_threads_overrides_both_defaults(
    monkeypatch: pytest.MonkeyPatch, value: str | None, foreground: int | str, background: int
) -> None:
    if value is None:
        monkeypatch.delenv(cpu.THREADS_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(cpu.THREADS_VARIABLE, value)
    expected = cpu.usable_cpu_count() if foreground == "cpus" else foreground
    assert cpu.default_blas_threads() == expected
    assert cpu.background_blas_threads() == background


def test_the_limit_acts_on_numpys_openblas_not_one_another_library_bundles() -> None:
    """faiss-cpu ships its own OpenBLAS; setting that one would leave numpy's products on every core."""
    import faiss  # noqa: F401  (loads faiss's OpenBLAS into the process)

    library = cpu.blas_library()
    assert library is not None
    assert "faiss" not in library
    assert "numpy" in library or "scipy_openblas" in library
