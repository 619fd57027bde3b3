"""A real `dory serve` on 127.0.0.1: every status of SPEC §9 from a real cause, with its error code,
and no file damaged by a refused request; tokens, scopes and agents; readiness, metrics and events.

One server (with its daemon) serves the module; the rate limit is tested on a server of its own.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from support.daemon import daemon_env
from support.server import ServerProcess, cli, error_code

ADA = "---\ntitle: Ada Lovelace\n---\n\n## Summary\n\nMathematician.\n"
NOTES = {
    "notes/alpha.md": "# Alpha\n\nthe quokka lives on an island\n",
    "notes/keep.md": "# Keep\n\nuntouched text\n",
    "people/ada-lovelace.md": ADA,
}
SCOPES = {"admin": ["admin"], "reader": ["read"], "writer": ["write"], "bot-7": ["sessions"]}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, dory_cmd: list[str]) -> Iterator[tuple[ServerProcess, dict]]:
    root = tmp_path_factory.mktemp("http") / "corpus"
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    env = daemon_env(DORY_HTTP_MIN_GENERATION_WAIT_S="0.2")
    tokens = {}
    for name, scopes in SCOPES.items():
        made = cli(dory_cmd, root, "auth", "new", name, *[f"--scope={s}" for s in scopes], "--json", env=env)
        assert made.returncode == 0, made.stderr
        tokens[name] = json.loads(made.stdout)["token"]
    server = ServerProcess(dory_cmd, root, env).start()
    yield server, tokens
    assert server.stop() == 0


@pytest.fixture
def as_(served: tuple[ServerProcess, dict]) -> Callable[[str | None], httpx.Client]:
    server, tokens = served
    return lambda name: server.client(tokens[name] if name else None)


def root_of(served: tuple[ServerProcess, dict]) -> Path:
    return served[0].root


# -- 2xx and 3xx ---------------------------------------------------------------------------------


def test_a_reader_searches_and_gets_a_note_with_its_hash_as_etag(as_: Callable[..., httpx.Client]) -> None:
    with as_("reader") as http:
        found = http.post("/v1/search", json={"query": "quokka", "mode": "bm25"})
        assert found.status_code == 200 and [h["path"] for h in found.json()["hits"]] == ["notes/alpha.md"]
        assert int(found.headers["Dory-Generation"]) >= 1 and found.headers["X-Request-Id"]
        note = http.get("/v1/notes/notes/alpha.md")
        assert note.status_code == 200 and note.headers["ETag"] == f'"{note.json()["hash"]}"'
        same = http.get("/v1/notes/notes/alpha.md", headers={"If-None-Match": note.headers["ETag"]})
        assert same.status_code == 304 and same.content == b""


def test_a_write_answers_with_its_generation_and_a_search_at_it_finds_the_write(
    as_: Callable[..., httpx.Client],
) -> None:
    with as_("writer") as http:
        wrote = http.post("/v1/write", json={"path": "notes/new.md", "kind": "create", "content": "# N\n\nwombat\n"})
        assert wrote.status_code == 200, wrote.text
        generation = wrote.json()["generation"]
        assert int(wrote.headers["Dory-Generation"]) == generation
        hits = http.post(f"/v1/search?min_generation={generation}", json={"query": "wombat", "mode": "bm25"})
        assert [h["path"] for h in hits.json()["hits"]] == ["notes/new.md"]


def test_research_reads_for_a_reader_and_saves_only_for_a_writer(
    served: tuple[ServerProcess, dict], as_: Callable[..., httpx.Client]
) -> None:
    question = {"question": "where does the quokka live?", "mode": "bm25"}
    with as_("reader") as http:
        read = http.post("/v1/research", json=question)
        assert read.status_code == 200, read.text
        assert read.json()["answer"] == "the quokka lives on an island [notes/alpha.md:3-3]"
        refused = http.post("/v1/research/save", json=question)
        assert refused.status_code == 403 and error_code(refused) == "forbidden"
        wrong_route = http.post("/v1/research", json={**question, "save": True})
        assert wrong_route.status_code == 400 and error_code(wrong_route) == "usage_error"
        assert not (root_of(served) / "references/research").exists()
    with as_("writer") as http:
        saved = http.post("/v1/research/save", json=question)
        assert saved.status_code == 200, saved.text
        assert (root_of(served) / saved.json()["saved"]).read_text().count("## ") == 4
        nothing = http.post("/v1/research/save", json={"question": "zebra xylophone", "mode": "bm25"})
        assert nothing.status_code == 404 and error_code(nothing) == "not_found"


# -- every refusal, with its code, and nothing damaged ----------------------------------------------


def test_a_body_that_is_not_json_or_not_valid_is_400_usage_error(as_: Callable[..., httpx.Client]) -> None:
    with as_("reader") as http:
        broken = http.post("/v1/search", content=b"{not json", headers={"Content-Type": "application/json"})
        assert broken.status_code == 400 and error_code(broken) == "usage_error"
        invalid = http.post("/v1/search", json={"query": "x", "k": "many"})
        assert invalid.status_code == 400 and error_code(invalid) == "usage_error"
        assert invalid.json()["error"]["request_id"] == invalid.headers["X-Request-Id"]


def test_no_token_or_a_bad_one_is_401_and_a_missing_scope_403(
    served: tuple[ServerProcess, dict], as_: Callable[..., httpx.Client]
) -> None:
    with as_(None) as http:
        missing = http.post("/v1/search", json={"query": "quokka"})
        assert missing.status_code == 401 and error_code(missing) == "unauthorized"
        assert missing.headers["WWW-Authenticate"].startswith("Bearer")
        forged = http.post(
            "/v1/search", json={"query": "q"}, headers={"Authorization": "Bearer dory_00000000_" + "x" * 43}
        )
        assert forged.status_code == 401 and error_code(forged) == "unauthorized"
        # Who calls is checked before what was sent, even a body that cannot be parsed.
        for broken in (b"{not json", b"\x80"):
            unparsed = http.post("/v1/search", content=broken, headers={"Content-Type": "application/json"})
            assert unparsed.status_code == 401 and error_code(unparsed) == "unauthorized"
    with as_("reader") as http:
        refused = http.post("/v1/write", json={"path": "notes/keep.md", "kind": "append", "content": "no"})
        assert refused.status_code == 403 and error_code(refused) == "forbidden"
        unparsed = http.post("/v1/write", content=b"{not json", headers={"Content-Type": "application/json"})
        assert unparsed.status_code == 403 and error_code(unparsed) == "forbidden"
        assert http.post("/v1/jobs/run", json={"job": "maintain"}).status_code == 403
    with as_("writer") as http:
        assert error_code(http.get("/v1/auth/tokens")) == "forbidden"
    assert (root_of(served) / "notes/keep.md").read_text() == NOTES["notes/keep.md"]


def test_a_missing_note_or_route_is_404_a_bad_path_400_and_a_wrong_method_405_with_allow(
    as_: Callable[..., httpx.Client],
) -> None:
    with as_("reader") as http:
        gone = http.get("/v1/notes/notes/nowhere.md")
        assert gone.status_code == 404 and error_code(gone) == "not_found"
        assert error_code(http.get("/v1/no-such-route")) == "not_found"
        # A path the note request refuses (found by schemathesis: "%0A" left an empty path, a 500).
        unreadable = http.get("/v1/notes/%0A")
        assert unreadable.status_code == 400 and error_code(unreadable) == "usage_error", unreadable.text
        wrong = http.request("TRACE", "/healthz")
        assert wrong.status_code == 405 and error_code(wrong) == "method_not_allowed"
        assert wrong.headers["Allow"] == "GET"


def test_replace_needs_if_match_428_and_a_stale_one_is_409_hash_conflict(
    served: tuple[ServerProcess, dict], as_: Callable[..., httpx.Client]
) -> None:
    body = {"path": "notes/keep.md", "kind": "replace", "content": "# Keep\n\nreplaced\n"}
    with as_("writer") as http:
        blind = http.post("/v1/write", json=body)
        assert blind.status_code == 428 and error_code(blind) == "expected_hash_required"
        stale = http.post("/v1/write", json=body, headers={"If-Match": '"sha256:' + "0" * 64 + '"'})
        assert stale.status_code == 409 and error_code(stale) == "hash_conflict"
        current = http.get("/v1/notes/notes/keep.md").json()["hash"]
        assert stale.json()["error"]["details"]["current_hash"] == current
    assert (root_of(served) / "notes/keep.md").read_text() == NOTES["notes/keep.md"]


def test_an_idempotency_key_answers_its_own_request_once_and_refuses_another_with_422(
    served: tuple[ServerProcess, dict], as_: Callable[..., httpx.Client]
) -> None:
    key = {"Idempotency-Key": "retry-key-0001"}
    first = {"path": "notes/alpha.md", "kind": "append", "content": "appended once"}
    with as_("writer") as http:
        wrote = http.post("/v1/write", json=first, headers=key).json()
        again = http.post("/v1/write", json=first, headers=key).json()
        # The retry is answered from the first write's receipt, with a generation that holds it.
        assert again["hash"] == wrote["hash"] and again["generation"] >= wrote["generation"] >= 1
        other = {"path": "notes/other.md", "kind": "create", "content": "# Other\n"}
        reused = http.post("/v1/write", json=other, headers=key)
        assert reused.status_code == 422 and error_code(reused) == "idempotency_key_reused", reused.text
        memory = http.post("/v1/memory-write", json={"subject": "Ada Lovelace", "content": "x"}, headers=key)
        assert memory.status_code == 422 and error_code(memory) == "idempotency_key_reused", memory.text
    assert not (root_of(served) / "notes/other.md").exists()
    assert (root_of(served) / "notes/alpha.md").read_text().count("appended once") == 1


def test_a_proposal_whose_target_moved_is_409_stale_proposal(
    served: tuple[ServerProcess, dict], as_: Callable[..., httpx.Client]
) -> None:
    with as_("writer") as http:
        write = {"subject": "Ada Lovelace", "content": "Ada liked tea.", "kind": "preference"}
        made = http.post("/v1/proposals", json={"write": write, "id": "stale-tea"})
        assert made.status_code == 200, made.text
        pid = made.json()["proposal"]["id"]
        page = root_of(served) / "people/ada-lovelace.md"
        page.write_text(ADA + "\nEdited by a person.\n", encoding="utf-8")
        applied = http.post(f"/v1/proposals/{pid}/apply")
        assert applied.status_code == 409 and error_code(applied) == "stale_proposal", applied.text
        too_long = http.post(f"/v1/proposals/{'x' * 300}/apply")
        assert too_long.status_code == 400 and error_code(too_long) == "usage_error", too_long.text
    assert page.read_text(encoding="utf-8").endswith("Edited by a person.\n")


def test_a_body_over_the_cap_is_413(as_: Callable[..., httpx.Client]) -> None:
    with as_("writer") as http:
        huge = http.post("/v1/write", content=b'{"path": "' + b"x" * (5 * 1024 * 1024) + b'"}')
        assert huge.status_code == 413 and error_code(huge) == "request_too_large"


def test_unsafe_content_is_422_with_its_code_and_writes_nothing(
    served: tuple[ServerProcess, dict], as_: Callable[..., httpx.Client]
) -> None:
    with as_("writer") as http:
        bidi = http.post("/v1/write", json={"path": "notes/bidi.md", "kind": "create", "content": "abc \u202e def"})
        assert bidi.status_code == 422 and error_code(bidi) == "bidi_control"
    assert not (root_of(served) / "notes/bidi.md").exists()


def test_past_the_rate_limit_is_429_with_retry_after_for_that_token_only(tmp_path: Path, dory_cmd: list[str]) -> None:
    """One request a minute: the second request of a token is refused unless a whole minute passed
    between the two (a hang, not a slow machine), and another token is not affected."""
    root = tmp_path / "corpus"
    (root / "notes").mkdir(parents=True)
    env = daemon_env(DORY_HTTP_RATE_PER_MINUTE="1")
    secrets = [json.loads(cli(dory_cmd, root, "auth", "new", name, "--json", env=env).stdout)["token"] for name in "ab"]
    server = ServerProcess(dory_cmd, root, env).start()
    try:
        with server.client(secrets[0]) as first, server.client(secrets[1]) as second:
            assert first.get("/v1/jobs").status_code == 200
            limited = first.get("/v1/jobs")
            assert limited.status_code == 429 and error_code(limited) == "rate_limited"
            assert int(limited.headers["Retry-After"]) >= 1
            assert second.get("/v1/jobs").status_code == 200
    finally:
        assert server.stop() == 0


def test_a_generation_the_index_never_reaches_is_503_index_behind(as_: Callable[..., httpx.Client]) -> None:
    with as_("reader") as http:
        ahead = http.post("/v1/search", json={"query": "quokka"}, headers={"Dory-Min-Generation": str(10**9)})
        assert ahead.status_code == 503 and error_code(ahead) == "index_behind"
        assert ahead.json()["error"]["details"]["generation"] < 10**9


# -- agents, tokens, health --------------------------------------------------------------------------


def test_a_tokens_name_is_the_agent_of_the_sessions_it_ingests(as_: Callable[..., httpx.Client]) -> None:
    transcript = '{"type": "user", "content": "hello there", "timestamp": "2026-11-20T10:00:00Z"}\n'
    with as_("bot-7") as http:
        ingested = http.post("/v1/sessions/ingest", json={"content": transcript, "format": "jsonl", "agent": "liar"})
        assert ingested.status_code == 200, ingested.text
        generation = ingested.headers["Dory-Generation"]
        listed = http.get("/v1/sessions", params={"agent": "bot-7", "min_generation": generation})
        assert listed.status_code == 200, listed.text
    assert [s["agent"] for s in listed.json()["sessions"]] == ["bot-7"]


def test_a_revoked_token_is_refused_from_the_next_request(
    served: tuple[ServerProcess, dict], dory_cmd: list[str], as_: Callable[..., httpx.Client]
) -> None:
    with as_("admin") as admin:
        made = admin.post("/v1/auth/tokens", json={"name": "short-lived", "scopes": ["read"]})
        assert made.status_code == 200
        secret = made.json()["token"]
        with httpx.Client(base_url=served[0].url, headers={"Authorization": f"Bearer {secret}"}) as http:
            assert http.get("/v1/jobs").status_code == 200
            revoked = cli(dory_cmd, root_of(served), "auth", "revoke", "short-lived", env=served[0].env)
            assert revoked.returncode == 0, revoked.stderr
            assert error_code(http.get("/v1/jobs")) == "unauthorized"
        listed = admin.get("/v1/auth/tokens").json()["tokens"]
    assert all("hash" not in t and "token" not in t for t in listed)
    assert {t["name"]: t["active"] for t in listed}["short-lived"] is False


def test_liveness_readiness_and_metrics(served: tuple[ServerProcess, dict], as_: Callable[..., httpx.Client]) -> None:
    with as_(None) as http:
        assert http.get("/healthz").json() == {"status": "ok"}
        ready = http.get("/readyz").json()
        assert ready["ready"] and all(ready["checks"].values()) and ready["generation"] >= 1
        assert error_code(http.get("/metrics")) == "unauthorized"
    with as_("reader") as http:
        http.post("/v1/search", json={"query": "quokka", "mode": "bm25"})
        text = http.get("/metrics").text
    assert 'dory_http_requests_total{method="POST",route="/v1/search",status="200"}' in text
    assert "dory_index_generation" in text and "dory_index_files" in text


def test_the_stream_replays_missed_events_after_last_event_id(as_: Callable[..., httpx.Client]) -> None:
    with as_("writer") as http:
        for n in range(3):
            body = {"path": f"notes/stream-{n}.md", "kind": "create", "content": f"# S{n}\n"}
            assert http.post("/v1/write", json=body).status_code == 200
        seen: list[str] = []
        with http.stream("GET", "/v1/stream", headers={"Last-Event-ID": "0"}) as events:
            for line in events.iter_lines():
                if line.startswith("data: ") and '"notes/stream-' in line:
                    seen.append(json.loads(line[6:])["path"])
                if len(seen) == 3:
                    break
    assert seen == [f"notes/stream-{n}.md" for n in range(3)]


def test_serve_refuses_a_public_address_without_tokens(tmp_path: Path, dory_cmd: list[str]) -> None:
    root = tmp_path / "corpus"
    (root / "notes").mkdir(parents=True)
    refused = cli(dory_cmd, root, "serve", "--host", "0.0.0.0", "--port", "0")
    assert refused.returncode == 2 and "refusing to serve on 0.0.0.0" in refused.stderr
    assert not (root / ".dory" / "daemon.json").exists()
