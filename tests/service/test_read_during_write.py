"""A reader never sees a note missing while a write replaces it: neither a GET nor a search.

A replace is a compare-and-swap (dory/corpus/atomic.py): the note is renamed aside, checked, and
the new version linked in. At each step where a write pauses (its crash points), a GET from another
thread must answer with the old note or the new one, never not_found or a hard-link refusal. This
reproduces the CI failure of issue 19's stop: a GET during a memory write answered not_found.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from support.waiting import DEADLINE_S

from dory.corpus import atomic
from dory.models import GetRequest, MemoryWriteRequest, ReindexRequest, SearchRequest, WriteRequest
from dory.service import DoryService

PAGE = "people/ana-lima.md"
SEED = {PAGE: "---\ntitle: Ana Lima\n---\n\n## Summary\n\nAna makes pottery.\n"}


def get_from_another_thread(svc: DoryService) -> str:
    """What a GET in another thread answers right now: the note's content, or the error's repr; and
    a search for the note must not call it gone."""
    answer: list[str] = []

    def read() -> None:
        try:
            page = [hit for hit in svc.search(SearchRequest(query="Ana pottery", mode="bm25")).hits if hit.path == PAGE]
            assert len(page) == 1 and "no longer on disk" not in (page[0].stale_warning or ""), page
            answer.append(svc.get(GetRequest(path=PAGE)).content)
        except Exception as exc:  # the answer under test; any error is a failure below
            answer.append(repr(exc))

    reader = threading.Thread(target=read)
    reader.start()
    reader.join(DEADLINE_S)
    assert answer, "the GET hung while a write was paused"
    return answer[0]


@pytest.mark.parametrize(
    "write",
    [
        lambda svc: svc.write(WriteRequest(path=PAGE, kind="append", content="Ana throws porcelain now.\n")),
        lambda svc: svc.memory_write(
            MemoryWriteRequest(subject="Ana Lima", content="Ana teaches a wheel class.", allow_canonical=True)
        ),
    ],
    ids=["append", "memory-write"],
)
def test_a_get_at_every_step_of_a_write_sees_the_old_note_or_the_new_one(
    lexical_service: Callable[[dict[str, str | bytes]], DoryService],
    monkeypatch: pytest.MonkeyPatch,
    write: Callable[[DoryService], object],
) -> None:
    svc = lexical_service(dict(SEED))
    svc.reindex(ReindexRequest())
    seen: dict[str, str] = {}
    real_crash_point = atomic.crash_point

    def read_at(name: str) -> None:
        real_crash_point(name)
        if name.startswith(("swap.", "create.", "atomic.")):
            seen[name] = get_from_another_thread(svc)

    monkeypatch.setattr(atomic, "crash_point", read_at)
    old = get_from_another_thread(svc)
    write(svc)
    new = get_from_another_thread(svc)
    assert {"swap.aside", "swap.linked"} <= seen.keys()  # the write did pause with the note aside
    assert new != old
    for step, content in seen.items():
        assert content in (old, new), f"at {step} a GET answered {content!r}"
