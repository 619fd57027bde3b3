"""The chunks of tricky notes, pinned: ids, line ranges, token counts, heading paths and text hashes.

The expected values in chunk_pins.json were produced by the indexer before its speed work (batched
token counting, streaming the plan); any change to them is a change to what is indexed, which would
need CHUNKER_VERSION bumped. Both counters are pinned: the MiniLM wordpiece tokenizer through the
real service, and the approximation through the chunker directly.

Regenerate (only with a deliberate chunker change): `python -m tests.index.test_chunk_pins`.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from dory.config import load_settings
from dory.corpus.chunking import chunk_lines
from dory.corpus.document import parse_document
from dory.index.embedders.tokens import MINILM_COUNTER_ID, approx_token_count
from dory.models import ReindexRequest
from dory.service import DoryService
from tests.index.chunk_pin_notes import NOTES

PINS = Path(__file__).with_name("chunk_pins.json")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def indexed_chunks(svc: DoryService) -> list[list[Any]]:
    rows = svc.store.conn.execute(
        "SELECT c.id, f.path, c.ordinal, c.start_line, c.end_line, c.heading_path, c.tokens, c.text, "
        "c.content_hash FROM chunks c JOIN files f ON f.id = c.file_id ORDER BY c.id"
    ).fetchall()
    return [[r[0], r[1], r[2], r[3], r[4], json.loads(r[5]), r[6], _sha(r[7]), r[8]] for r in rows]


def approx_chunks() -> list[list[Any]]:
    out: list[list[Any]] = []
    for path in sorted(NOTES):
        data = NOTES[path]
        doc = parse_document(path, data if isinstance(data, bytes) else data.encode("utf-8"))
        count_many = lambda texts: [approx_token_count(t) for t in texts]  # noqa: E731
        for c in chunk_lines(doc.lines, doc.body_start, count_many, 220, 32):
            out.append([path, c.ordinal, c.start_line, c.end_line, list(c.heading_path), c.tokens, _sha(c.text)])
    return out


def _index(root: Path) -> tuple[str, list[list[Any]]]:
    for rel, content in NOTES.items():
        (root / rel).write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    svc = DoryService(load_settings(root, {"embedder.backend": "none"}, env={}))
    try:
        res = svc.reindex(ReindexRequest())
        assert res.new == len(NOTES) and not res.skipped
        return svc.resources.token_counter().identity, indexed_chunks(svc)
    finally:
        svc.close()


def test_wordpiece_chunks_are_pinned(tmp_path: Path) -> None:
    identity, chunks = _index(tmp_path)
    assert identity == MINILM_COUNTER_ID  # the model package is a dependency: its tokenizer cuts the chunks
    expected = json.loads(PINS.read_text())["wordpiece"]
    assert len(chunks) == len(expected)
    for got, want in zip(chunks, expected, strict=True):
        assert got == want


def test_approximation_chunks_are_pinned() -> None:
    expected = json.loads(PINS.read_text())["approx"]
    assert approx_chunks() == expected


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        _, wordpiece = _index(Path(folder))
    pins = {"wordpiece": wordpiece, "approx": approx_chunks()}
    body = ",\n".join(
        f'"{key}": [\n' + ",\n".join(json.dumps(row, ensure_ascii=False) for row in rows) + "\n]"
        for key, rows in pins.items()
    )
    PINS.write_text("{\n" + body + "\n}\n")
    sys.stdout.write(f"wrote {PINS}: {len(wordpiece)} wordpiece chunks\n")
