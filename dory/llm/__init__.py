"""Optional OpenAI-compatible LLM client with strict JSON outputs (off unless [llm] backend = "openai").

    client = from_settings(settings)          # None when no LLM is configured: use the fallback
    if client is not None:
        try:
            answer = client.complete_json(system, user, schema, name="digest")
        except BackendUnavailable:              # LlmUnavailable or LlmBadOutput: use the fallback
            ...

Its errors, LlmUnavailable and LlmBadOutput, live in dory.errors with all of Dory's errors.

Importing this package is cheap: httpx is loaded on the first request.
"""

from .client import LlmClient, LlmCounters, from_settings

__all__ = ["LlmClient", "LlmCounters", "from_settings"]
