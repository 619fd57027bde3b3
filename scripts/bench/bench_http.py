"""HTTP under load: concurrent clients against a real `dory serve`, mixed reads and writes, while an
editor saves notes on disk and the watcher indexes them.

    python scripts/bench/bench_http.py [--clients 50] [--seconds 120] [--notes 3000] [--json]

The corpus is `--notes` real notes (SciFact abstracts, one .md each), copied under the bench folder
and indexed anew each run; the queries are SciFact's real queries. A real `dory serve --port 0` runs
on it (lexical: bm25 searches). Each client has its own token (as each agent would) and a keep-alive
connection (httpx.AsyncClient, all clients on one asyncio loop), and loops until the time is up:

* 80% search (`POST /v1/search`, a random query, bm25, k=10);
* 10% get (`GET /v1/notes/PATH` of a random note);
* 5% append (`POST /v1/write`, kind append) of a token unique to the write, to one of a few shared
  notes;
* 5% replace: `GET` a shared note, then `POST /v1/write` kind replace with `If-Match` (its ETag) and
  the content read plus a unique token. Clients race for the same notes, so some replaces answer
  409 hash_conflict: that is the point (no lost update).

Meanwhile an editor thread rewrites its own notes on disk (in place, temp + rename, vim-style) with
text of other notes, so the watcher and the single writer stay busy beside the HTTP writes.

Afterwards, with the server stopped, every shared note is read: each acknowledged write's token must
be there exactly once ("acknowledged" = "on disk exactly once"), and no refused write's token at all.

Baselines, same run, same index, same queries, each against an in-process `DoryService` reading the
index the server owns:
* at rest: one HTTP client and the in-process service, alternating query by query: the cost of the
  HTTP hop (SPEC §11: search p50 within 2x of the in-process service);
* at the same concurrency: as many threads as clients calling `service.search` at once, against
  the HTTP search p50 under load (queueing on two cores dominates both).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import shutil
import signal
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from _common import (
    EDITOR_PATTERNS,
    MachineLoad,
    bench_dir,
    busy_machine_warning,
    lexical_env,
    log,
    make_service,
    new_token,
    percentiles,
    save_like_an_editor,
    start_server,
    table,
    unpack,
)

from dory.models import SearchRequest
from dory.service import DoryService

SHARED_NOTES = 10  # appended to and replaced by every client
EDITOR_NOTES = 20
REST_QUERIES = 200  # per side, for the at-rest baseline
CONCURRENT_QUERIES = 3000  # at most, for the in-process baseline at the clients' concurrency
TOKEN = re.compile(r"\b[ar]\d+x\d+z\b")


@dataclass
class Tally:
    """What the clients saw: latencies by route, answers by route and status, write tokens."""

    latency: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    answers: Counter[tuple[str, int]] = field(default_factory=Counter)  # status 0: no answer (transport)
    acknowledged: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)


@dataclass
class Bench:
    corpus: Path
    url: str
    notes: list[str]
    queries: list[str]
    tally: Tally = field(default_factory=Tally)
    editor_saves: int = 0


# -- the corpus and the server ---------------------------------------------------------------------


def build_corpus(notes: int) -> tuple[Path, list[str]]:
    """A private copy of `notes` SciFact abstracts (kept between runs; bench notes are reset), and the
    queries."""
    source = unpack("scifact")
    target = bench_dir() / f"http-{notes}"
    marker = target / ".complete"
    if not marker.exists():
        shutil.rmtree(target, ignore_errors=True)
        for path in sorted((source / "corpus").rglob("*.md"))[:notes]:
            dest = target / path.relative_to(source / "corpus")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest)
        marker.write_text("")
    shutil.rmtree(target / "bench-http", ignore_errors=True)
    for n in range(SHARED_NOTES):
        save_like_an_editor(target / shared_note(n), f"# Shared {n}\n\nwritten by the clients\n", "in-place")
    lines = (source / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    return target, [json.loads(line)["query"] for line in lines if line.strip()]


def shared_note(n: int) -> str:
    return f"bench-http/shared-{n}.md"


def client_tokens(url: str, admin: str, count: int) -> list[str]:
    """One write token per client, made over HTTP by the admin token (as an operator's script would)."""
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {admin}"}, timeout=60) as http:
        made = [http.post("/v1/auth/tokens", json={"name": f"client-{n}", "scopes": ["write"]}) for n in range(count)]
    return [answer.raise_for_status().json()["token"] for answer in made]


# -- the load --------------------------------------------------------------------------------------


async def timed(tally: Tally, route: str, request: Awaitable[httpx.Response]) -> httpx.Response | None:
    started = time.perf_counter()
    try:
        answer = await request
    except httpx.TransportError:
        tally.answers[(route, 0)] += 1
        return None
    tally.latency[route].append(time.perf_counter() - started)
    tally.answers[(route, answer.status_code)] += 1
    return answer


def settle(tally: Tally, token: str, answer: httpx.Response | None) -> None:
    """Where a write's token belongs: acknowledged (200), refused (an error answer), or unanswered."""
    if answer is None or answer.status_code >= 500:
        tally.unanswered.append(token)  # it may or may not have landed
    elif answer.status_code == 200:
        tally.acknowledged.append(token)
    else:
        tally.refused.append(token)


async def append(http: httpx.AsyncClient, tally: Tally, rng: random.Random, token: str) -> None:
    body = {"path": shared_note(rng.randrange(SHARED_NOTES)), "kind": "append", "content": f"- {token}"}
    settle(tally, token, await timed(tally, "append", http.post("/v1/write", json=body)))


async def replace(http: httpx.AsyncClient, tally: Tally, rng: random.Random, token: str) -> None:
    """Read-modify-write with If-Match: the content read plus one line with the token."""
    path = shared_note(rng.randrange(SHARED_NOTES))
    read = await timed(tally, "replace: get", http.get(f"/v1/notes/{path}"))
    if read is None or read.status_code != 200:
        return
    content = read.json()["content"].rstrip("\n") + f"\n- {token}\n"
    body = {"path": path, "kind": "replace", "content": content}
    headers = {"If-Match": read.headers["ETag"]}
    settle(tally, token, await timed(tally, "replace", http.post("/v1/write", json=body, headers=headers)))


async def client(bench: Bench, me: int, secret: str, deadline: float) -> None:
    rng = random.Random(me)
    tally = bench.tally
    headers = {"Authorization": f"Bearer {secret}"}
    async with httpx.AsyncClient(base_url=bench.url, headers=headers, timeout=120) as http:
        n = 0
        while time.monotonic() < deadline:
            roll = rng.random()
            if roll < 0.8:
                search = {"query": rng.choice(bench.queries), "mode": "bm25", "k": 10}
                await timed(tally, "search", http.post("/v1/search", json=search))
            elif roll < 0.9:
                await timed(tally, "get", http.get(f"/v1/notes/{rng.choice(bench.notes)}"))
            elif roll < 0.95:
                await append(http, tally, rng, f"a{me}x{n}z")
            else:
                await replace(http, tally, rng, f"r{me}x{n}z")
            n += 1


def editor(bench: Bench, stop: threading.Event) -> None:
    """Rewrite the editor's own notes with the text of other notes, as fast as a busy person would."""
    rng = random.Random(7)
    while not stop.is_set():
        source = bench.corpus / rng.choice(bench.notes)
        text = source.read_text(encoding="utf-8") + f"\n\nedited {bench.editor_saves}\n"
        target = bench.corpus / f"bench-http/edits/e-{rng.randrange(EDITOR_NOTES)}.md"
        save_like_an_editor(target, text, rng.choice(EDITOR_PATTERNS))
        bench.editor_saves += 1
        stop.wait(rng.uniform(0.05, 0.3))


async def load(bench: Bench, secrets: list[str], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    await asyncio.gather(*(client(bench, me, secret, deadline) for me, secret in enumerate(secrets)))


# -- baselines -------------------------------------------------------------------------------------


def at_rest(bench: Bench, service: DoryService, secret: str) -> dict[str, list[float]]:
    """One HTTP client and the in-process service, alternating over the same queries."""
    rng = random.Random(11)
    seconds: dict[str, list[float]] = {"http": [], "in-process": []}
    with httpx.Client(base_url=bench.url, headers={"Authorization": f"Bearer {secret}"}, timeout=60) as http:
        for query in rng.sample(bench.queries, min(REST_QUERIES, len(bench.queries))):
            started = time.perf_counter()
            http.post("/v1/search", json={"query": query, "mode": "bm25", "k": 10}).raise_for_status()
            seconds["http"].append(time.perf_counter() - started)
            started = time.perf_counter()
            service.search(SearchRequest(query=query, mode="bm25", k=10))
            seconds["in-process"].append(time.perf_counter() - started)
    return seconds


def in_process_concurrent(bench: Bench, service: DoryService, callers: int, count: int) -> list[float]:
    """`callers` threads searching at once, `count` searches in all."""
    rng = random.Random(13)
    queries = [rng.choice(bench.queries) for _ in range(count)]

    def one(query: str) -> float:
        started = time.perf_counter()
        service.search(SearchRequest(query=query, mode="bm25", k=10))
        return time.perf_counter() - started

    with ThreadPoolExecutor(callers) as pool:
        return list(pool.map(one, queries))


# -- the checks ------------------------------------------------------------------------------------


def tokens_on_disk(corpus: Path) -> Counter[str]:
    found: Counter[str] = Counter()
    for n in range(SHARED_NOTES):
        found.update(TOKEN.findall((corpus / shared_note(n)).read_text(encoding="utf-8")))
    return found


def summarize(bench: Bench, seconds: float, machine: dict[str, Any], rest: dict[str, list[float]]) -> dict[str, Any]:
    tally = bench.tally
    on_disk = tokens_on_disk(bench.corpus)
    routes = {}
    for route, values in sorted(tally.latency.items()):
        stats = percentiles([v * 1000 for v in values])
        statuses = {str(status): n for (r, status), n in sorted(tally.answers.items()) if r == route}
        routes[route] = {"requests": len(values), "per_s": len(values) / seconds, **stats, "statuses": statuses}
    requests = sum(tally.answers.values())
    rest_ms = {side: percentiles([v * 1000 for v in values]) for side, values in rest.items()}
    return {
        "seconds": seconds,
        "requests": requests,
        "requests_per_s": requests / seconds,
        "routes": routes,
        "5xx": sum(n for (_, status), n in tally.answers.items() if status >= 500),
        "no answer (transport errors)": sum(n for (_, status), n in tally.answers.items() if status == 0),
        "writes attempted": len(tally.acknowledged) + len(tally.refused) + len(tally.unanswered),
        "writes acknowledged": len(tally.acknowledged),
        "acknowledged, on disk exactly once": sum(1 for t in tally.acknowledged if on_disk[t] == 1),
        "refused (409 conflict etc.), on disk": sum(1 for t in tally.refused if on_disk[t]),
        "unanswered, on disk": sum(1 for t in tally.unanswered if on_disk[t]),
        "editor saves": bench.editor_saves,
        "search p50 at rest, ms": {side: stats["p50"] for side, stats in rest_ms.items()},
        "http overhead at rest (p50 ratio)": rest_ms["http"]["p50"] / rest_ms["in-process"]["p50"],
        "machine": machine,
    }


def report(result: dict[str, Any], concurrent: dict[str, float], clients: int) -> str:
    rows = [
        (route, r["requests"], r["per_s"], r["p50"], r["p95"], r["p99"], json.dumps(r["statuses"]))
        for route, r in result["routes"].items()
    ]
    lines = [
        f"{result['requests']:,} requests in {result['seconds']:.0f} s: {result['requests_per_s']:.1f} requests/s",
        table(["route", "requests", "per s", "p50 ms", "p95 ms", "p99 ms", "statuses"], rows),
        "",
    ]
    checks = [
        (key, value)
        for key, value in result.items()
        if key.startswith(("5xx", "no answer", "writes", "acknowledged", "refused", "unanswered", "editor"))
    ]
    search_p50 = result["routes"]["search"]["p50"]
    rest = result["search p50 at rest, ms"]
    checks += [
        ("search p50 at rest: http ms", rest["http"]),
        ("search p50 at rest: in-process ms", rest["in-process"]),
        ("http overhead at rest (p50 ratio, target <= 2)", result["http overhead at rest (p50 ratio)"]),
        (f"search p50 under load: http ({clients} clients) ms", search_p50),
        (f"search p50: in-process ({clients} threads) ms", concurrent["p50"]),
        ("http / in-process at the same concurrency (p50 ratio)", search_p50 / concurrent["p50"]),
        ("other processes' cores busy", result["machine"]["others_cores"]),
    ]
    lines.append(table(["check", "value"], checks, digits=2))
    return "\n".join(lines)


# -- main ----------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--notes", type=int, default=3000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    corpus, queries = build_corpus(args.notes)
    state = bench_dir() / "http-state"
    shutil.rmtree(state, ignore_errors=True)
    state.mkdir(parents=True)
    env = lexical_env(state)
    admin = new_token(corpus, env, "bench-admin", "admin")
    log(f"http: indexing {args.notes} notes and starting the server …")
    proc, url = start_server(corpus, env, state.parent / f"{state.name}.log")
    notes = sorted(str(p.relative_to(corpus)) for p in (corpus / "docs").rglob("*.md"))
    bench = Bench(corpus, url, notes, queries)
    service = make_service(corpus, state, **{"embedder.backend": "none"})
    stop = threading.Event()
    try:
        secrets = client_tokens(url, admin, args.clients)
        rest = at_rest(bench, service, secrets[0])
        log(f"http: {args.clients} clients for {args.seconds:.0f} s against {url}")
        busy = threading.Thread(target=editor, args=(bench, stop), daemon=True)
        machine = MachineLoad()
        busy.start()
        started = time.perf_counter()
        asyncio.run(load(bench, secrets, args.seconds))
        seconds = time.perf_counter() - started
        stop.set()
        busy.join()
        load_report = machine.report()
        log("http: the same searches in process, at the same concurrency …")
        searches = min(len(bench.tally.latency["search"]), CONCURRENT_QUERIES)
        concurrent = percentiles([v * 1000 for v in in_process_concurrent(bench, service, args.clients, searches)])
    finally:
        stop.set()
        service.close()
        proc.send_signal(signal.SIGTERM)
        stopped = proc.wait(600)
    result = summarize(bench, seconds, load_report, rest) | {
        "search p50 in process at the same concurrency, ms": concurrent["p50"],
        "server exit code": stopped,
    }
    print(json.dumps(result, indent=2) if args.json else report(result, concurrent, args.clients))
    if warning := busy_machine_warning(load_report):
        log(warning)


if __name__ == "__main__":
    main()
