"""Embeddings from an OpenAI-compatible HTTP endpoint (Ollama, LM Studio, vLLM, OpenAI itself).

POST {base_url}/v1/embeddings with {"model": ..., "input": [...]}; the answer is
{"data": [{"index": i, "embedding": [...]}, ...]}. Everything that can go wrong (no server, HTTP
error, a body that is not JSON, a wrong shape, wrong dimensions) becomes one EmbeddingEndpointError
with a message that says what happened and where.

The fingerprint names the model but not the URL: the same model served from another host gives the
same vectors, so moving the server must not force a re-index.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import numpy as np

from dory.errors import ConfigError, EmbeddingEndpointError
from dory.llm.endpoint import endpoint_url

from .base import Fingerprint, PrefixedEmbedder, TokenCounter, l2_normalize_rows

# Worth retrying: the server was slow, overloaded or restarting. Anything else will not get better.
_RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
_DIMS_PROBE_TEXT = "dimension probe"


class OpenAICompatEmbedder(PrefixedEmbedder):
    """Embedder backed by a remote or local `/v1/embeddings` endpoint."""

    name = "openai-compatible"

    def __init__(
        self,
        url: str,
        model: str,
        *,
        api_key: str | None = None,
        dims: int | None = None,
        batch_size: int = 32,
        timeout_s: float = 30.0,
        retries: int = 2,
        retry_backoff_s: float = 0.5,
        token_counter: TokenCounter | None = None,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"embedding endpoint URL must start with http:// or https://, got {url!r}")
        if batch_size < 1 or timeout_s <= 0:
            raise ConfigError("embedding endpoint batch_size must be ≥ 1 and timeout_s > 0")
        self.endpoint = endpoint_url(url, "embeddings")
        self.model = model
        self.batch_size = batch_size
        self.retries = retries
        self.retry_backoff_s = retry_backoff_s
        self._configured_dims = dims
        self._dims = dims
        self._token_counter = token_counter
        self._timeout_s = timeout_s
        self._api_key = api_key
        self._http: httpx.Client | None = None  # created on first use: building TLS contexts costs time

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    def _client(self) -> httpx.Client:
        if self._http is None:
            headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
            self._http = httpx.Client(timeout=self._timeout_s, headers=headers)
        return self._http

    # -- identity --------------------------------------------------------------------------------

    @property
    def dims(self) -> int:
        """Configured dims, or learnt from the first response (asking the server once if needed)."""
        if self._dims is None:
            self._request([_DIMS_PROBE_TEXT])
        assert self._dims is not None  # _request sets it or raises
        return self._dims

    def fingerprint(self) -> Fingerprint:
        return {
            "model": f"openai-compatible:{self.model}",
            "revision": "",
            "dims": self.dims,
            "query_prefix": self.query_prefix,
            "doc_prefix": self.doc_prefix,
        }

    def count_tokens(self, text: str) -> int:
        """MiniLM wordpiece count if that model is installed, else the deterministic approximation.

        The remote model's own tokenizer is unknown to us; this is only used to size chunks.
        """
        if self._token_counter is None:
            from .tokens import default_token_counter

            self._token_counter = default_token_counter().count
        return self._token_counter(text)

    # -- embedding -------------------------------------------------------------------------------

    def _embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            # No request for nothing: if dims are still unknown, the empty result has width 0.
            return np.zeros((0, self._dims or 0), dtype=np.float32)
        parts = [self._request(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        return l2_normalize_rows(np.concatenate(parts, axis=0))

    # -- HTTP ------------------------------------------------------------------------------------

    def _request(self, batch: list[str]) -> np.ndarray:
        """One POST (with retries) for one batch; returns validated, unnormalised vectors."""
        response = self._post_with_retries({"model": self.model, "input": batch})
        try:
            body = response.json()
        except ValueError:
            raise self._error(
                f"returned a body that is not JSON (content-type "
                f"{response.headers.get('content-type', 'unknown')!r}): {_snippet(response.text)}"
            ) from None
        vectors = _vectors_from_body(body, expected_count=len(batch), error=self._error)
        self._check_dims(vectors.shape[1])
        return vectors

    def _post_with_retries(self, payload: dict[str, Any]) -> httpx.Response:
        """POST, retrying connection errors and 408/429/5xx a few times with a growing pause."""
        attempts = 1 + max(0, self.retries)
        for attempt in range(attempts):
            last_attempt = attempt == attempts - 1
            try:
                response = self._client().post(self.endpoint, json=payload)
            except httpx.TimeoutException as exc:
                if last_attempt:
                    raise self._error(f"timed out ({type(exc).__name__})") from exc
            except httpx.TransportError as exc:
                if last_attempt:
                    raise self._error(f"is unreachable: {exc or type(exc).__name__}") from exc
            else:
                if response.status_code < 400:
                    return response
                if last_attempt or response.status_code not in _RETRY_STATUSES:
                    raise self._error(
                        f"answered HTTP {response.status_code}: {_snippet(response.text)}",
                        status=response.status_code,
                    )
            time.sleep(self.retry_backoff_s * (2**attempt))
        raise AssertionError("unreachable")  # the loop always returns or raises

    def _check_dims(self, width: int) -> None:
        if self._configured_dims is not None and width != self._configured_dims:
            raise self._error(f"returned {width}-dimensional vectors but dims is configured as {self._configured_dims}")
        if self._dims is not None and width != self._dims:
            raise self._error(f"returned {width}-dimensional vectors, earlier responses had {self._dims}")
        self._dims = width

    def _error(self, what: str, **details: Any) -> EmbeddingEndpointError:
        return EmbeddingEndpointError(
            f"embedding endpoint {self.endpoint} (model {self.model!r}) {what}",
            endpoint=self.endpoint,
            model=self.model,
            **details,
        )


def _vectors_from_body(body: Any, *, expected_count: int, error: Callable[[str], EmbeddingEndpointError]) -> np.ndarray:
    """Validate an /embeddings JSON body and return its vectors in input order as float32 (n, d)."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        raise error("returned JSON without a 'data' list")
    if len(data) != expected_count:
        raise error(f"returned {len(data)} embeddings for {expected_count} inputs")
    if not all(isinstance(item, dict) and isinstance(item.get("embedding"), list) for item in data):
        raise error("returned 'data' items without an 'embedding' list")
    # OpenAI says items carry their input position in "index"; honour it when every item has one.
    if all(isinstance(item.get("index"), int) for item in data):
        data = sorted(data, key=lambda item: item["index"])
        if [item["index"] for item in data] != list(range(expected_count)):
            raise error("returned 'index' values that do not match the inputs")
    widths = {len(item["embedding"]) for item in data}
    if len(widths) != 1 or 0 in widths:
        raise error(f"returned vectors of differing or zero length: {sorted(widths)}")
    # Check element types ourselves: numpy would happily turn "0.5" or True into a float.
    if not all(type(x) in (int, float) for item in data for x in item["embedding"]):
        raise error("returned embeddings that are not lists of numbers")
    vectors = np.array([item["embedding"] for item in data], dtype=np.float32)
    if not np.isfinite(vectors).all():
        raise error("returned embeddings containing NaN or infinity")
    return vectors


def _snippet(text: str, limit: int = 200) -> str:
    """The start of a response body, on one line, for error messages."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "…"
