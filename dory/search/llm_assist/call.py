"""One LLM call for search, bounded by a deadline, failing only into an `AssistFailed` with a code.

Search must answer whatever the model does, so every way a call can go wrong becomes one of four
codes the warning names: `not-configured` (no usable [llm] section), `timeout` (no answer within
search.llm_deadline_ms), `unavailable` (the endpoint refused, failed or answered HTTP errors) and
`bad-output` (an answer that is not the JSON asked for, or names results it was not shown).

The deadline is enforced twice: the client's own HTTP timeout is the deadline (and it never
retries: a retry cannot fit), and the caller waits for the call's thread at most until the
deadline. The second bound is the one that holds; the first only ends the abandoned thread soon
after, so a hung endpoint never piles threads up.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from dory.config import Settings
from dory.errors import BackendUnavailable, ConfigError, LlmBadOutput

if TYPE_CHECKING:
    from dory.llm.client import LlmClient  # imported on first use: it loads httpx, which a bm25 search never needs

T = TypeVar("T")

NOT_CONFIGURED = "not-configured"
TIMEOUT = "timeout"
UNAVAILABLE = "unavailable"
BAD_OUTPUT = "bad-output"


class AssistFailed(Exception):
    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


class SearchLlm:
    """The [llm] endpoint as search uses it: built on first use, shared by a service's searches."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._client: LlmClient | None = None
        self._retired: list[LlmClient] = []  # built for an earlier deadline; calls may still be using them
        self._lock = threading.Lock()

    @property
    def deadline_s(self) -> float:
        """Read on every call, so a changed `search.llm_deadline_ms` applies to the next search."""
        return self.settings.search.llm_deadline_ms / 1000

    def client(self) -> LlmClient:
        """The client, or AssistFailed(not-configured)."""
        llm = self.settings.llm
        if llm.backend == "none":
            raise AssistFailed(NOT_CONFIGURED, 'no LLM is configured ([llm] backend = "none")')
        if not llm.url or not llm.model:
            raise AssistFailed(NOT_CONFIGURED, '[llm] backend = "openai" needs url and model')
        deadline_s = self.deadline_s
        with self._lock:
            if self._client is not None and self._client.timeout_s != deadline_s:
                self._retired.append(self._client)
                self._client = None
            if self._client is None:
                from dory.llm.client import LlmClient

                try:
                    self._client = LlmClient(
                        llm.url,
                        llm.model,
                        api_key=llm.api_key,
                        timeout_s=deadline_s,
                        retries=0,
                        temperature=llm.temperature,
                        max_tokens=llm.max_tokens,
                    )
                except ConfigError as exc:
                    raise AssistFailed(NOT_CONFIGURED, exc.message) from None
            return self._client

    def start(self, system: str, user: str, schema: dict[str, Any], name: str) -> Pending[dict[str, Any]]:
        """Send the request now, in the background; `result()` waits for it until the deadline."""
        client = self.client()
        return Pending(lambda: client.complete_json(system, user, schema, name), client.timeout_s)

    def close(self) -> None:
        with self._lock:
            for client in [*self._retired, *([self._client] if self._client else [])]:
                client.close()
            self._client, self._retired = None, []


class Pending(Generic[T]):
    """A call running on its own daemon thread since construction, due within `deadline_s`."""

    def __init__(self, call: Callable[[], T], deadline_s: float) -> None:
        self._due = time.monotonic() + deadline_s
        self._deadline_ms = round(deadline_s * 1000)
        self._done = threading.Event()
        self._value: T | None = None
        self._error: BaseException | None = None
        threading.Thread(target=self._run, args=(call,), name="dory-search-llm", daemon=True).start()

    def _run(self, call: Callable[[], T]) -> None:
        try:
            self._value = call()
        except BaseException as exc:  # handed to the waiting search, which classifies it
            self._error = exc
        finally:
            self._done.set()

    def result(self) -> T:
        late = AssistFailed(TIMEOUT, f"the LLM did not answer within {self._deadline_ms} ms")
        if not self._done.wait(max(0.0, self._due - time.monotonic())):
            raise late
        if self._error is not None:
            raise classify(self._error, late)
        return self._value  # type: ignore[return-value]  # set whenever no error was


def classify(exc: BaseException, late: AssistFailed) -> AssistFailed:
    """The failure code of an exception from the call; `late` when it was the client's timeout (which
    is the deadline: the warning must not depend on which of the two bounds fired first)."""
    if isinstance(exc, AssistFailed):
        return exc
    if isinstance(exc, LlmBadOutput):
        return AssistFailed(BAD_OUTPUT, exc.message)
    if isinstance(exc, BackendUnavailable):
        return late if "timed out" in exc.message else AssistFailed(UNAVAILABLE, exc.message)
    return AssistFailed(UNAVAILABLE, f"the LLM call failed: {type(exc).__name__}: {exc}")
