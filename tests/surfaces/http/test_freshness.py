"""The freshness contract over real HTTP: a write answers with its generation, and a search that asks
for that generation finds the write, every time, while the daemon is busy batching an editor's saves."""

from __future__ import annotations

import threading
from pathlib import Path

from support.server import ServerProcess

ROUNDS = 200


def editor(root: Path, stop: threading.Event) -> None:
    """Keep the watcher and the writer busy: rewrite a few notes on disk as fast as possible."""
    n = 0
    while not stop.is_set():
        (root / "edits" / f"e{n % 7}.md").write_text(f"# Edit {n}\n\nsaved by an editor {n}\n", encoding="utf-8")
        n += 1


def test_a_search_at_the_writes_generation_finds_the_write_200_times_in_a_row(
    tmp_path: Path, dory_cmd: list[str]
) -> None:
    root = tmp_path / "corpus"
    (root / "edits").mkdir(parents=True)
    (root / "notes").mkdir()
    server = ServerProcess(dory_cmd, root).start()
    stop = threading.Event()
    busy = threading.Thread(target=editor, args=(root, stop), daemon=True)
    busy.start()
    missed = []
    try:
        with server.client() as http:
            for n in range(ROUNDS):
                word = f"fresh{n}zq"
                body = {"path": f"notes/f{n}.md", "kind": "create", "content": f"# F{n}\n\n{word}\n"}
                wrote = http.post("/v1/write", json=body)
                assert wrote.status_code == 200, wrote.text
                found = http.post(
                    "/v1/search",
                    json={"query": word, "mode": "bm25"},
                    headers={"Dory-Min-Generation": str(wrote.json()["generation"])},
                )
                assert found.status_code == 200, found.text
                if [hit["path"] for hit in found.json()["hits"]] != [f"notes/f{n}.md"]:
                    missed.append(n)
    finally:
        stop.set()
        busy.join()
        assert server.stop() == 0
    assert missed == []
