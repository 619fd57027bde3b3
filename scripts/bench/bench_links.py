"""The link graph on a real Obsidian vault (obsidian-hub from mdcorpus), next to a same-process baseline.

    python scripts/bench/bench_links.py [--entities 100] [--rounds 2] [--queries 20] [--json]

The vault is copied under the bench folder (`$DORY_BENCH_DIR`, default /tmp/dory-bench). Obsidian
vaults have no people/ or concepts/ folders, so nothing in them is an entity; to exercise mentions,
`--entities N` adds N concept pages to the copy, named after the N most linked-to note names of the
vault (`--entities 0` indexes the vault as it is). Figures:

* the graph: notes, explicit edges, mention edges, resolved and broken explicit links, orphans;
* indexing time with the link graph against a baseline index of the same tree in this process with
  `graph.index_links` and `graph.refresh_mentions` patched to no-ops (lexical pass, no vectors, a
  fresh state folder each round; rounds alternate and the best of each is kept);
* `lint` over the whole vault (cold: name tables built; warm: cached);
* neighbors (depth 1 and 2, both directions) and backlinks on the most linked-to notes, p50;
* incremental: a new entity page (its mentions found through FTS and written into existing notes),
  an edit of that page's body (names unchanged: no note re-scanned), a new plain note.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import MachineLoad, bench_dir, busy_machine_warning, log, make_service, percentiles, table, unpack

from dory.corpus.document import parse_document
from dory.memory import graph, links
from dory.memory.entities import normalise_name, slugify
from dory.models import LinkLintRequest, LinkRequest, ReindexRequest


def build_vault(entities: int) -> Path:
    """A private copy of the obsidian-hub vault plus `entities` concept pages (rebuilt every run)."""
    source = unpack("mdcorpus") / "corpus" / "obsidian-hub"
    target = bench_dir() / "links-vault"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, symlinks=True)
    names = popular_names(target, entities)
    (target / "concepts").mkdir(exist_ok=True)
    for name in names:
        (target / "concepts" / f"{slugify(name)}.md").write_text(f"---\ntitle: {name}\n---\n# {name}\n")
    return target


def popular_names(vault: Path, count: int) -> list[str]:
    """The `count` most linked-to wikilink targets (file-name part), as they are written."""
    counts: Counter[str] = Counter()
    for path in vault.rglob("*.md"):
        doc = parse_document(str(path.relative_to(vault)), path.read_bytes())
        counts.update(
            Path(link.target).name for link in links.extract_links(doc.lines, doc.body_start) if link.kind == "wikilink"
        )
    picked: dict[str, str] = {}
    for name, _ in counts.most_common():
        key = normalise_name(name)
        if len(picked) >= count:
            break
        if len(key) >= links.MIN_NAME_CHARS and key not in links.GENERIC_NAMES and slugify(name) not in picked:
            picked[slugify(name)] = name
    return sorted(picked.values())


def index_once(vault: Path, state: Path, with_links: bool) -> float:
    shutil.rmtree(state, ignore_errors=True)
    real = graph.index_links, graph.refresh_mentions
    if not with_links:
        graph.index_links = graph.refresh_mentions = lambda *args, **kwargs: None  # type: ignore[assignment]
    svc = make_service(vault, state, **{"embedder.backend": "none"})
    try:
        started = time.perf_counter()
        svc.reindex(ReindexRequest(vectors=False))
        return time.perf_counter() - started
    finally:
        graph.index_links, graph.refresh_mentions = real
        svc.close()


def graph_counts(svc: Any) -> dict[str, int]:
    conn = svc.store.conn
    table_ = graph.names(conn)
    resolved = broken = 0
    for row in conn.execute("SELECT file_id, kind, target, target_key FROM links WHERE kind != 'mention'"):
        if table_.resolve(table_.path_of[row[0]], row[1], row[2], row[3]) is None:
            broken += 1
        else:
            resolved += 1
    mentions = conn.execute("SELECT count(*) FROM links WHERE kind = 'mention'").fetchone()[0]
    return {"explicit_edges": resolved + broken, "resolved": resolved, "broken": broken, "mention_edges": mentions}


def hubs(svc: Any, count: int) -> list[str]:
    """The notes with the most resolved links in."""
    conn = svc.store.conn
    table_ = graph.names(conn)
    indegree: Counter[str] = Counter()
    for row in conn.execute("SELECT file_id, kind, target, target_key FROM links WHERE kind != 'mention'"):
        target = table_.resolve(table_.path_of[row[0]], row[1], row[2], row[3])
        if target is not None and target != table_.path_of[row[0]]:
            indegree[target] += 1
    return [path for path, _ in indegree.most_common(count)]


def time_call(fn: Any, repeat: int) -> tuple[list[float], Any]:
    seconds, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        seconds.append(time.perf_counter() - started)
    return seconds, result


def query_figures(svc: Any, hub_paths: list[str], repeat: int) -> dict[str, Any]:
    graph._NAMES.clear()
    cold, _ = time_call(lambda: graph.names(svc.store.conn), 1)
    shapes = {
        "neighbors depth 1 (both)": dict(direction="both", depth=1),
        "neighbors depth 2 (both)": dict(direction="both", depth=2),
        "backlinks (in, depth 1)": dict(direction="in", depth=1),
        "out links (depth 1)": dict(direction="out", depth=1),
    }
    out: dict[str, Any] = {"name_tables_cold_s": cold[0], "hubs": hub_paths}
    for label, shape in shapes.items():
        seconds: list[float] = []
        totals: list[int] = []
        for path in hub_paths:
            req = LinkRequest(path=path, max_edges=10_000, **shape)
            took, res = time_call(lambda req=req: svc.links(req), repeat)
            seconds += took
            totals.append(res.total)
        out[label] = {**percentiles(seconds), "edges_mean": sum(totals) / len(totals)}
    return out


def incremental(svc: Any, vault: Path) -> dict[str, float]:
    """Seconds for the lexical pass after: a new entity page, an edit of its body, a new plain note."""
    name = "Obsidian Publish"
    page = vault / "concepts" / f"{slugify(name)}.md"
    steps = {
        "new entity page (mentions refreshed)": lambda: page.write_text(f"---\ntitle: {name}\n---\n# {name}\n"),
        "entity page body edited (same names)": lambda: page.write_text(
            f"---\ntitle: {name}\n---\n# {name}\n\nMore words.\n"
        ),
        "new plain note": lambda: (vault / "bench-links-note.md").write_text("# Bench\n\nSee [[Dataview]].\n"),
    }
    out: dict[str, float] = {}
    for label, change in steps.items():
        change()
        started = time.perf_counter()
        svc.owner.apply_changes()
        out[label] = time.perf_counter() - started
    conn = svc.store.conn
    out["notes mentioning the new entity"] = conn.execute(
        "SELECT count(*) FROM links WHERE kind = 'mention' AND target = ?", (f"concepts/{page.name}",)
    ).fetchone()[0]
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    log(f"copying the vault (+{args.entities} concept pages) …")
    vault = build_vault(args.entities)
    load = MachineLoad()
    base_s: list[float] = []
    links_s: list[float] = []
    for round_ in range(args.rounds):
        log(f"round {round_ + 1}: baseline index, then with links …")
        base_s.append(index_once(vault, bench_dir() / "links-state-baseline", with_links=False))
        links_s.append(index_once(vault, bench_dir() / "links-state", with_links=True))
    svc = make_service(vault, bench_dir() / "links-state", **{"embedder.backend": "none"})
    try:
        counts = graph_counts(svc)
        graph._NAMES.clear()
        lint_cold, res = time_call(lambda: svc.link_lint(LinkLintRequest()), 1)
        lint_warm, _ = time_call(lambda: svc.link_lint(LinkLintRequest()), 3)
        queries = query_figures(svc, hubs(svc, args.hubs), args.queries)
        files = svc.store.counts()["files"]
        steps = incremental(svc, vault)
    finally:
        svc.close()
    return {
        "files": files,
        "entities": args.entities,
        **counts,
        "orphans": res.orphans_total,
        "index_baseline_s": min(base_s),
        "index_links_s": min(links_s),
        "rounds": args.rounds,
        "lint_cold_s": lint_cold[0],
        "lint_warm_s": min(lint_warm),
        "queries": queries,
        "incremental_s": steps,
        "machine": load.report(),
    }


def report(result: dict[str, Any]) -> str:
    ratio = result["index_links_s"] / result["index_baseline_s"]
    lines = [
        f"link graph on obsidian-hub: {result['files']:,} notes ({result['entities']} added concept pages)",
        table(
            ["graph", "count"],
            [
                ["explicit edges", result["explicit_edges"]],
                ["  resolved", result["resolved"]],
                ["  broken", result["broken"]],
                ["mention edges", result["mention_edges"]],
                ["orphans", result["orphans"]],
            ],
        ),
        "",
        table(
            ["seconds", "value"],
            [
                ["index, baseline (no link graph)", result["index_baseline_s"]],
                ["index, with the link graph", result["index_links_s"]],
                ["lint (cold: name tables built)", result["lint_cold_s"]],
                ["lint (warm)", result["lint_warm_s"]],
                ["name tables, cold build", result["queries"]["name_tables_cold_s"]],
            ],
            digits=3,
        ),
        f"indexing with links / baseline = {ratio:.2f} (best of {result['rounds']} rounds each)",
        "",
    ]
    rows = [
        [label, stats["p50"] * 1000, stats["p95"] * 1000, stats["edges_mean"]]
        for label, stats in result["queries"].items()
        if isinstance(stats, dict)
    ]
    lines.append(
        table([f"query on {len(result['queries']['hubs'])} hub notes", "p50 ms", "p95 ms", "edges"], rows, digits=2)
    )
    lines.append("")
    lines.append(table(["incremental lexical pass", "value"], list(result["incremental_s"].items()), digits=3))
    warning = busy_machine_warning(result["machine"])
    if warning:
        lines.append(warning)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entities", type=int, default=100, help="concept pages to add (0: the vault as is)")
    parser.add_argument("--rounds", type=int, default=2, help="baseline/links index rounds (best kept)")
    parser.add_argument("--hubs", type=int, default=5, help="most linked-to notes to query")
    parser.add_argument("--queries", type=int, default=20, help="repeats of each query per hub note")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args)
    print(json.dumps(result, indent=2) if args.json else report(result))


if __name__ == "__main__":
    main()
