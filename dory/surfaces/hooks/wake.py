"""`dory wake --hook`: the wake block as Claude Code's SessionStart hook output,
`{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "<block>"}}`.

Where the block comes from, fastest first: the server named by `--server` / DORY_URL (HTTP, with
the standard library's client), else the corpus's running daemon (its control socket), else the
corpus itself, in this process (the only path that imports the service; it loads the tokenizer's
vocabulary but never the embedding model). wake caps the block at 10,000 characters, Claude Code's
limit for added context.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, BinaryIO, NoReturn

from dory.errors import BackendUnavailable, DaemonNotRunning, error_from_dict
from dory.statefolder import request
from dory.surfaces.hooks import failopen
from dory.surfaces.hooks.event import HookEvent, read_event
from dory.surfaces.hooks.profile import choose
from dory.surfaces.hooks.target import Target

DEADLINE_S = 5.0  # the hook's own limit; `dory connect` gives Claude Code's a margin above it
# The daemon or server is given this share of it: a hung one is then reported as what it is
# (daemon_timeout, backend_unavailable) before the deadline, the safety net for everything else.
IO_SHARE = 0.75
CONTEXT_EVENTS = ("SessionStart", "UserPromptSubmit")  # the events whose hooks may add context


@dataclass(frozen=True)
class WakeOptions:
    profile: str | None = None  # None: chosen by the session's folder
    project: str | None = None
    budget: int | None = None
    max_chars: int | None = None
    agent: str | None = None
    deadline_s: float = DEADLINE_S

    @classmethod
    def parse(cls, values: dict[str, str]) -> WakeOptions:
        """From option strings (dory.surfaces.launch); ValueError for a number that is not one."""
        budget, max_chars = values.get("budget"), values.get("max_chars")
        return cls(
            profile=values.get("profile"),
            project=values.get("project"),
            budget=int(budget) if budget is not None else None,
            max_chars=int(max_chars) if max_chars is not None else None,
            agent=values.get("agent"),
            deadline_s=float(values.get("deadline_s", DEADLINE_S)),
        )


def run(target: Target, options: WakeOptions, stdin: BinaryIO) -> NoReturn:
    failopen.run("wake", lambda: hook_output(target, options, read_event(stdin)), options.deadline_s)


def hook_output(target: Target, options: WakeOptions, event: HookEvent) -> str:
    block = wake_block(target, wake_request(options, event), options.deadline_s * IO_SHARE)
    name = event.hook_event_name if event.hook_event_name in CONTEXT_EVENTS else "SessionStart"
    return json.dumps({"hookSpecificOutput": {"hookEventName": name, "additionalContext": block}}, ensure_ascii=False)


def wake_request(options: WakeOptions, event: HookEvent) -> dict[str, Any]:
    profile, project = options.profile, options.project
    if profile is None:
        profile, found = choose(event.cwd or os.getcwd())  # harnesses run hooks in the project folder
        project = project or found
    fields = {
        "profile": profile,
        "project": project,
        "budget": options.budget,
        "max_chars": options.max_chars,
        "agent": options.agent,
    }
    return {key: value for key, value in fields.items() if value is not None}


def wake_block(target: Target, body: dict[str, Any], timeout_s: float) -> str:
    if target.server:
        return str(_from_server(target.server, target.token, body, timeout_s)["block"])
    try:
        return str(request(target.daemon_socket(), "wake", body, timeout_s)["block"])
    except DaemonNotRunning:
        pass  # nothing runs for this corpus: build the block here
    return _in_process(target, body)


def _from_server(url: str, token: str | None, body: dict[str, Any], timeout_s: float) -> Any:
    """POST /v1/wake (the CLI's httpx client would cost the import time this path exists to save;
    http.client itself is imported only here, as the daemon path does not need it)."""
    import http.client
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BackendUnavailable(f"not an http(s) server URL: {url!r}", url=url)
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = kind(parts.hostname, parts.port, timeout=timeout_s)
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    try:
        connection.request("POST", parts.path.rstrip("/") + "/v1/wake", json.dumps(body), headers)
        answer = connection.getresponse()
        status, raw = answer.status, answer.read()
    except (OSError, http.client.HTTPException) as exc:
        raise BackendUnavailable(f"cannot reach the Dory server at {url}: {exc}", url=url) from exc
    finally:
        connection.close()
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise BackendUnavailable(f"the server at {url} answered {status} without JSON", url=url) from exc
    if status >= 400:
        error = data.get("error") if isinstance(data, dict) else None
        raise error_from_dict(error) if isinstance(error, dict) else BackendUnavailable(f"the server answered {status}")
    return data


def _in_process(target: Target, body: dict[str, Any]) -> str:
    import pydantic

    from dory.errors import from_validation_error
    from dory.models import WakeRequest
    from dory.surfaces.services import open_service

    try:
        req = WakeRequest.model_validate(body)
    except pydantic.ValidationError as exc:
        raise from_validation_error(exc) from exc
    with open_service(target.corpus, target.state_dir, surface="hook") as service:
        return service.wake(req).block
