"""The `[llm]` comment of the template's dory.toml promises features by name: each one it names asks
the configured model when one is configured.

The comment names each feature by the command that runs it (`dory ops run daily-digest`, …). Every
command named there must be in FEATURES below, with how to run it on a small corpus; each is run
with `[llm]` pointing at a fake OpenAI-compatible server (tests/support/fake_llm.py, answering
HTTP 500 so every feature falls back to its deterministic path), which must have been asked.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.fake_llm import FakeLlm
from support.waiting import DEADLINE_S

REPO = Path(__file__).resolve().parents[2]
TEMPLATE_TOML = REPO / "corpus-template" / "dory.toml"
FIXTURE = REPO / "tests" / "sessions" / "fixtures" / "5b6f9a1e-2c3d-4e5f-8a9b-0c1d2e3f4a5b.jsonl"
SPAN = re.compile(r"`(dory [^`]+)`")

# The command line as the comment writes it → the arguments that run it here (after `setup`).
FEATURES: dict[str, list[str]] = {
    "dory ops run daily-digest": ["ops", "run", "daily-digest", "--period", "2026-11-20"],
    "dory sessions compact ID": ["sessions", "compact", "5b6f"],
    "dory migrate SRC --llm": ["migrate", "{vault}", "--llm"],
    "dory research QUESTION": ["research", "Who waters the tomatoes?", "-m", "bm25"],  # after migrate: evidence
}


def llm_comment() -> str:
    """The comment lines of the template's [llm] section."""
    text = TEMPLATE_TOML.read_text(encoding="utf-8")
    section = text.split("\n[llm]\n", 1)[1].split("\n[", 1)[0]
    return " ".join(line.lstrip("# ") for line in section.splitlines() if line.startswith("#"))


def test_the_llm_comment_names_the_features_checked_here() -> None:
    assert set(SPAN.findall(llm_comment())) == set(FEATURES)


def setup(run: Callable[..., Any], root: Path, tmp_path: Path) -> dict[str, str]:
    """A corpus with one session (2026-11-20) and, beside it, a folder of notes to migrate."""
    assert run("init", str(root), "--bare", "--no-model").code == 0
    source = tmp_path / "FIXTURE.jsonl"
    shutil.copyfile(FIXTURE, source)
    assert run("--corpus", str(root), "sessions", "ingest", str(source)).code == 0
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Garden.md").write_text("# Garden\n\nMaria waters the tomatoes every morning.\n", encoding="utf-8")
    return {"vault": str(vault)}


def test_each_feature_the_llm_comment_names_asks_the_model(dory: Callable[..., Any], tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    values = setup(dory, root, tmp_path)
    with FakeLlm() as llm:
        env = {
            "DORY_LLM_BACKEND": "openai",
            "DORY_LLM_URL": llm.url,
            "DORY_LLM_MODEL": "fake-model",
            "DORY_LLM_TIMEOUT_S": f"{DEADLINE_S:g}",  # only bounds a hang
            "DORY_LLM_RETRIES": "0",
            "DORY_DIGEST_QUIET_MINUTES": "0",  # the session was imported a moment ago
        }
        for named, args in FEATURES.items():
            before = len(llm.chat_requests)
            done = dory("--corpus", str(root), *[a.format(**values) for a in args], env=env)
            assert done.code == 0, f"{named}: {done}"
            assert len(llm.chat_requests) > before, f"`{named}` did not ask the configured model:\n{done}"
