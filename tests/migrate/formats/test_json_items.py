"""json_items: a JSON export's elements one at a time, whatever chunk boundary cuts them, and a
BrokenJson that says how many came before a broken or truncated one."""

from __future__ import annotations

import json

import pytest

from dory.migrate.formats import json_items as module
from dory.migrate.formats.json_items import BrokenJson, json_items

VALUES = [{"title": "héron 🐦", "n": 12345}, [1, 2.5, None], "a long string " * 5, 678, True, {"nested": {"a": [{}]}}]


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64, 4 * 1024 * 1024])
def test_elements_come_out_whole_whatever_the_chunk_size(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setattr(module, "CHUNK_BYTES", chunk)
    for text in (json.dumps(VALUES), json.dumps(VALUES, indent=2), json.dumps(VALUES, ensure_ascii=False)):
        assert list(json_items(text.encode("utf-8"))) == VALUES
    assert list(json_items(b'\xef\xbb\xbf  {"one": 1}\n')) == [{"one": 1}]
    assert list(json_items(json.dumps(VALUES).encode("utf-16"))) == VALUES
    assert list(json_items(b"[ ]")) == []


@pytest.mark.parametrize(
    ("data", "count", "truncated"),
    [
        (b"", 0, True),
        (b"[", 0, True),
        (b'[{"a": 1}, {"b": "cut', 1, True),
        (b'[{"a": 1}, {"b": 1', 1, True),
        (b"[1, 2", 2, True),
        (b"[1, 2,", 2, True),
        (b'[{"a": 1} {"b": 2}]', 1, False),
        (b"[1, nope]", 1, False),
        (b'{"a": 1} trailing', 1, False),
        (b"[1]]", 1, False),
    ],
)
@pytest.mark.parametrize("chunk", [2, 4 * 1024 * 1024])
def test_broken_json_says_how_many_items_came_before(
    monkeypatch: pytest.MonkeyPatch, chunk: int, data: bytes, count: int, truncated: bool
) -> None:
    monkeypatch.setattr(module, "CHUNK_BYTES", chunk)
    got: list[object] = []
    with pytest.raises(BrokenJson) as caught:
        got.extend(json_items(data))
    assert (caught.value.count, caught.value.truncated) == (count, truncated)
    assert len(got) == count or data.startswith(b"{")
