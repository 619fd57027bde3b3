"""Schemathesis against the HTTP app: generated requests to every route, and every answer checked
against /openapi.json (status documented, body matching its schema, content type), none a 5xx.

The app is the real one over a real daemon (watcher, writer thread) on a small corpus in a temporary
folder, called in-process (ASGI), as `dory serve` would serve it. With an admin token every route is
fuzzed, writes included; without a token every route but /healthz and /readyz answers 401, and with
a read-only token every route that needs more than reading answers 403 (or 413 for a body over the
cap, which is refused before anything else, unread).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import APIOperation, Case, GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.python.asgi import shutdown_lifespans
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    response_schema_conformance,
    status_code_conformance,
)

from dory.config import load_settings
from dory.daemon.process import Daemon
from dory.models import TokenCreateRequest, TokenScope
from dory.service.tokens import TokenStore
from dory.surfaces.http.app import create_app

NOTES = {
    "notes/alpha.md": "# Alpha\n\nthe quokka lives on an island; see [[people/ada-lovelace]]\n",
    "people/ada-lovelace.md": "---\ntitle: Ada Lovelace\n---\n\n## Summary\n\nMathematician.\n",
    "logs/sessions/codex/desk/2026-11-20-s1.md": "---\nsession_id: s1\nagent: codex\n---\n\n## user\n\nhello\n",
}
TOKENS: dict[str, list[TokenScope]] = {"fuzz-admin": ["admin"], "fuzz-reader": ["read"]}
OPEN = {"/healthz", "/readyz"}
# Routes under these tags need the write, sessions or admin scope; all others only read.
BEYOND_READING = {"write", "admin"}
# Examples per operation and mode (valid, invalid): the whole file stays within a few minutes on a
# busy 2-core machine. Refusals do not depend on what is sent: fewer examples check them.
EXAMPLES = 25
REFUSAL_EXAMPLES = 5
# What the schema checks: no server error, and every answer as documented.
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


class Served:
    def __init__(self, root: Path) -> None:
        self.settings = load_settings(
            root,
            # No waiting for generations nobody will write (a generated min_generation from the future
            # is answered 503 index_behind at once), and no rate limit on a fuzzer.
            {"embedder.backend": "none", "http.min_generation_wait_s": 0, "http.rate_per_minute": 0},
            env={},
        )
        store = TokenStore(self.settings.tokens_path)
        self.tokens = {name: store.create(TokenCreateRequest(name=name, scopes=s)).token for name, s in TOKENS.items()}
        self.daemon = Daemon(self.settings)
        self.app = create_app(self.daemon.service, self.daemon.readiness, self.daemon.snapshot)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("schema") / "corpus"
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    served = Served(root)
    served.daemon.start()
    served.daemon.startup_done.wait()
    yield served
    shutdown_lifespans()  # schemathesis keeps the app's lifespan running until the process exits
    served.daemon.stop()


@pytest.fixture
def api(served: Served) -> schemathesis.BaseSchema:
    schema = schemathesis.openapi.from_asgi("/openapi.json", served.app)
    schema.config.generation.update(with_security_parameters=False)  # the tests choose the token
    # The live event stream never ends by itself: its answers are checked in test_server.
    return schema.exclude(path="/v1/stream")


def fuzz(api: schemathesis.BaseSchema, check: Callable[[Case], None], examples: int) -> None:
    """`check` on `examples` valid and as many invalid generated requests to every operation, the same
    on every run (derandomized)."""
    bounded = settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: the failing request is reported as sent
        suppress_health_check=list(HealthCheck),
    )
    for operation in (result.ok() for result in api.get_all_operations()):
        fixed = _current_generation(operation)
        bounded(given(operation.as_strategy(GenerationMode.POSITIVE, **fixed))(check))()
        with contextlib.suppress(Unsatisfiable):  # no input of the operation can be invalid (a free string)
            bounded(given(operation.as_strategy(GenerationMode.NEGATIVE, **fixed))(check))()


def _current_generation(operation: APIOperation) -> dict[str, Any]:
    """A generation from the future is answered 503 index_behind by design (test_server checks it):
    reads here ask for none."""
    if "min_generation" not in {parameter.name for parameter in operation.query}:
        return {}
    return {"query": {"min_generation": 0}, "headers": {"dory-min-generation": "0"}}


def _bearer(served: Served, name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {served.tokens[name]}"}


def test_with_an_admin_token_every_answer_is_documented_and_none_is_a_server_error(
    served: Served, api: schemathesis.BaseSchema
) -> None:
    def check(case: Case) -> None:
        # Revoking the test's own tokens would turn the rest of the run into 401s.
        assume(not case.path_parameters or case.path_parameters.get("name") not in TOKENS)
        case.call_and_validate(headers=_bearer(served, "fuzz-admin"), checks=[*CHECKS, ignored_auth])

    fuzz(api, check, EXAMPLES)


def test_without_a_token_every_route_but_health_is_401(api: schemathesis.BaseSchema) -> None:
    def check(case: Case) -> None:
        answer = case.call()
        assert answer.status_code in ({200, 503} if case.path in OPEN else {401, 413}), answer.text
        case.validate_response(answer, checks=CHECKS)

    fuzz(api, check, REFUSAL_EXAMPLES)


def test_a_read_only_token_reads_and_every_other_route_is_403(served: Served, api: schemathesis.BaseSchema) -> None:
    def check(case: Case) -> None:
        answer = case.call(headers=_bearer(served, "fuzz-reader"))
        if BEYOND_READING & set(case.operation.tags or ()):
            assert answer.status_code in (403, 413), answer.text
        else:
            assert answer.status_code not in (401, 403), answer.text
        case.validate_response(answer, checks=CHECKS)

    fuzz(api, check, REFUSAL_EXAMPLES)
