"""`dory research` through the real console script: --json and plain output, --save, exit codes, the LLM."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.fake_llm import FakeLlm, ok
from support.waiting import DEADLINE_S

from tests.conftest import write_files

FILES = {
    "notes/postgres.md": "# Postgres upgrade\n\nWe moved the billing database to Postgres 16 in March.\n"
    "The upgrade took two hours of downtime.\n",
    "notes/garden.md": "# Garden\n\nTomatoes need full sun and deep watering.\n",
}
QUESTION = "When was the billing database moved to Postgres?"
CITED = "[notes/postgres.md:3-3]"


@pytest.fixture
def root(tmp_path: Path, dory: Any) -> Path:
    corpus = write_files(tmp_path / "corpus", dict(FILES))
    assert dory("--corpus", str(corpus), "reindex").code == 0
    return corpus


def test_research_answers_with_citations_and_saves_with_a_suffix(dory: Any, root: Path, tree_digest: Any) -> None:
    base = ("--corpus", str(root), "research")
    before = tree_digest(root)
    as_json = dory(*base, QUESTION, "-m", "bm25", "--json")
    assert as_json.code == 0, as_json
    res = as_json.json()
    assert res["method"] == "extractive" and res["sources"] == ["notes/postgres.md"]
    assert res["answer"] == f"We moved the billing database to Postgres 16 in March. {CITED}"
    assert res["saved"] is None and res["dropped_citations"] == []
    plain = dory(*base, QUESTION, "-m", "bm25")
    assert plain.code == 0 and plain.stdout == res["markdown"]
    assert tree_digest(root) == before  # without --save research only reads

    saved = [dory(*base, QUESTION, "-m", "bm25", "--save", "--json") for _ in range(2)]
    assert [s.code for s in saved] == [0, 0], saved
    first, second = (s.json()["saved"] for s in saved)
    assert second == first.removesuffix(".md") + "-2.md"
    assert (root / first).read_text(encoding="utf-8") == (root / second).read_text(encoding="utf-8")
    shown = dory(*base, "garden tomatoes", "-m", "bm25", "--save")
    assert shown.code == 0 and shown.stdout.rstrip().endswith("-garden-tomatoes.md")


def test_bad_input_is_a_usage_error_and_no_evidence_cannot_be_saved(dory: Any, root: Path, tree_digest: Any) -> None:
    base = ("--corpus", str(root), "research")
    before = tree_digest(root)
    blank = dory(*base, "   ", "--json")
    assert blank.code == 2 and blank.error()["code"] == "usage_error"
    assert "question is blank" in blank.error()["message"]
    too_many = dory(*base, QUESTION, "-k", "50", "--json")
    assert too_many.code == 2 and too_many.error()["details"]["errors"][0]["field"] == "k"
    mode = dory(*base, QUESTION, "-m", "exact", "--json")
    assert mode.code == 2 and mode.error()["code"] == "usage_error"
    nothing = dory(*base, "quantum chromodynamics", "-m", "bm25", "--json")
    assert nothing.code == 0 and nothing.json()["method"] == "none" and nothing.json()["evidence"] == []
    refused = dory(*base, "quantum chromodynamics", "-m", "bm25", "--save", "--json")
    assert refused.code == 3 and refused.error()["code"] == "not_found"
    assert tree_digest(root) == before


def test_with_an_llm_a_citation_outside_the_evidence_is_dropped_and_reported(dory: Any, root: Path) -> None:
    with FakeLlm() as llm:
        llm.script(ok({"answer": f"In March {CITED}, on new hardware [notes/invented.md:1-2]."}))
        env = {
            "DORY_LLM_BACKEND": "openai",
            "DORY_LLM_URL": llm.url,
            "DORY_LLM_MODEL": "fake-model",
            "DORY_LLM_TIMEOUT_S": f"{DEADLINE_S:g}",
            "DORY_LLM_RETRIES": "0",
        }
        done = dory("--corpus", str(root), "research", QUESTION, "-m", "bm25", "--json", env=env)
        without = dory("--corpus", str(root), "research", QUESTION, "-m", "bm25", "--no-llm", "--json", env=env)
    assert done.code == 0, done
    res = done.json()
    assert res["method"] == "llm" and res["answer"] == f"In March {CITED}, on new hardware."
    assert [(d["text"], d["reason"]) for d in res["dropped_citations"]] == [
        ("[notes/invented.md:1-2]", "notes/invented.md is not among the evidence")
    ]
    assert without.code == 0 and without.json()["method"] == "extractive"
    assert len(llm.chat_requests) == 1
