"""Run the MCP conformance suite (npm `@modelcontextprotocol/conformance`, server mode) against the
streamable HTTP transport of `dory serve`, and summarise it per scenario.

    python scripts/mcp_conformance.py                          # every server scenario
    python scripts/mcp_conformance.py tools-list ping          # only these scenarios

Not part of the pytest suite: it needs npm and the npm registry. The first run installs, with npm,
Node 22 (the suite uses `fs.globSync`, newer than the machine's Node 20; the npm package `node`
ships the binary) and the suite, both at pinned versions, into `$DORY_BENCH_DIR/mcp-conformance`
(default /tmp/dory-bench/mcp-conformance); later runs reuse them. Each run then creates a sample
corpus from the template (`dory init --no-model`) in `run/` there, starts `dory serve --port 0` on
it (lexical only: DORY_EMBEDDER_BACKEND=none; no tokens, so MCP is open to local callers), reads
the server's URL from `<corpus>/.dory/daemon.json`, runs each scenario against `<URL>/mcp`, stops
the server with SIGTERM and prints a table of checks passed / failed / warnings. The raw results
(`checks.json` per scenario), the suite's output and the server's log stay in `run/`.

The `dory` run is the one of this checkout (its folder comes first on PYTHONPATH), with the Python
running this script, which must have Dory's dependencies (e.g. `/work/venv/bin/python`).

Some scenarios call fixture tools, resources or prompts (`test_*`, `test://…`) that only the
SDKs' test servers have, or optional capabilities Dory does not declare: they are listed in
EXPECTED_FAILURES with the reason. A scenario fails on a failed check or a warning (as the suite's
own expected-failures check has it). Exit status: 0 when every failure is expected, 1 on an
unexpected failure (a scenario that fails or gives no result and is not listed), 2 when the
set-up fails (npm, the corpus, the server). An expected failure that passes is reported as stale.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
# Pinned so that a run is comparable with the last one; bump both deliberately.
CONFORMANCE = "@modelcontextprotocol/conformance@0.1.16"
NODE = "node@22.23.3"
SERVER_START_S = 120.0  # start-up reconciles the sample corpus; generous for a busy machine
SCENARIO_S = 300.0
DORY = [sys.executable, "-c", "from dory.surfaces.cli import main; main()"]

_FIXTURE = "calls the suite's fixture {what}, which only the SDKs' test servers have"
EXPECTED_FAILURES: dict[str, str] = {
    "logging-set-level": "Dory declares no `logging` capability (its logs go to stderr), so -32601 is right",
    "completion-complete": "Dory declares no `completions` capability, so -32601 is right (the request "
    "also names the fixture prompt test_prompt_with_arguments)",
    "tools-call-simple-text": _FIXTURE.format(what="tool test_simple_text"),
    "tools-call-image": _FIXTURE.format(what="tool test_image_content"),
    "tools-call-audio": _FIXTURE.format(what="tool test_audio_content"),
    "tools-call-embedded-resource": _FIXTURE.format(what="tool test_embedded_resource"),
    "tools-call-mixed-content": _FIXTURE.format(what="tool test_multiple_content_types"),
    "tools-call-with-logging": _FIXTURE.format(what="tool test_tool_with_logging")
    + "; and Dory declares no `logging` capability",
    "tools-call-error": _FIXTURE.format(what="tool test_error_handling")
    + "; Dory answers the unknown name with -32602, as the spec asks",
    "tools-call-with-progress": _FIXTURE.format(what="tool test_tool_with_progress"),
    "tools-call-sampling": _FIXTURE.format(what="tool test_sampling") + "; Dory never asks the client to sample",
    "tools-call-elicitation": _FIXTURE.format(what="tool test_elicitation") + "; Dory never elicits",
    "elicitation-sep1034-defaults": _FIXTURE.format(what="tool test_elicitation_sep1034_defaults"),
    "elicitation-sep1330-enums": _FIXTURE.format(what="tool test_elicitation_sep1330_enums"),
    "json-schema-2020-12": _FIXTURE.format(what="tool json_schema_2020_12_tool"),
    "server-sse-polling": _FIXTURE.format(what="tool test_reconnection")
    + "; its two warnings (no SSE priming event, no retry field) are SHOULDs for servers that offer "
    "resumable streams (SEP-1699), which Dory does not (no event store: its calls are short)",
    "resources-read-text": _FIXTURE.format(what="resource test://static-text"),
    "resources-read-binary": _FIXTURE.format(what="resource test://static-binary"),
    "resources-templates-read": _FIXTURE.format(what="resource template test://template/{id}/data"),
    "resources-subscribe": "Dory declares `resources.subscribe: false`, so -32601 is right (the request "
    "also names the fixture resource test://watched-resource)",
    "resources-unsubscribe": "Dory declares `resources.subscribe: false`, so -32601 is right (the request "
    "also names the fixture resource test://watched-resource)",
    "prompts-get-simple": _FIXTURE.format(what="prompt test_simple_prompt"),
    "prompts-get-with-args": _FIXTURE.format(what="prompt test_prompt_with_arguments"),
    "prompts-get-embedded-resource": _FIXTURE.format(what="prompt test_prompt_with_embedded_resource"),
    "prompts-get-with-image": _FIXTURE.format(what="prompt test_prompt_with_image"),
}


class SetupFailed(Exception):
    """npm, the corpus or the server did not come up: nothing was measured."""


@dataclass
class Outcome:
    scenario: str
    passed: int = 0
    failed: int = 0
    warnings: int = 0
    ran: bool = True  # False: the suite left no checks.json (it crashed or timed out)

    @property
    def ok(self) -> bool:
        # A warning fails the scenario, as in the suite's own expected-failures check.
        return self.ran and self.failed == 0 and self.warnings == 0


def run(cmd: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(cmd, env=env, text=True, check=True, capture_output=True)
    except subprocess.CalledProcessError as exc:
        raise SetupFailed(f"{' '.join(cmd)} exited with {exc.returncode}:\n{exc.stderr[-3000:]}") from exc


def install(cache: Path) -> tuple[Path, Path]:
    """Node 22 and the suite in `cache`, installed once: (node binary, the suite's entry point)."""
    node = cache / "node_modules/node/bin/node"
    suite = cache / "node_modules/@modelcontextprotocol/conformance/dist/index.js"
    wanted = {"node": NODE, "@modelcontextprotocol/conformance": CONFORMANCE}
    installed = {
        name: f"{name}@{json.loads(manifest.read_text())['version']}"
        for name in wanted
        if (manifest := cache / "node_modules" / name / "package.json").is_file()
    }
    if installed != wanted or not node.is_file() or not suite.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        print(f"installing {NODE} and {CONFORMANCE} into {cache} …", file=sys.stderr)
        run(["npm", "install", "--prefix", str(cache), "--save-exact", "--no-audit", "--no-fund", NODE, CONFORMANCE])
    return node, suite


def dory_env() -> dict[str, str]:
    """This checkout's `dory`, lexical only, with no DORY_* setting of the caller (corpus, server URL)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("DORY_")}
    env["DORY_EMBEDDER_BACKEND"] = "none"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return env


def wait_for_url(corpus: Path, server: subprocess.Popen[str], log: Path) -> str:
    """The server's URL once its daemon has published it and /readyz answers 200."""
    state = corpus / ".dory/daemon.json"
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SetupFailed(f"dory serve exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            url = json.loads(state.read_text()).get("http_url")
            if url and httpx.get(f"{url}/readyz", timeout=10).status_code == 200:
                return str(url)
        except (OSError, ValueError, httpx.TransportError):
            pass  # not written yet, written halfway, or not listening yet
        time.sleep(0.2)
    raise SetupFailed(f"dory serve did not become ready within {SERVER_START_S:.0f} s; see {log}")


def list_scenarios(node: Path, suite: Path) -> list[str]:
    """Every server scenario the suite knows, pending ones included (lines `  - name [versions]`)."""
    listed = run([str(node), str(suite), "list", "--server"]).stdout
    return [line.split()[1] for line in listed.splitlines() if line.strip().startswith("- ")]


def run_scenario(node: Path, suite: Path, url: str, scenario: str, results: Path, log: Path) -> Outcome:
    """One scenario; its own output folder, so its checks.json is the only one there. The suite's exit
    status is not used: the checks say more (and warnings do not change it)."""
    out = results / scenario
    with log.open("a") as handle:
        handle.write(f"\n=== {scenario}\n")
        handle.flush()
        try:
            subprocess.run(
                [str(node), str(suite), "server", "--url", f"{url}/mcp", "--scenario", scenario, "-o", str(out)],
                stdout=handle,
                stderr=subprocess.STDOUT,
                timeout=SCENARIO_S,
            )
        except subprocess.TimeoutExpired:
            handle.write(f"timed out after {SCENARIO_S:.0f} s\n")
    found = sorted(out.glob("*/checks.json"))
    if not found:
        return Outcome(scenario, ran=False)
    statuses = [check["status"] for check in json.loads(found[-1].read_text())]
    return Outcome(scenario, statuses.count("SUCCESS"), statuses.count("FAILURE"), statuses.count("WARNING"))


def conformance(cache: Path, node: Path, suite: Path, wanted: list[str]) -> list[Outcome]:
    """Serve a fresh sample corpus, run the scenarios against it, stop the server."""
    work = cache / "run"
    shutil.rmtree(work, ignore_errors=True)
    corpus, results = work / "corpus", work / "results"
    results.mkdir(parents=True)
    env = dory_env()
    run([*DORY, "init", "--no-model", str(corpus)], env=env)
    server_log, suite_log = work / "serve.log", work / "conformance.log"
    with server_log.open("w") as handle:
        server = subprocess.Popen(
            [*DORY, "--corpus", str(corpus), "serve", "--port", "0"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=handle,
            text=True,
        )
    try:
        url = wait_for_url(corpus, server, server_log)
        print(f"dory serve at {url}; results in {work}", file=sys.stderr)
        scenarios = wanted or list_scenarios(node, suite)
        return [run_scenario(node, suite, url, name, results, suite_log) for name in scenarios]
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            code = server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
            code = server.wait()
        if code != 0:
            print(f"warning: dory serve exited with {code} after SIGTERM; see {server_log}", file=sys.stderr)


def report(outcomes: list[Outcome]) -> int:
    """Print the table and the expected failures; the exit status."""
    width = max(len("scenario"), *(len(o.scenario) for o in outcomes))
    print(f"{'scenario':<{width}}  passed  failed  warnings  verdict")
    for o in outcomes:
        if o.ok:
            verdict = "pass (stale expected failure)" if o.scenario in EXPECTED_FAILURES else "pass"
        else:
            verdict = "expected failure" if o.scenario in EXPECTED_FAILURES else "UNEXPECTED FAILURE"
        counts = f"{o.passed:>6}  {o.failed:>6}  {o.warnings:>8}" if o.ran else f"{'no result':>24}"
        print(f"{o.scenario:<{width}}  {counts}  {verdict}")
    expected = [o for o in outcomes if not o.ok and o.scenario in EXPECTED_FAILURES]
    unexpected = [o.scenario for o in outcomes if not o.ok and o.scenario not in EXPECTED_FAILURES]
    stale = [o.scenario for o in outcomes if o.ok and o.scenario in EXPECTED_FAILURES]
    passed = sum(o.ok for o in outcomes)
    print(f"\n{passed} passed, {len(expected)} expected failures, {len(unexpected)} unexpected failures")
    if expected:
        print("\nExpected failures:")
        for o in expected:
            print(f"  {o.scenario}: {EXPECTED_FAILURES[o.scenario]}")
    if stale:
        print(f"\nNow passing, remove from EXPECTED_FAILURES: {', '.join(stale)}")
    if unexpected:
        print(f"\nUnexpected failures: {', '.join(unexpected)}")
    return 1 if unexpected else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", help="scenario names (default: every server scenario)")
    args = parser.parse_args(argv)
    cache = Path(os.environ.get("DORY_BENCH_DIR") or "/tmp/dory-bench").expanduser().resolve() / "mcp-conformance"
    try:
        node, suite = install(cache)
        outcomes = conformance(cache, node, suite, args.scenarios)
    except SetupFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return report(outcomes)


if __name__ == "__main__":
    sys.exit(main())
