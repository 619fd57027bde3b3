"""Where an OpenAI-compatible server's endpoints live, given the base URL a person configured."""

from __future__ import annotations


def endpoint_url(base_url: str, endpoint: str) -> str:
    """`endpoint` (e.g. "embeddings", "chat/completions") under the server's `/v1`. The base may be
    given as "http://host:port", with "/v1", with a trailing slash, or as the full endpoint URL;
    a path prefix ("https://openrouter.ai/api/v1") is kept."""
    base = base_url.rstrip("/")
    for suffix in ("/" + endpoint, "/v1"):
        base = base.removesuffix(suffix)
    return f"{base}/v1/{endpoint}"
