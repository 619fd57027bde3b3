"""A small client for OpenAI-compatible chat endpoints that must answer with one JSON object.

POST {base}/v1/chat/completions with a system and a user message and
`response_format: {"type": "json_object"}`; the assistant's text is searched for a JSON object
(fences, leading prose and <think> blocks are tolerated) which is then checked against the caller's
schema. Every LLM feature in Dory has a deterministic fallback, so this client never guesses: an
answer it cannot use raises `LlmBadOutput`, an endpoint it cannot use raises `LlmUnavailable`, and
the caller falls back and reports which happened.

Retries (with a 0.2 s × attempt pause) follow only what may pass by itself: timeouts, lost
connections, HTTP 429 and 5xx. A server that rejects `response_format` (HTTP 400 naming it) is asked
again once without it, and this client stops sending it afterwards.

Nothing touches the network until the first `complete_json`; httpx itself is imported then too,
because importing it costs ~50 ms and most commands never need an LLM.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from dory.errors import BackendUnavailable, ConfigError, LlmBadOutput, LlmUnavailable
from dory.llm.endpoint import endpoint_url

from .schema import check_schema, extract_json_object, schema_errors

if TYPE_CHECKING:
    import httpx

    from dory.config import Settings

_REJECTED_FORMAT_STATUSES = frozenset({400, 422})  # 422: servers that validate request bodies strictly
_AUTH_STATUSES = frozenset({401, 403})


@dataclass
class LlmCounters:
    """What a client did, for job reports. attempted = produced + failed once calls finish; empty
    answers are also counted in failed; retried counts extra HTTP attempts after transient errors."""

    attempted: int = 0
    produced: int = 0
    empty: int = 0
    failed: int = 0
    retried: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, name: str, count: int = 1) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + count)

    def reclassify_empty(self) -> None:
        """A schema-valid answer the caller found empty (every list blank) counts as empty, not produced."""
        with self._lock:
            self.produced -= 1
            self.empty += 1
            self.failed += 1

    def as_dict(self) -> dict[str, int]:
        with self._lock:
            return {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}


class LlmClient:
    """One OpenAI-compatible chat endpoint. Thread-safe: jobs may share one client and its counters."""

    def __init__(
        self,
        url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        retries: int = 2,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        backoff_s: float = 0.2,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"[llm] url must start with http:// or https://, got {url!r}", setting="llm.url")
        if timeout_s <= 0 or retries < 0 or max_tokens < 1:
            raise ConfigError("[llm] needs timeout_s > 0, retries ≥ 0 and max_tokens ≥ 1")
        self.endpoint = endpoint_url(url, "chat/completions")
        self.model = model
        self.timeout_s = timeout_s
        self.retries = retries
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.backoff_s = backoff_s
        self.counters = LlmCounters()
        self._api_key = api_key or None
        self._send_response_format = True  # cleared for good once the server rejects it
        self._http_client: httpx.Client | None = None
        self._http_lock = threading.Lock()

    def __repr__(self) -> str:  # never shows the API key
        return f"LlmClient(endpoint={self.endpoint!r}, model={self.model!r})"

    def __enter__(self) -> LlmClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        with self._http_lock:
            if self._http_client is not None:
                self._http_client.close()
                self._http_client = None

    # -- the one call ----------------------------------------------------------------------------

    def complete_json(self, system: str, user: str, schema: dict[str, Any], name: str) -> dict[str, Any]:
        """Ask for one JSON object matching `schema`; `name` labels the task in errors ("digest").

        Raises LlmUnavailable or LlmBadOutput (both BackendUnavailable), ValueError for a schema
        using keywords the validator does not enforce (a programming error, raised before any request).
        """
        check_schema(schema)
        self.counters.add("attempted")
        try:
            content, finish_reason = self._chat(system_prompt(system, schema), user, name)
            result = self._parse(content, finish_reason, schema, name)
        except LlmBadOutput as exc:
            self.counters.add("failed")
            if exc.details.get("reason") == "empty":
                self.counters.add("empty")
            raise
        except BackendUnavailable:
            self.counters.add("failed")
            raise
        self.counters.add("produced")
        return result

    @property
    def max_answer_chars(self) -> int:
        """The longest answer parsed. A token is about four characters, so this is twice what
        `max_tokens` allows; a longer answer is hostile or broken, and searching a huge text for its
        JSON object costs CPU quadratic in its nesting (a 1 MB `{"a":[{"a":[…` took 65 s)."""
        return max(64_000, 8 * self.max_tokens)

    def _parse(self, content: str, finish_reason: Any, schema: dict[str, Any], name: str) -> dict[str, Any]:
        if not content.strip():
            raise self._bad(name, "answered with an empty message", "empty")
        if len(content) > self.max_answer_chars:
            what = f"answered {len(content)} characters; at most {self.max_answer_chars} are read"
            raise self._bad(name, what, "too_long")
        try:
            value = extract_json_object(content)
        except ValueError:
            if finish_reason == "length":
                raise self._bad(
                    name, f"was cut off at max_tokens={self.max_tokens} before its JSON ended", "truncated"
                ) from None
            raise self._bad(name, f"did not answer with a JSON object: {_snippet(content)}", "not_json") from None
        problems = schema_errors(value, schema)
        if problems:
            where, what = problems[0]
            more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
            raise self._bad(name, f"answered JSON that breaks the schema: {where} {what}{more}", "schema", field=where)
        return value

    # -- HTTP ------------------------------------------------------------------------------------

    def _chat(self, system: str, user: str, name: str) -> tuple[str, Any]:
        """The assistant's text and finish_reason, after the response_format fallback if needed."""
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "stream": False,
        }
        if self._send_response_format:
            payload["response_format"] = {"type": "json_object"}
        response = self._post(payload, name)
        if "response_format" in payload and _rejects_response_format(response):
            # llama.cpp builds and some proxies refuse the field; the system prompt still asks for JSON.
            self._send_response_format = False
            del payload["response_format"]
            response = self._post(payload, name)
        self._raise_for_status(response, name)
        return self._message_of(response, name)

    def _post(self, payload: dict[str, Any], name: str) -> httpx.Response:
        """POST with retries on timeouts, connection errors, 429 and 5xx; other answers are returned."""
        import httpx

        attempts = 1 + self.retries
        for attempt in range(1, attempts + 1):
            try:
                response = self._http().post(self.endpoint, json=payload)
            except httpx.TimeoutException as exc:
                problem: str = f"timed out after {self.timeout_s:g} s"
                cause: Exception | None = exc
            except httpx.TransportError as exc:
                problem, cause = f"is unreachable ({exc or type(exc).__name__})", exc
            else:
                if not _transient(response.status_code) or attempt == attempts:
                    return response
                problem, cause = f"answered HTTP {response.status_code}", None
            if attempt == attempts:
                raise self._unavailable(name, f"{problem}; tried {attempts} times") from cause
            self.counters.add("retried")
            time.sleep(self.backoff_s * attempt)
        raise AssertionError("unreachable")  # the loop always returns or raises

    def _http(self) -> httpx.Client:
        import httpx

        with self._http_lock:  # one connection pool, built on first use by whichever thread comes first
            if self._http_client is None:
                headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
                self._http_client = httpx.Client(timeout=self.timeout_s, headers=headers)
            return self._http_client

    def _raise_for_status(self, response: httpx.Response, name: str) -> None:
        status = response.status_code
        if status < 400:
            return
        if status in _AUTH_STATUSES:
            what = f"refused the request (HTTP {status}): check api_key or DORY_LLM_API_KEY"
        elif _transient(status):
            what = f"answered HTTP {status} (tried {1 + self.retries} times): {_snippet(response.text)}"
        else:
            what = f"answered HTTP {status}: {_snippet(response.text)}"
        raise self._unavailable(name, what, status=status)

    def _message_of(self, response: httpx.Response, name: str) -> tuple[str, Any]:
        """choices[0].message.content; a body without it is not a chat endpoint (or not a working one)."""
        try:
            choice = response.json()["choices"][0]
            content = choice["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise self._unavailable(
                name, f"answered without a chat completion (HTTP {response.status_code}): {_snippet(response.text)}"
            ) from None
        if content is not None and not isinstance(content, str):
            raise self._unavailable(name, f"answered with non-text content: {_snippet(json.dumps(content))}")
        return content or "", choice.get("finish_reason")

    def _unavailable(self, name: str, what: str, **details: Any) -> LlmUnavailable:
        return LlmUnavailable(
            f"LLM endpoint {self.endpoint} (model {self.model!r}, task {name!r}) {what}",
            endpoint=self.endpoint,
            model=self.model,
            task=name,
            **details,
        )

    def _bad(self, name: str, what: str, reason: str, **details: Any) -> LlmBadOutput:
        return LlmBadOutput(
            f"LLM model {self.model!r} (task {name!r}) {what}",
            endpoint=self.endpoint,
            model=self.model,
            task=name,
            reason=reason,
            **details,
        )


def from_settings(settings: Settings) -> LlmClient | None:
    """The configured client, or None when [llm] backend is "none". Raises ConfigError when the
    backend is "openai" but url or model is missing; nothing is contacted here."""
    llm = settings.llm
    if llm.backend == "none":
        return None
    missing = [key for key in ("url", "model") if not getattr(llm, key)]
    if missing:
        names = " and ".join(missing)
        envs = ", ".join(f"DORY_LLM_{key.upper()}" for key in missing)
        raise ConfigError(
            f'[llm] backend = "openai" needs {names} (in dory.toml or {envs})', setting=f"llm.{missing[0]}"
        )
    assert llm.url is not None and llm.model is not None  # checked just above
    return LlmClient(
        llm.url,
        llm.model,
        api_key=llm.api_key,
        timeout_s=llm.timeout_s,
        retries=llm.retries,
        temperature=llm.temperature,
        max_tokens=llm.max_tokens,
    )


def system_prompt(system: str, schema: dict[str, Any]) -> str:
    """The system message as sent (callers that estimate tokens measure this)."""
    # The schema goes into the prompt: json_object mode only promises JSON, not these fields, and
    # servers without response_format need to be told to answer in JSON at all.
    return (
        f"{system.rstrip()}\n\nAnswer with one JSON object and nothing else. "
        f"It must match this JSON schema:\n{json.dumps(schema, ensure_ascii=False)}"
    )


def _transient(status: int) -> bool:
    return status == 429 or 500 <= status < 600


def _rejects_response_format(response: httpx.Response) -> bool:
    return response.status_code in _REJECTED_FORMAT_STATUSES and "response_format" in response.text


def _snippet(text: str, limit: int = 200) -> str:
    """The start of a text, on one line, for error messages."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "…"
