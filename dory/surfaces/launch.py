"""The `dory` executable: `dory wake --hook` answered before the command line interface loads.

A SessionStart hook runs `dory wake --hook` at every agent session start, and importing the CLI
(click and the pydantic models of every command) costs more than the whole latency target (SPEC
§11: p95 ≤ 0.3 s with the daemon running). This module imports only the standard library: it
recognises `dory [--corpus DIR] [--state-dir DIR] [--server URL] [--token T] wake --hook [wake
options]` and answers through dory.surfaces.hooks.wake, which asks the running daemon or server.
Any other command line, or one with an option this parser does not know, goes to the CLI
(dory.surfaces.cli), whose `wake --hook` calls the same hook code.
"""

from __future__ import annotations

import sys

from dory.cpu import configure_blas_threads

GLOBAL_OPTIONS = {"--corpus": "corpus", "--state-dir": "state_dir", "--server": "server", "--token": "token"}
WAKE_OPTIONS = {
    "--profile": "profile",
    "--project": "project",
    "--budget": "budget",
    "--max-chars": "max_chars",
    "--agent": "agent",
    "--deadline": "deadline_s",
}


def main() -> None:
    configure_blas_threads()  # before anything imports numpy (the hook's in-process fallback may)
    parsed = wake_hook_options(sys.argv[1:])
    if parsed is not None:
        from dory.surfaces.hooks import wake
        from dory.surfaces.hooks.target import Target

        global_options, options = parsed
        try:
            wake_options = wake.WakeOptions.parse(options)
        except ValueError:
            wake_options = None  # `--budget x`: the CLI reports it
        if wake_options is not None:
            get = global_options.get
            target = Target.from_options(get("corpus"), get("state_dir"), get("server"), get("token"))
            wake.run(target, wake_options, sys.stdin.buffer)
    from dory.surfaces.cli import main as cli_main

    cli_main()


def wake_hook_options(argv: list[str]) -> tuple[dict[str, str], dict[str, str]] | None:
    """(global options, wake options) of a `wake --hook` command line, else None."""
    try:
        command = argv.index("wake")
    except ValueError:
        return None
    rest = argv[command + 1 :]
    if "--hook" not in rest:
        return None
    global_options = _options(argv[:command], GLOBAL_OPTIONS)
    wake_options = _options([word for word in rest if word != "--hook"], WAKE_OPTIONS)
    if global_options is None or wake_options is None:
        return None
    return global_options, wake_options


def _options(words: list[str], known: dict[str, str]) -> dict[str, str] | None:
    """`--name value` and `--name=value` pairs of known options; None if anything else is there."""
    found: dict[str, str] = {}
    index = 0
    while index < len(words):
        name, equals, value = words[index].partition("=")
        if name not in known:
            return None
        if not equals:
            if index + 1 >= len(words):
                return None
            index += 1
            value = words[index]
        found[known[name]] = value
        index += 1
    return found
