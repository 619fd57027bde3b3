"""Migration speed and memory on a large generated export, each figure next to a plain baseline.

    python scripts/bench/bench_migrate.py [--small] [--busy] [--json] [--keep]

Generated in a temporary folder under the bench folder ($DORY_BENCH_DIR, default /tmp/dory-bench), by
_migrate_data.py (seeded, so every run migrates the same bytes):

* 50,000 markdown notes in 50 folders, three to five wikilinks each to other notes, a third with
  frontmatter; the first 10,000 also as an export of their own (links kept inside it); a zip of each;
* 10,000 ChatGPT-shaped conversations in one `conversations.json` (a mapping tree per conversation,
  one in five with a regenerated answer). Migrated with the `chatgpt` reader when the registry has
  it; without it only the baseline runs, and the case says so.

Each measure runs in a fresh child process (so each peak RSS is that run's own) into a fresh corpus,
lexical only (`embedder.backend = "none"`):

* migrate: `dory migrate` through the service (plan pass, write pass with its manifest, indexing in
  batches, report): seconds, items/s, peak RSS (getrusage) and the peak of a VmRSS sampler per phase
  (reading = the plan pass, writing);
* baseline, the least any import does: the notes copied with shutil (a zip extracted with zipfile;
  the conversations parsed with json.load and written one markdown file each), then `dory reindex`
  of them. `ratio` is migrate seconds / baseline seconds.

Memory must stay bounded: the plan holds paths, keys and digests per item by design, never file
contents, so the RSS slope between the 10k and 50k exports (KiB per note) is printed as well.
`--busy` runs two busy-loop processes (`while True: pass`) for the whole run, as on a loaded machine.
`--small`: 1,000 / 5,000 notes and 1,000 conversations.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import MachineLoad, bench_dir, busy_machine_warning, current_rss_mb, log, peak_rss_mb, rate, table
from _migrate_data import visible_text, write_conversations, write_notes, zip_folder

LEXICAL = {"embedder.backend": "none"}
SAMPLE_EVERY_S = 0.02


# -- the child process: one measure --------------------------------------------------------------
class RssSampler:
    """The highest VmRSS seen in each phase of a run (a thread reading /proc every 20 ms)."""

    def __init__(self) -> None:
        self.phase = "start"
        self.peaks: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def _loop(self) -> None:
        while not self._stop.wait(SAMPLE_EVERY_S):
            self._sample()

    def _sample(self) -> None:
        rss = current_rss_mb()
        self.peaks[self.phase] = max(self.peaks.get(self.phase, 0.0), rss)


def child_migrate(job: dict[str, Any]) -> dict[str, Any]:
    from _common import make_service

    from dory.models import MigrateRequest

    service = make_service(job["corpus"], job["state"], **LEXICAL)
    start_rss = current_rss_mb()
    with RssSampler() as sampler:

        def progress(phase: str, done: int, total: int) -> None:
            sampler.phase = phase

        began = time.perf_counter()
        response = service.migrations.migrate(MigrateRequest(source=job["source"]), progress)
        seconds = time.perf_counter() - began
    service.close()
    return {
        "seconds": seconds,
        "format": response.format,
        "items": sum(response.items.values()),
        "created": response.created,
        "problems": len(response.problems),
        "problem_codes": sorted({p.code for p in response.problems}),
        "start_rss_mb": start_rss,
        "phase_peak_mb": sampler.peaks,
        "peak_rss_mb": peak_rss_mb(),
    }


def child_baseline(job: dict[str, Any]) -> dict[str, Any]:
    """Copy (or extract, or parse and write) the same export the simple way, then reindex it."""
    from _common import make_service

    from dory.models import ReindexRequest

    source, corpus = Path(job["source"]), Path(job["corpus"])
    target = corpus / "knowledge" / job["name"]
    start_rss = current_rss_mb()
    began = time.perf_counter()
    if source.is_dir():
        shutil.copytree(source, target)
    elif source.suffix == ".zip":
        with zipfile.ZipFile(source) as archive:
            archive.extractall(target)
    else:
        _write_conversations_plainly(source, target)
    copied = time.perf_counter() - began
    service = make_service(corpus, job["state"], **LEXICAL)
    began = time.perf_counter()
    indexed = service.reindex(ReindexRequest(vectors=False))
    reindexed = time.perf_counter() - began
    service.close()
    return {
        "copy_seconds": copied,
        "reindex_seconds": reindexed,
        "seconds": copied + reindexed,
        "files": indexed.new,
        "start_rss_mb": start_rss,
        "peak_rss_mb": peak_rss_mb(),
    }


def _write_conversations_plainly(source: Path, target: Path) -> None:
    """json.load the whole file (what the simplest importer does) and write each visible path."""
    with source.open("rb") as handle:
        items = json.load(handle)
    target.mkdir(parents=True)
    for item in items:
        lines = [f"# {item['title']}", ""]
        lines += [f"**{role}**: {text}\n" for role, text in visible_text(item)]
        (target / f"{item['id']}.md").write_text("\n".join(lines), encoding="utf-8")


def run_child(kind: str, job: dict[str, Any]) -> dict[str, Any]:
    """One measure in a fresh interpreter; its JSON answer."""
    here = Path(__file__).resolve()
    out = subprocess.run(
        [sys.executable, str(here), "--child", kind, json.dumps(job)], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        raise RuntimeError(f"{kind} child failed ({out.returncode}):\n{out.stderr[-4000:]}")
    answer: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return answer


# -- the parent: data, cases, report -------------------------------------------------------------
def chatgpt_reader_present() -> bool:
    from dory.migrate import formats

    return "chatgpt" in formats.names()


def _wants(wanted: tuple[str, ...], kind: str) -> bool:
    return any(kind.startswith(prefix) or prefix.startswith(kind) for prefix in wanted)


def generate(base: Path, small: bool, wanted: tuple[str, ...]) -> dict[str, Path]:
    few, many, chats = (1_000, 5_000, 1_000) if small else (10_000, 50_000, 10_000)
    sources: dict[str, Path] = {}
    for count in (few, many) if _wants(wanted, "notes") or _wants(wanted, "zip") else ():
        folder = base / "exports" / f"notes{count // 1000}k"
        log(f"writing {count:,} notes into {folder}…")
        write_notes(folder, count)
        sources[f"notes-{count // 1000}k"] = folder
        archive = base / "exports" / f"zip{count // 1000}k.zip"
        log(f"zipping them into {archive.name}…")
        zip_folder(folder, archive)
        sources[f"zip-{count // 1000}k"] = archive
    chat_file = base / "exports" / "chatgpt" / "conversations.json"
    if not _wants(wanted, "chatgpt"):
        return sources
    log(f"writing {chats:,} conversations into {chat_file}…")
    size = write_conversations(chat_file, chats)
    log(f"  {size / 1e6:.1f} MB")
    sources[f"chatgpt-{chats // 1000}k"] = chat_file
    return sources


def measure(base: Path, name: str, source: Path, has_chatgpt: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"case": name}
    label = source.stem if source.is_file() else source.name
    job = {"source": str(source), "name": label}
    if not name.startswith("chatgpt") or has_chatgpt:
        log(f"{name}: migrate…")
        corpus = base / "runs" / f"{name}-migrate"
        corpus.mkdir(parents=True)
        row["migrate"] = run_child("migrate", job | {"corpus": str(corpus), "state": str(corpus / ".dory")})
    else:
        row["note"] = "no chatgpt reader in this tree: baseline only"
    log(f"{name}: baseline…")
    corpus = base / "runs" / f"{name}-baseline"
    corpus.mkdir(parents=True)
    row["baseline"] = run_child("baseline", job | {"corpus": str(corpus), "state": str(corpus / ".dory")})
    shutil.rmtree(base / "runs", ignore_errors=True)  # keep the disk use to one case at a time
    return row


def slopes(rows: list[dict[str, Any]]) -> dict[str, float]:
    """KiB of peak RSS per extra note between the small and the large export of each kind."""
    found = {}
    for kind in ("notes", "zip"):
        measured = [(r["migrate"]["items"], r["migrate"]["peak_rss_mb"]) for r in rows if r["case"].startswith(kind)]
        if len(measured) == 2:
            (n1, m1), (n2, m2) = sorted(measured)
            found[kind] = (m2 - m1) * 1024 / (n2 - n1)
    return found


def report(result: dict[str, Any]) -> str:
    rows = []
    for r in result["cases"]:
        m, b = r.get("migrate"), r["baseline"]
        if m is None:
            rows.append((r["case"], None, None, None, None, None, b["seconds"], b["peak_rss_mb"], None))
            continue
        growth = max(m["phase_peak_mb"].values()) - m["start_rss_mb"]
        rows.append(
            (
                r["case"],
                m["items"],
                m["seconds"],
                rate(m["items"], m["seconds"]),
                m["peak_rss_mb"],
                growth,
                b["seconds"],
                b["peak_rss_mb"],
                m["seconds"] / b["seconds"],
            )
        )
    headers = ("case", "items", "migrate s", "items/s", "peak MB", "growth MB", "baseline s", "base MB", "ratio")
    lines = [table(headers, rows, 2), ""]
    for r in result["cases"]:
        if "migrate" in r:
            m = r["migrate"]
            phases = ", ".join(f"{k} {v:.0f} MB" for k, v in m["phase_peak_mb"].items())
            lines.append(
                f"{r['case']}: format {m['format']}, {m['created']:,} files, {m['problems']} problems "
                f"{m['problem_codes'] or ''}; peak VmRSS by phase: {phases}"
            )
        if "note" in r:
            lines.append(f"{r['case']}: {r['note']}")
        b = r["baseline"]
        lines.append(f"  baseline: copy {b['copy_seconds']:.2f} s + reindex {b['reindex_seconds']:.2f} s")
    for kind, kib in result["slopes"].items():
        lines.append(f"RSS slope ({kind}): {kib:.2f} KiB per note between the two exports")
    load = result["load"]
    lines.append(
        f"machine: {load['cores']} cores, other processes kept {load['others_cores'] or 0:.2f} busy on average; "
        f"busy loops: {result['busy']}"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", action="store_true", help="1,000 / 5,000 notes and 1,000 conversations")
    parser.add_argument("--busy", action="store_true", help="run two busy-loop processes meanwhile")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the generated exports")
    parser.add_argument("--only", default="", help="comma-separated case prefixes to run (notes, zip, chatgpt)")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, job = args.child
        answer = (child_migrate if kind == "migrate" else child_baseline)(json.loads(job))
        print(json.dumps(answer))
        return
    base = Path(tempfile.mkdtemp(prefix="migrate-", dir=bench_dir()))
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 if args.busy else 0)]
    try:
        wanted = tuple(part for part in args.only.split(",") if part) or ("",)
        sources = generate(base, args.small, wanted)
        has_chatgpt = chatgpt_reader_present()
        load = MachineLoad()
        cases = [
            measure(base, name, source, has_chatgpt) for name, source in sources.items() if name.startswith(wanted)
        ]
        result = {"cases": cases, "slopes": {}, "busy": args.busy, "load": load.report()}
        result["slopes"] = slopes([c for c in cases if "migrate" in c])
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(result, indent=2) if args.json else report(result))
    if not args.busy and (warning := busy_machine_warning(result["load"])):
        log(warning)
    log(f"parent peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB; pid {os.getpid()}")


if __name__ == "__main__":
    main()
