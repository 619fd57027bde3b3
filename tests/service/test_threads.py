"""One DoryService shared by many threads: mixed searches, reads, exact writes and memory writes.

Every write is checked afterwards on disk, in the index and (memory writes) in the claim store,
exactly once each, and no call may raise. The model is real, so hybrid searches embed queries on
several threads at once while writes re-index notes.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from dory.config import load_settings
from dory.memory import claims
from dory.models import GetRequest, MemoryWriteRequest, ReindexRequest, SearchRequest, WriteRequest
from dory.service import DoryService

THREADS = 8
OPS_PER_THREAD = 250  # 2,000 operations in all
NOTES = {
    "knowledge/gardening.md": "# Gardening\n\nTomatoes need sun and regular water.\n",
    "knowledge/cooking.md": "# Cooking\n\nA risotto wants patience and warm stock.\n",
    "people/ada-lovelace.md": "---\ntitle: Ada Lovelace\n---\n\n## Summary\n\nMathematician.\n",
    "projects/orbit/state.md": "---\ntitle: Orbit\n---\n\n## Summary\n\nA launch planner.\n",
}
QUERIES = ["tomatoes sun", "risotto stock", "Ada mathematician", "launch planner", "marker appended"]


def worker(svc: DoryService, n: int, appended: list[str], facts: list[str], errors: list[BaseException]) -> None:
    rng = random.Random(n)
    log = f"logs/thread-{n}.md"
    for i in range(OPS_PER_THREAD):
        roll = rng.random()
        try:
            if roll < 0.40:
                mode = "hybrid" if rng.random() < 0.5 else "bm25"
                svc.search(SearchRequest(query=rng.choice(QUERIES), mode=mode, record=rng.random() < 0.5))
            elif roll < 0.60:
                svc.get(GetRequest(path=rng.choice(list(NOTES))))
            elif roll < 0.85:
                marker = f"mark{n}x{i}q"
                svc.write(WriteRequest(path=log, kind="append", content=f"- {marker} appended\n"))
                appended.append(marker)
            else:
                fact = f"Ada fact {n} {i} zq{n}w{i}"
                subject = "Ada Lovelace" if rng.random() < 0.5 else "Orbit"
                svc.memory_write(MemoryWriteRequest(subject=subject, content=fact, allow_canonical=True))
                facts.append(fact)
        except BaseException as exc:  # every failure is a test failure; keep going to see them all
            errors.append(exc)


def run_once(make: Callable[[], DoryService]) -> None:
    svc = make()
    appended: list[list[str]] = [[] for _ in range(THREADS)]
    facts: list[list[str]] = [[] for _ in range(THREADS)]
    errors: list[BaseException] = []
    threads = [
        threading.Thread(target=worker, args=(svc, n, appended[n], facts[n], errors), name=f"t{n}")
        for n in range(THREADS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [], [repr(e) for e in errors[:5]]

    root = Path(svc.settings.corpus)
    for n, markers in enumerate(appended):
        if not markers:
            continue
        text = (root / f"logs/thread-{n}.md").read_text(encoding="utf-8")
        on_disk = Counter(word for word in text.split() if word.startswith(f"mark{n}x"))
        assert on_disk == Counter(markers), f"thread {n}: appends lost or doubled on disk"
    conn = svc.store.conn
    indexed = "\n".join(row[0] for row in conn.execute("SELECT text FROM chunks"))
    for markers in appended:
        for marker in markers:
            assert indexed.count(marker) == 1, f"{marker} is indexed {indexed.count(marker)} times"
    statements = Counter(claim["statement"] for claim in claims.dump(conn))
    for written in facts:
        for fact in written:
            assert statements[fact] == 1, f"{fact!r} is in the claim store {statements[fact]} times"
    svc.close()


@pytest.mark.model
def test_eight_threads_share_one_service_and_every_write_lands_once(make_corpus: Callable[..., Path]) -> None:
    root = make_corpus(dict(NOTES))

    def make() -> DoryService:
        svc = DoryService(load_settings(root, env={}))
        svc.reindex(ReindexRequest())
        return svc

    run_once(make)
