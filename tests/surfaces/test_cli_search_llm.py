"""`dory search --expand/--rerank` through the real console script and the fake LLM server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.fake_llm import FakeLlm, ok

from tests.conftest import write_files

FILES = {
    "notes/automobile.md": "# Service log\n\nChange the oil of the automobile every 10000 km.\n",
    "notes/bicycle.md": "# Bicycle\n\nThe bicycle chain needs grease after rain.\n",
}


@pytest.fixture
def root(tmp_path: Path, dory: Any) -> Path:
    corpus = write_files(tmp_path / "corpus", dict(FILES))
    assert dory("--corpus", str(corpus), "reindex").code == 0
    return corpus


def llm_env(llm: FakeLlm, **extra: str) -> dict[str, str]:
    return {
        "DORY_LLM_BACKEND": "openai",
        "DORY_LLM_URL": llm.url,
        "DORY_LLM_MODEL": llm.model,
        "DORY_SEARCH_LLM_DEADLINE_MS": "60000",
        **extra,
    }


def test_expand_and_rerank_flags(dory: Any, root: Path, llm: FakeLlm) -> None:
    base = ("--corpus", str(root), "search", "car maintenance", "-m", "bm25", "--no-record")
    llm.script(ok({"variants": ["automobile"], "hypothetical": ""}))
    done = dory(*base, "--expand", "--rerank", "--debug", env=llm_env(llm))
    assert done.code == 0, done
    assert "llm: expansion added expanded (variants: automobile); no rerank" in done.stdout
    assert "notes/automobile.md" in done.stdout and "expanded #1" in done.stdout
    # search.expand on in the environment, --no-expand off for this query: no call at all
    off = dory(*base, "--no-expand", "--json", env=llm_env(llm, DORY_SEARCH_EXPAND="true"))
    assert off.code == 0 and off.json()["hits"] == []
    assert len(llm.chat_requests) == 1  # one hit: the rerank had nothing to reorder and asked nothing


def test_expand_without_an_llm_warns(dory: Any, root: Path) -> None:
    done = dory("--corpus", str(root), "search", "bicycle", "-m", "bm25", "--expand", "--json")
    assert done.code == 0, done
    res = done.json()
    assert [hit["path"] for hit in res["hits"]] == ["notes/bicycle.md"]
    assert res["warnings"] == [
        'query expansion skipped (not-configured): no LLM is configured ([llm] backend = "none"); '
        "results are from the plain query"
    ]
