"""The OpenAI-compatible JSON client against a real local HTTP server (tests/support/fake_llm.py):
answers, tolerated wrappings, typed errors, retries, the response_format fallback, and [llm] settings."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from support.fake_llm import FakeLlm, closed_port_url, drop, empty, hang, malformed, ok, slow, status
from support.waiting import DEADLINE_S

from dory.config import load_settings
from dory.errors import BackendUnavailable, ConfigError, LlmBadOutput, LlmUnavailable, error_from_dict
from dory.llm import LlmClient, from_settings
from dory.llm.endpoint import endpoint_url

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "maxLength": 20},
        "kind": {"enum": ["note", "task"]},
        "count": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
    },
    "required": ["title", "kind"],
    "additionalProperties": False,
}
GOOD = {"title": "Tuesday", "kind": "note", "count": 2, "tags": ["a"]}


def make_client(url: str, **options: Any) -> LlmClient:
    options.setdefault("timeout_s", DEADLINE_S)  # answers that must arrive get all the time they need
    return LlmClient(url, "fake-model", **options)


def ask(client: LlmClient) -> dict[str, Any]:
    return client.complete_json("You summarise notes.", "Summarise: hello", SCHEMA, name="digest")


# -- answers ---------------------------------------------------------------------------------------


def test_a_normal_answer_is_parsed_and_the_request_is_a_json_mode_chat_completion(llm: FakeLlm) -> None:
    llm.script(ok(GOOD))
    client = make_client(llm.url, temperature=0.2, max_tokens=300)
    assert ask(client) == GOOD
    [request] = llm.requests
    assert request.path == "/v1/chat/completions"
    body = request.body
    assert body["model"] == "fake-model"
    assert body["response_format"] == {"type": "json_object"}
    assert (body["temperature"], body["max_tokens"], body["stream"]) == (0.2, 300, False)
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][0]["content"].startswith("You summarise notes.")
    assert json.dumps(SCHEMA) in body["messages"][0]["content"]  # the schema is spelled out for the model
    assert body["messages"][1]["content"] == "Summarise: hello"
    assert "authorization" not in request.headers
    assert client.counters.as_dict() == {"attempted": 1, "produced": 1, "empty": 0, "failed": 0, "retried": 0}


@pytest.mark.parametrize(
    "text",
    [
        f"```json\n{json.dumps(GOOD)}\n```",
        f"```\n{json.dumps(GOOD, indent=2)}\n```\n",
        f"Sure! Here is the summary you asked for:\n\n{json.dumps(GOOD)}\n\nLet me know if {{anything}} else.",
        f'<think>The user wants {{"title": "x"}}. Fine.</think>\n{json.dumps(GOOD)}',
        f"Here you go: ```json {json.dumps(GOOD)} ```",
    ],
    ids=["json-fence", "bare-fence", "leading-and-trailing-prose", "think-block", "inline-fence"],
)
def test_json_wrapped_in_fences_prose_or_thinking_is_found(llm: FakeLlm, text: str) -> None:
    llm.script(ok(text))
    assert ask(make_client(llm.url)) == GOOD


def test_malformed_answer_is_bad_output_and_not_retried(llm: FakeLlm) -> None:
    llm.script(malformed(), ok(GOOD))
    client = make_client(llm.url)
    with pytest.raises(LlmBadOutput) as info:
        ask(client)
    assert info.value.code == "llm_bad_output"
    assert info.value.details["reason"] == "not_json"
    assert "this is not json {" in info.value.message
    assert len(llm.requests) == 1
    assert client.counters.as_dict() == {"attempted": 1, "produced": 0, "empty": 0, "failed": 1, "retried": 0}


@pytest.mark.parametrize("max_tokens, limit", [(1024, 64_000), (16_000, 128_000)])
def test_an_answer_longer_than_max_tokens_allows_is_refused_unparsed(llm: FakeLlm, max_tokens: int, limit: int) -> None:
    hostile = '{"a":[' * (limit // 6 + 1)  # nesting the JSON extractor would spend a minute of CPU on
    llm.script(ok(hostile), ok(GOOD))
    client = make_client(llm.url, max_tokens=max_tokens)
    with pytest.raises(LlmBadOutput) as info:
        ask(client)
    assert info.value.details["reason"] == "too_long"
    assert f"answered {len(hostile)} characters; at most {limit} are read" in info.value.message
    assert ask(client) == GOOD  # the next call is not affected
    assert len(llm.requests) == 2


def test_empty_answer_is_bad_output_counted_as_empty(llm: FakeLlm) -> None:
    llm.script(empty(), ok({"title": "   "}), ok(GOOD))
    client = make_client(llm.url)
    with pytest.raises(LlmBadOutput) as info:
        ask(client)
    assert info.value.details["reason"] == "empty"
    with pytest.raises(LlmBadOutput):  # the second answer is valid JSON but breaks the schema
        ask(client)
    assert ask(client) == GOOD
    assert client.counters.as_dict() == {"attempted": 3, "produced": 1, "empty": 1, "failed": 2, "retried": 0}


def test_an_answer_cut_off_at_max_tokens_says_so(llm: FakeLlm) -> None:
    llm.script(ok('{"title": "Tues', finish_reason="length"))
    with pytest.raises(LlmBadOutput) as info:
        ask(make_client(llm.url, max_tokens=7))
    assert info.value.details["reason"] == "truncated"
    assert "max_tokens=7" in info.value.message


@pytest.mark.parametrize(
    ("answer", "field", "problem"),
    [
        ({"kind": "note"}, "$.title", "is required but missing"),
        ({**GOOD, "count": "2"}, "$.count", "expected integer, got string"),
        ({**GOOD, "count": True}, "$.count", "expected integer, got boolean"),
        ({**GOOD, "extra": 1}, "$.extra", "is not an allowed field"),
        ({**GOOD, "kind": "idea"}, "$.kind", "'idea' is not one of ['note', 'task']"),
        ({**GOOD, "title": "x" * 21}, "$.title", "is 21 characters long, at most 20 allowed"),
        ({**GOOD, "tags": ["a", "b", "c"]}, "$.tags", "has 3 items, at most 2 allowed"),
        ({**GOOD, "tags": ["a", 5]}, "$.tags[1]", "expected string, got integer"),
    ],
    ids=[
        "missing-required",
        "wrong-type",
        "bool-is-not-integer",
        "extra-field",
        "enum",
        "max-length",
        "max-items",
        "item-type",
    ],
)
def test_schema_violations_are_bad_output_naming_the_field(
    llm: FakeLlm, answer: dict[str, Any], field: str, problem: str
) -> None:
    llm.script(ok(answer))
    with pytest.raises(LlmBadOutput) as info:
        ask(make_client(llm.url))
    assert info.value.details["reason"] == "schema"
    assert info.value.details["field"] == field
    assert f"{field} {problem}" in info.value.message


def test_schema_numbers_integers_and_nullable_types(llm: FakeLlm) -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "score": {"type": "number"}, "note": {"type": ["string", "null"]}},
    }
    llm.script(
        ok({"n": 3.0, "score": 1, "note": None}), ok({"score": 0.5, "note": "x"}), ok({"n": 3.5}), ok({"score": False})
    )
    client = make_client(llm.url)
    assert client.complete_json("s", "u", schema, "t") == {"n": 3.0, "score": 1, "note": None}
    assert client.complete_json("s", "u", schema, "t") == {"score": 0.5, "note": "x"}
    with pytest.raises(LlmBadOutput, match=r"\$\.n expected integer, got number"):
        client.complete_json("s", "u", schema, "t")
    with pytest.raises(LlmBadOutput, match=r"\$\.score expected number, got boolean"):
        client.complete_json("s", "u", schema, "t")


def test_a_schema_keyword_the_validator_does_not_enforce_is_refused_before_any_request(llm: FakeLlm) -> None:
    client = make_client(llm.url)
    with pytest.raises(ValueError, match=r"\$\.title uses unsupported keywords: pattern"):
        client.complete_json("s", "u", {"type": "object", "properties": {"title": {"pattern": "^a"}}}, "t")
    assert llm.requests == []
    assert client.counters.attempted == 0


# -- endpoint failures and retries -----------------------------------------------------------------


def test_a_slow_answer_times_out_is_retried_then_unavailable(llm: FakeLlm) -> None:
    llm.script(hang(), hang(), ok(GOOD))  # the first two never answer: only the timeout ends them
    client = make_client(llm.url, timeout_s=0.3, retries=1)
    with pytest.raises(LlmUnavailable) as info:
        ask(client)
    assert info.value.code == "llm_unavailable"
    assert "timed out after 0.3 s; tried 2 times" in info.value.message
    assert len(llm.requests) == 2
    assert client.counters.as_dict() == {"attempted": 1, "produced": 0, "empty": 0, "failed": 1, "retried": 1}


def test_a_slow_answer_within_the_timeout_is_fine(llm: FakeLlm) -> None:
    llm.script(slow(0.5, then=ok(GOOD)))
    client = make_client(llm.url)
    assert ask(client) == GOOD
    assert client.counters.retried == 0


@pytest.mark.parametrize("code", [500, 503, 429])
def test_transient_http_errors_are_retried(llm: FakeLlm, code: int) -> None:
    llm.script(status(code, {"error": {"message": "busy"}}), ok(GOOD))
    client = make_client(llm.url)
    assert ask(client) == GOOD
    assert len(llm.requests) == 2
    assert client.counters.as_dict() == {"attempted": 1, "produced": 1, "empty": 0, "failed": 0, "retried": 1}


def test_a_lost_connection_is_retried(llm: FakeLlm) -> None:
    llm.script(drop(), ok(GOOD))
    client = make_client(llm.url)
    assert ask(client) == GOOD
    assert client.counters.retried == 1


def test_server_errors_that_outlast_the_retries_are_unavailable(llm: FakeLlm) -> None:
    llm.script(status(500, "boom one"), status(502, "boom two"), status(500, "boom three"), ok(GOOD))
    client = make_client(llm.url, retries=2)
    with pytest.raises(LlmUnavailable) as info:
        ask(client)
    assert info.value.details["status"] == 500
    assert "HTTP 500 (tried 3 times): boom three" in info.value.message
    assert len(llm.requests) == 3
    assert client.counters.as_dict() == {"attempted": 1, "produced": 0, "empty": 0, "failed": 1, "retried": 2}


@pytest.mark.parametrize("code", [401, 403])
def test_a_refused_key_is_unavailable_at_once(llm: FakeLlm, code: int) -> None:
    llm.script(status(code, {"error": "invalid api key"}), ok(GOOD))
    client = make_client(llm.url, api_key="wrong")
    with pytest.raises(LlmUnavailable, match="check api_key or DORY_LLM_API_KEY") as info:
        ask(client)
    assert info.value.details["status"] == code
    assert "wrong" not in info.value.message  # the key itself is never shown
    assert len(llm.requests) == 1
    assert client.counters.retried == 0


@pytest.mark.parametrize(("code", "body"), [(404, "model 'fake-model' not found"), (400, "bad request: messages")])
def test_other_client_errors_are_unavailable_and_not_retried(llm: FakeLlm, code: int, body: str) -> None:
    llm.script(status(code, body), ok(GOOD))
    with pytest.raises(LlmUnavailable, match=f"answered HTTP {code}: {body}"):
        ask(make_client(llm.url))
    assert len(llm.requests) == 1


def test_a_body_that_is_not_a_chat_completion_is_unavailable(llm: FakeLlm) -> None:
    llm.script(status(200, "<html>captive portal</html>"))
    with pytest.raises(LlmUnavailable, match=r"answered without a chat completion .*captive portal"):
        ask(make_client(llm.url))


def test_connection_refused_is_unavailable_quickly() -> None:
    client = make_client(closed_port_url(), retries=2)
    with pytest.raises(LlmUnavailable, match="is unreachable") as info:  # refused: no timeout was waited for
        ask(client)
    assert "timed out" not in info.value.message
    assert info.value.http_status == 503
    assert client.counters.as_dict() == {"attempted": 1, "produced": 0, "empty": 0, "failed": 1, "retried": 2}


def test_a_server_rejecting_response_format_is_asked_again_without_it() -> None:
    with FakeLlm(rejects_response_format=True) as llm:
        llm.script(ok(GOOD), ok(GOOD))
        client = make_client(llm.url)
        assert ask(client) == GOOD
        assert ask(client) == GOOD
        assert ["response_format" in r.body for r in llm.requests] == [True, False, False]  # then never again
    assert client.counters.as_dict() == {"attempted": 2, "produced": 2, "empty": 0, "failed": 0, "retried": 0}


def test_the_api_key_is_sent_as_a_bearer_token(llm: FakeLlm) -> None:
    llm.script(ok(GOOD))
    client = make_client(llm.url, api_key="sk-local-123")
    ask(client)
    assert llm.requests[0].headers["authorization"] == "Bearer sk-local-123"
    assert "sk-local-123" not in repr(client)


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/", "/v1/chat/completions"])
def test_the_base_url_may_name_v1_or_not(llm: FakeLlm, suffix: str) -> None:
    llm.script(ok(GOOD))
    assert ask(make_client(llm.url + suffix)) == GOOD
    assert llm.requests[0].path == "/v1/chat/completions"


def test_a_base_url_with_a_path_prefix_keeps_it() -> None:
    assert (
        endpoint_url("https://openrouter.ai/api/v1", "chat/completions")
        == "https://openrouter.ai/api/v1/chat/completions"
    )
    assert (
        endpoint_url("https://openrouter.ai/api", "chat/completions") == "https://openrouter.ai/api/v1/chat/completions"
    )


def test_counters_are_exact_under_concurrent_calls() -> None:
    with FakeLlm(default=ok(GOOD)) as llm:
        client = make_client(llm.url)
        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(lambda _: ask(client), range(24)))
    assert results == [GOOD] * 24
    assert client.counters.as_dict() == {"attempted": 24, "produced": 24, "empty": 0, "failed": 0, "retried": 0}


def test_errors_are_backend_unavailable_and_survive_a_round_trip() -> None:
    for cls, code in ((LlmUnavailable, "llm_unavailable"), (LlmBadOutput, "llm_bad_output")):
        error = cls("x", reason="empty")
        assert isinstance(error, BackendUnavailable)
        rebuilt = error_from_dict(error.to_dict())
        assert type(rebuilt) is cls and rebuilt.code == code and rebuilt.details == {"reason": "empty"}


def test_the_fake_server_lists_its_model(llm: FakeLlm) -> None:
    import httpx

    assert httpx.get(llm.v1_url + "/models").json()["data"] == [{"id": "fake-model", "object": "model"}]


# -- settings --------------------------------------------------------------------------------------


def corpus(tmp_path: Path, toml: str = "") -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "dory.toml").write_text(toml, encoding="utf-8")
    return root


def test_no_llm_by_default(tmp_path: Path) -> None:
    settings = load_settings(corpus(tmp_path), env={})
    assert settings.llm.backend == "none"
    assert from_settings(settings) is None


@pytest.mark.parametrize(
    ("toml", "missing"),
    [
        ('backend = "openai"\nmodel = "m"\n', "url (in dory.toml or DORY_LLM_URL)"),
        ('backend = "openai"\nurl = "http://127.0.0.1:9"\n', "model (in dory.toml or DORY_LLM_MODEL)"),
        ('backend = "openai"\nurl = ""\n', "url and model (in dory.toml or DORY_LLM_URL, DORY_LLM_MODEL)"),
    ],
)
def test_openai_backend_without_url_or_model_is_a_config_error_when_the_client_is_built(
    tmp_path: Path, toml: str, missing: str
) -> None:
    settings = load_settings(corpus(tmp_path, "[llm]\n" + toml), env={})  # loading still works (dory status)
    with pytest.raises(ConfigError) as info:
        from_settings(settings)
    assert info.value.message == f'[llm] backend = "openai" needs {missing}'


def test_a_url_that_is_not_http_is_a_config_error(tmp_path: Path) -> None:
    settings = load_settings(
        corpus(tmp_path, '[llm]\nbackend = "openai"\nurl = "127.0.0.1:11434"\nmodel = "m"\n'), env={}
    )
    with pytest.raises(ConfigError, match="must start with http:// or https://"):
        from_settings(settings)


def test_environment_configures_the_client_without_contacting_it(tmp_path: Path) -> None:
    root = corpus(tmp_path, '[llm]\nmodel = "from-toml"\ntimeout_s = 9\n')
    env = {
        "DORY_LLM_BACKEND": "openai",
        "DORY_LLM_URL": closed_port_url() + "/v1",
        "DORY_LLM_MODEL": "from-env",
        "DORY_LLM_API_KEY": "sk-env",
        "DORY_LLM_RETRIES": "0",
        "DORY_LLM_TEMPERATURE": "0.5",
    }
    settings = load_settings(root, env=env)
    assert (settings.llm.model, settings.llm.api_key, settings.llm.timeout_s) == ("from-env", "sk-env", 9.0)
    client = from_settings(settings)  # nothing listens at that URL: building must not connect
    assert client is not None
    assert (client.model, client.retries, client.temperature, client.timeout_s) == ("from-env", 0, 0.5, 9.0)
    assert client.endpoint == env["DORY_LLM_URL"] + "/chat/completions"


def test_env_api_key_reaches_the_server(tmp_path: Path, llm: FakeLlm) -> None:
    llm.script(ok(GOOD))
    env = {"DORY_LLM_BACKEND": "openai", "DORY_LLM_URL": llm.url, "DORY_LLM_MODEL": "m", "DORY_LLM_API_KEY": "sk-e"}
    client = from_settings(load_settings(corpus(tmp_path), env=env))
    assert client is not None
    ask(client)
    assert llm.requests[0].headers["authorization"] == "Bearer sk-e"
    assert llm.requests[0].body["model"] == "m"


@pytest.mark.parametrize(
    ("toml", "problem"),
    [
        ("timeout_s = 0", "llm.timeout_s"),
        ("retries = 11", "llm.retries"),
        ('backend = "ollama"', "llm.backend"),
        ("max_tokens = 0", "llm.max_tokens"),
        ("unknown = 1", "llm.unknown"),
    ],
)
def test_invalid_llm_settings_are_config_errors_at_load(tmp_path: Path, toml: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=f"invalid settings: {problem}"):
        load_settings(corpus(tmp_path, f"[llm]\n{toml}\n"), env={})
