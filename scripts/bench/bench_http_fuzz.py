"""Schemathesis, long: every route of a real `dory serve` fuzzed through real HTTP for minutes.

    python scripts/bench/bench_http_fuzz.py [--examples 200] [--max-time SECONDS] [--json]

The server runs on a corpus of real notes (300 SciFact abstracts and the LoCoMo conversations'
session transcripts, copied under the bench folder anew each run), lexical, with an admin token and
no rate limit.
Schemathesis's own runner (`st run`) then sends generated requests to every operation of
/openapi.json: its examples, coverage (boundary values), fuzzing (valid and invalid inputs, up to
`--examples` per operation) and stateful phases (sequences that feed one answer into the next
request, e.g. create a proposal, then apply it). Every answer is checked: no server error, the
status, content type, headers and body as documented, and a route that answered 2xx refuses the
same request without a token or with a bad one (ignored_auth).

Left out, with their reasons: /v1/stream (it never ends by itself) and DELETE /v1/auth/tokens/{name}
(the stateful phase learns token names from GET /v1/auth/tokens and would revoke the run's own
token). Reads ask for generation 0: a generation from the future is answered 503 index_behind by
design (tests/surfaces/http/test_server.py checks it). Not run: the checks that measure how tight
the schema is rather than whether the server is right (positive_data_acceptance,
negative_data_rejection: Dory validates more than JSON Schema can say, e.g. a path must end in .md),
and allow_header_conformance (for a path served by two routes, e.g. GET and POST /v1/proposals,
Starlette's 405 names only the first route's methods).

The suite runs the same checks in-process with a bounded number of examples
(tests/surfaces/http/test_schema.py), and the refusals without a token and with a read-only token.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from _common import bench_dir, lexical_env, log, new_token, start_server, table, unpack

ST = str(Path(sys.executable).with_name("st"))  # schemathesis's command line, in the same venv
NOTES = 300
CHECKS = [
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
    "ignored_auth",
    "missing_required_header",
    "unsupported_method",
    "use_after_free",
    "ensure_resource_availability",
]
CONFIG = """
[parameters]
"query.min_generation" = 0
"header.dory-min-generation" = "0"
"""


def build_corpus(base: Path) -> Path:
    corpus = base / "corpus"
    shutil.rmtree(base, ignore_errors=True)
    scifact = unpack("scifact") / "corpus"
    for path in sorted(scifact.rglob("*.md"))[:NOTES]:
        copy(path, corpus / path.relative_to(scifact))
    locomo = unpack("locomo") / "corpus"
    for path in sorted((locomo / "logs").rglob("*.md")):
        copy(path, corpus / path.relative_to(locomo))
    return corpus


def copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, target)


def fuzz(url: str, token: str, run_dir: Path, args: argparse.Namespace) -> dict[str, Any]:
    """`st run` against the server; its JSON report."""
    config = run_dir / "schemathesis.toml"
    config.write_text(CONFIG, encoding="utf-8")
    report = run_dir / "report.json"
    command = [ST, "--config-file", str(config), "run", f"{url}/openapi.json"]
    command += ["--header", f"Authorization: Bearer {token}", "--checks", ",".join(CHECKS)]
    command += ["--exclude-path", "/v1/stream", "--exclude-path-regex", "^/v1/auth/tokens/"]
    command += ["--max-examples", str(args.examples), "--seed", str(args.seed), "--workers", "1"]
    command += ["--report", "json", "--report-json-path", str(report), "--generation-database", "none"]
    if args.max_time:
        command += ["--max-time", str(args.max_time)]
    with (run_dir / "st.log").open("w") as output:
        subprocess.run(command, cwd=run_dir, stdout=output, stderr=subprocess.STDOUT, check=False)
    result: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    return result


def summarize(report: dict[str, Any], log_file: Path) -> dict[str, Any]:
    operations, cases = report["operations"], report["test_cases"]
    return {
        "operations selected": operations["selected"],
        "operations tested": operations["tested"],
        "test cases generated": cases["generated"],
        "test cases with failures": cases["with_failures"],
        "unique failures": cases["unique_failures"],
        "errors": len(report["errors"]),
        "seconds": report["running_time"],
        "phases": {name: phase["status"] for name, phase in report["phases"].items()},
        "failures": [
            {"code": f["code"], "title": f["title"], "count": f["count"], "operations": f["operations"]}
            for f in report["failures"]
        ],
        "warnings": {name: items for name, items in report["warnings"].items() if items},
        "details": str(log_file),
    }


def print_summary(summary: dict[str, Any]) -> None:
    rows = [(key, value) for key, value in summary.items() if not isinstance(value, dict | list)]
    print(table(["measure", "value"], rows))
    print("phases:", summary["phases"])
    for failure in summary["failures"]:
        print(f"FAILURE {failure['code']} {failure['title']} x{failure['count']}: {', '.join(failure['operations'])}")
    for name, items in summary["warnings"].items():
        print(f"warning {name}: {', '.join(map(str, items))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=200, help="fuzzing examples per operation")
    parser.add_argument("--max-time", type=int, default=0, help="stop after this many seconds (0: no limit)")
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    base = bench_dir() / "http-fuzz"
    corpus = build_corpus(base)
    state = base / "state"
    env = lexical_env(state) | {"DORY_HTTP_RATE_PER_MINUTE": "0"}  # the limit is not what is fuzzed
    token = new_token(corpus, env, "fuzz-admin", "admin")
    log("http-fuzz: indexing the corpus and starting the server …")
    proc, url = start_server(corpus, env, base / "serve.log")
    try:
        log(f"http-fuzz: schemathesis against {url}, up to {args.examples} examples per operation …")
        report = fuzz(url, token, base, args)
    finally:
        proc.send_signal(signal.SIGTERM)
        stopped = proc.wait(600)
    summary = summarize(report, base / "st.log") | {"server exit code": stopped}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print_summary(summary)


if __name__ == "__main__":
    main()
