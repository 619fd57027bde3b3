"""`dory migrate --llm`: claims read from imported notes by the model (the fake OpenAI-compatible server),
strict JSON or a problem for that note, the estimate equal to what the run sends, typed exports never
sent, no LLM configured refused before anything is written, and a resumed run that never asks twice."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.fake_llm import FakeLlm, Reply, Request, malformed, ok
from support.migration import Migrate, tree_hashes
from support.waiting import DEADLINE_S

from dory.config import load_settings
from dory.errors import LlmNotConfigured
from dory.memory import claims
from dory.migrate.llm_claims import REQUEST_CHARS, SYSTEM
from dory.migrate.run import CHARS_PER_TOKEN
from dory.models import LinkLintRequest, MigrateRequest, MigrateResponse
from dory.service import DoryService

ANSWERS: dict[str, list[dict[str, str]]] = {
    "Ada.md": [
        {"subject": "Ada Lovelace", "family": "person", "kind": "preference", "statement": "Prefers written updates"},
        {"subject": "Analytical Engine", "family": "project", "kind": "fact", "statement": "Ada writes its programs"},
    ],
    "Engine.md": [{"subject": "analytical engine", "family": "project", "kind": "state", "statement": "Never built"}],
}


def _source(tmp_path: Path) -> Path:
    src = tmp_path / "notes"
    src.mkdir()
    (src / "Ada.md").write_text("# Ada Lovelace\n\nAda prefers written updates and writes the engine's programs.\n")
    (src / "Engine.md").write_text("# Analytical Engine\n\nIt was never built.\n")
    (src / "data.json").write_text('{"weather": "rain"}')
    (src / "empty.md").write_text("")
    return src


def _note_of(request: Request) -> str:
    return str(request.messages[1]["content"]).split("\n", 1)[0].removeprefix("Note: ").split(" (part ")[0]


def _answer(request: Request) -> Reply:
    return ok({"claims": ANSWERS.get(_note_of(request), [])})


@pytest.fixture
def llm() -> Iterator[FakeLlm]:
    with FakeLlm(default=_answer) as server:
        yield server


def _settings(corpus: Path, server: FakeLlm | None) -> dict[str, Any]:
    settings: dict[str, Any] = {"embedder.backend": "none"}
    if server is not None:
        settings |= {
            "llm.backend": "openai",
            "llm.url": server.url,
            "llm.model": "fake-model",
            "llm.timeout_s": DEADLINE_S,
            "llm.retries": 0,
        }
    return settings


@pytest.fixture
def with_llm(corpus: Path, llm: FakeLlm) -> Iterator[DoryService]:
    svc = DoryService(load_settings(corpus, _settings(corpus, llm), env={}))
    try:
        yield svc
    finally:
        svc.close()


def _run(svc: DoryService, source: Path, **fields: Any) -> MigrateResponse:
    return svc.migrations.migrate(MigrateRequest(source=str(source), **fields))


def _tokens(requests: list[Request]) -> int:
    return sum(-(-sum(len(m["content"]) for m in r.messages) // CHARS_PER_TOKEN) for r in requests)


def test_claims_from_notes_reach_the_claim_store_with_the_note_as_evidence(
    tmp_path: Path, corpus: Path, llm: FakeLlm, with_llm: DoryService
) -> None:
    src = _source(tmp_path)
    planned = _run(with_llm, src, dry_run=True, estimate=True)
    assert llm.chat_requests == []  # a dry run never asks
    res = _run(with_llm, src, llm=True)
    assert res.problems == []
    assert sorted(_note_of(r) for r in llm.chat_requests) == ["Ada.md", "Engine.md", "data.json"]
    assert planned.estimate is not None and res.estimate == planned.estimate
    assert planned.estimate.llm_calls == 3 and planned.estimate.input_tokens == _tokens(llm.chat_requests)
    assert llm.chat_requests[0].messages[0]["content"] == SYSTEM

    by_name = {e.name: e for e in res.entities}
    assert by_name["Analytical Engine"].path == "projects/analytical-engine/state.md"
    assert by_name["Analytical Engine"].claims == 2 and by_name["Analytical Engine"].merged == ["analytical engine"]
    conn = with_llm.store.conn
    [ada] = claims.claims_for(conn, "person:ada-lovelace")
    assert (ada.kind, ada.statement) == ("preference", "Prefers written updates")
    artifact = (corpus / ada.evidence).read_text("utf-8")
    assert "source: Ada.md" in artifact and "Evidence: [[knowledge/notes/Ada|Ada]]" in artifact
    assert {c.kind for c in claims.claims_for(conn, "project:analytical-engine")} == {"fact", "state"}
    assert with_llm.link_lint(LinkLintRequest()).broken_total == 0

    before = tree_hashes(corpus)
    again = _run(with_llm, src, llm=True)
    assert again.created == 0 and len(llm.chat_requests) == 3 and tree_hashes(corpus) == before


def test_bad_output_is_a_problem_for_that_note_and_the_rest_goes_on(
    tmp_path: Path, corpus: Path, llm: FakeLlm, with_llm: DoryService
) -> None:
    def answer(request: Request) -> Reply:
        note = _note_of(request)
        if note == "Engine.md":
            return malformed()
        if note == "data.json":  # schema broken: a family that is not one
            return ok({"claims": [{"subject": "Rain", "family": "weather", "kind": "fact", "statement": "Wet"}]})
        extra = {"subject": "?!", "family": "concept", "kind": "fact", "statement": "no subject"}
        return ok({"claims": [*ANSWERS["Ada.md"], extra]})

    llm.default = answer
    res = _run(with_llm, _source(tmp_path), llm=True)
    assert sorted((p.source, p.code) for p in res.problems) == [
        ("Ada.md", "llm_bad_output"),  # one claim without a subject left out
        ("Engine.md", "llm_bad_output"),
        ("data.json", "llm_bad_output"),
    ]
    assert (corpus / "knowledge/notes/Engine.md").is_file()  # the note itself is imported
    assert [c.statement for c in claims.claims_for(with_llm.store.conn, "project:analytical-engine")] == [
        "Ada writes its programs"
    ]


def test_without_an_llm_configured_llm_is_refused_before_anything_is_written(
    tmp_path: Path, corpus: Path, migrate: Migrate
) -> None:
    before = tree_hashes(corpus)
    with pytest.raises(LlmNotConfigured) as caught:
        migrate(_source(tmp_path), llm=True)
    assert caught.value.code == "llm_not_configured" and "[llm]" in caught.value.message
    assert tree_hashes(corpus) == before


def test_the_estimate_needs_no_llm_and_counts_each_part_of_a_long_note(
    tmp_path: Path, corpus: Path, migrate: Migrate, llm: FakeLlm
) -> None:
    src = _source(tmp_path)
    paragraph = "The engine computes Bernoulli numbers. " * 100
    (src / "long.md").write_text("\n\n".join([paragraph] * (REQUEST_CHARS // len(paragraph) + 2)))
    planned = migrate(src, dry_run=True, estimate=True)  # the `migrate` fixture has no [llm]
    assert planned.estimate is not None and planned.estimate.llm_calls == 5  # long.md is 2 requests
    svc = DoryService(load_settings(corpus, _settings(corpus, llm), env={}))
    try:
        res = _run(svc, src, llm=True)
    finally:
        svc.close()
    assert sorted(_note_of(r) for r in llm.chat_requests) == ["Ada.md", "Engine.md", "data.json", "long.md", "long.md"]
    assert res.estimate == planned.estimate and planned.estimate.input_tokens == _tokens(llm.chat_requests)
    assert planned.estimate.output_tokens > 0


def test_typed_exports_are_never_sent(tmp_path: Path, llm: FakeLlm, with_llm: DoryService) -> None:
    src = tmp_path / "graph"
    src.mkdir()
    record = {"type": "entity", "name": "Ada", "entityType": "person", "observations": ["Wrote a program"]}
    (src / "memory.jsonl").write_text(json.dumps(record) + "\n")
    res = _run(with_llm, src, llm=True)
    assert res.format == "mcp-memory" and res.estimate is not None and res.estimate.llm_calls == 0
    assert llm.chat_requests == [] and res.entities[0].claims == 1


def test_a_resumed_run_does_not_ask_again(tmp_path: Path, corpus: Path, llm: FakeLlm) -> None:
    src = _source(tmp_path)
    settings = load_settings(corpus, _settings(corpus, llm), env={})
    pid = os.fork()
    if pid == 0:  # the child is killed at its second finished item, after the plan pass asked everything
        try:
            os.environ["DORY_FAULT"] = "migrate.done#1"
            DoryService(settings).migrations.migrate(MigrateRequest(source=str(src), llm=True))
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == 9
    asked = len(llm.chat_requests)
    assert asked == 3

    svc = DoryService(settings)
    try:
        res = _run(svc, src, llm=True)
        assert res.resumed and len(llm.chat_requests) == asked  # the answers came from the cache
        assert {e.name: e.claims for e in res.entities} == {"Ada Lovelace": 1, "Analytical Engine": 2}
        stored = claims.dump(svc.store.conn)
        assert len(stored) == 3 and all((corpus / row["evidence"]).is_file() for row in stored)
    finally:
        svc.close()
    assert not [p for p in corpus.rglob("*") if " (2)" in p.name]  # nothing written twice
