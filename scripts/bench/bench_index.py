"""Indexing speed on the real markdown set (mdcorpus, 51,117 files), each figure next to a same-process baseline.

    python scripts/bench/bench_index.py [--tree NAME] [--limit N] [--encoder-chunks N] [--json] [--profile]

`--tree obsidian-hub` (or tldr, powershell-docs, office-docs-powershell) benchmarks one tree of the set
alone, e.g. the Obsidian vault (6,571 notes) to compare with other tools' figures on it.

Stages (SPEC §11 targets in brackets):

* lexical pass: `reindex(vectors=False)` into a fresh state folder [≥ 500 files/s]; also its CPU
  seconds (this process, all threads) and files per CPU-second, which a busy machine skews less;
  baseline: read and sha256 every note, no parsing (the floor any indexer pays).
* unchanged re-scan: reindex again, nothing changed [≥ 5,000 files/s];
  baseline: `os.walk` + `os.stat` of every note.
* incremental: append a line to 100 notes, reindex; the notes are restored afterwards.
* peak RSS after the lexical pass.
* encoder: bare `MiniLMEmbedder.embed_documents` on real chunk texts vs the vector pass
  (`vector_pass.embed_pending`) embedding the very same chunks from a small corpus of the files they
  come from [pipeline ≥ 90% of bare].

The corpus is a private copy under the bench folder (`$DORY_BENCH_DIR`, default /tmp/dory-bench), so the
shared unpack stays pristine; the copy is made again whenever a run was interrupted while it was edited.
Both the baseline and Dory read notes from a warm page cache.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import json
import os
import pstats
import random
import shutil
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    MachineLoad,
    bench_dir,
    busy_machine_warning,
    fmt,
    log,
    make_service,
    peak_rss_mb,
    rate,
    table,
    timed,
    unpack,
)

from dory.corpus.paths import IgnoreRules, is_note
from dory.index import vector_pass
from dory.index.embedders import MiniLMEmbedder
from dory.index.store import embed_text, title_context
from dory.index.vectors import VectorStore
from dory.models import ReindexRequest

TARGETS = {"lexical_files_s": 500, "rescan_files_s": 5000, "pipeline_ratio": 0.90}
INCREMENTAL_FILES = 100
EDIT_LINE = "\nbench: incremental reindex edit\n"


# -- the corpus copy -------------------------------------------------------------------------------
def note_paths(root: Path) -> list[str]:
    """Every note under `root` as Dory's scan would list it (same ignore rules), sorted."""
    rules = IgnoreRules()
    found = []
    for folder, dirs, files in os.walk(root):
        rel_dir = os.path.relpath(folder, root)
        prefix = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
        dirs[:] = [d for d in dirs if not rules.skips_dir(d, prefix + d)]
        found += [prefix + f for f in files if is_note(f) and not rules.skips_file(f, prefix + f)]
    return sorted(found)


def working_copy(source: Path, limit: int | None, tree: str | None = None) -> Path:
    """A writable copy of `source` (or of its first `limit` notes), reused unless a run left it edited."""
    name = ("all" if limit is None else f"first-{limit}") + (f"-{tree}" if tree else "")
    work = bench_dir() / "index-work" / name
    corpus = work / "corpus"
    complete, dirty = work / "copy-complete", work / "edits-in-progress"
    if complete.exists() and not dirty.exists():
        return corpus
    log(f"copying the corpus into {corpus} …")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    if limit is None:
        shutil.copytree(source, corpus)
    else:
        for rel in note_paths(source)[:limit]:
            (corpus / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / rel, corpus / rel)
    complete.touch()
    return corpus


# -- baselines -------------------------------------------------------------------------------------
def baseline_read_hash(corpus: Path) -> dict[str, Any]:
    """Read every note and sha256 it: no decoding, no parsing, no database.

    One unmeasured read first puts every note in the page cache, where Dory's pass finds them too.
    """
    for rel in note_paths(corpus):
        (corpus / rel).read_bytes()
    with timed() as sw:
        paths = note_paths(corpus)
        total = 0
        for rel in paths:
            data = (corpus / rel).read_bytes()
            hashlib.sha256(data).hexdigest()
            total += len(data)
    return {"files": len(paths), "bytes": total, "seconds": sw.seconds, "files_s": rate(len(paths), sw.seconds)}


def baseline_walk_stat(corpus: Path) -> dict[str, Any]:
    """os.walk + os.stat of every note."""
    with timed() as sw:
        paths = note_paths(corpus)
        for rel in paths:
            os.stat(corpus / rel)
    return {"files": len(paths), "seconds": sw.seconds, "files_s": rate(len(paths), sw.seconds)}


# -- Dory ------------------------------------------------------------------------------------------
def lexical_pass(corpus: Path, state: Path, profile: bool) -> tuple[Any, dict[str, Any]]:
    shutil.rmtree(state, ignore_errors=True)
    svc = make_service(corpus, state)
    profiler = cProfile.Profile() if profile else None
    cpu_before = time.process_time()
    with timed() as sw:
        if profiler:
            profiler.enable()
        res = svc.reindex(ReindexRequest(vectors=False))
        if profiler:
            profiler.disable()
    cpu_seconds = time.process_time() - cpu_before
    if profiler:
        print_profile(profiler, "lexical pass")
    reasons = Counter(s.reason for s in res.skipped)
    handled = res.new + len(res.skipped)
    counts = svc.store.counts()
    return svc, {
        "files_indexed": res.new,
        "skipped": len(res.skipped),
        "skipped_by_reason": dict(reasons.most_common()),
        "broken_frontmatter": counts["broken_frontmatter"],
        "chunks": counts["chunks"],
        "seconds": sw.seconds,
        "files_s": rate(handled, sw.seconds),
        "cpu_seconds": cpu_seconds,
        "files_per_cpu_s": rate(handled, cpu_seconds),
        "profiled": profile,
    }


def rescan(svc: Any) -> dict[str, Any]:
    with timed() as sw:
        res = svc.reindex(ReindexRequest(vectors=False))
    changed = res.new + res.changed + res.renamed + res.deleted + res.touched
    return {
        "files": res.unchanged,
        "changed": changed,
        "seconds": sw.seconds,
        "files_s": rate(res.unchanged, sw.seconds),
    }


def incremental(svc: Any, corpus: Path, count: int) -> dict[str, Any]:
    """Append a line to `count` notes, reindex, then put the notes back byte for byte (mtime included)."""
    indexed = sorted(svc.store.indexed_files())
    chosen = random.Random(42).sample(indexed, min(count, len(indexed)))
    dirty = corpus.parent / "edits-in-progress"
    dirty.touch()
    originals: dict[str, tuple[bytes, int, int]] = {}
    try:
        for rel in chosen:
            path = corpus / rel
            st = path.stat()
            originals[rel] = (path.read_bytes(), st.st_atime_ns, st.st_mtime_ns)
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(EDIT_LINE)
        with timed() as sw:
            res = svc.reindex(ReindexRequest(vectors=False))
    finally:
        for rel, (data, atime_ns, mtime_ns) in originals.items():
            (corpus / rel).write_bytes(data)
            os.utime(corpus / rel, ns=(atime_ns, mtime_ns))
        dirty.unlink()
    restored = svc.reindex(ReindexRequest(vectors=False))  # the index matches the pristine notes again
    return {
        "files": len(chosen),
        "changed": res.changed,
        "chunks_written": res.chunks_written,
        "seconds": sw.seconds,
        "files_s": rate(len(chosen), sw.seconds),
        "restored": restored.changed,
    }


# -- encoder ---------------------------------------------------------------------------------------
def pick_encoder_files(svc: Any, want_chunks: int) -> tuple[list[str], list[tuple[str, str]]]:
    """Random real notes until their chunks reach `want_chunks`; returns the paths and (hash, embed text)."""
    rows = svc.store.conn.execute(
        "SELECT f.path, count(c.id) FROM files f JOIN chunks c ON c.file_id = f.id GROUP BY f.id ORDER BY f.path"
    ).fetchall()
    rng = random.Random(7)
    rng.shuffle(rows)
    paths, total = [], 0
    for path, n in rows:
        if total >= want_chunks:
            break
        paths.append(path)
        total += n
    texts = []
    for path in paths:
        for row in svc.store.conn.execute(
            "SELECT c.content_hash, c.text, c.heading_path, f.title, f.frontmatter FROM chunks c "
            "JOIN files f ON f.id = c.file_id WHERE f.path = ? ORDER BY c.ordinal",
            (path,),
        ):
            context = title_context(row["title"], json.loads(row["frontmatter"]), path)
            texts.append((row["content_hash"], embed_text(context, json.loads(row["heading_path"]), row["text"])))
    return paths, texts


def encoder(svc: Any, corpus: Path, want_chunks: int, rounds: int) -> dict[str, Any]:
    """Bare encoder vs the vector pass on the same chunk texts with the same embedder instance.

    The two alternate (bare, pipeline, then pipeline, bare, …) so that load from other processes and
    CPU clock drift hit both sides alike; the ratio reported is the median of the per-round ratios,
    because one call stalled by a busy machine can take ten times longer than the next.
    """
    paths, sample = pick_encoder_files(svc, want_chunks)
    texts = [text for _, text in sample]
    log(f"encoder: {len(texts)} chunks from {len(paths)} notes, {rounds} rounds")
    work = bench_dir() / "index-work" / "encoder"
    shutil.rmtree(work, ignore_errors=True)
    for rel in paths:
        (work / "corpus" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(corpus / rel, work / "corpus" / rel)
    small = make_service(work / "corpus", work / "state")
    small.reindex(ReindexRequest(vectors=False))
    hashes = sorted(r[0] for r in small.store.conn.execute("SELECT content_hash FROM chunks"))
    same_texts = hashes == sorted(h for h, _ in sample)

    embedder = MiniLMEmbedder()
    embedder.embed_documents(texts[:16])  # loads the weights and warms BLAS
    tokens = sum(min(embedder.count_tokens(t) + 2, 256) for t in texts)  # with [CLS]/[SEP], truncated
    fingerprint = small.fingerprint()

    def bare() -> float:
        with timed() as sw:
            embedder.embed_documents(texts)
        return sw.seconds

    def pipeline() -> tuple[float, int, int]:
        with small.store.conn:
            small.store.conn.execute("DELETE FROM embeddings")
            small.store.conn.execute("UPDATE chunks SET has_vector = 0")
        vector_pass.reset_for_fingerprint(small.store, fingerprint)
        store = VectorStore(embedder.dims)
        with timed() as sw:
            embedded, reused = vector_pass.embed_pending(
                small.store, store, embedder, fingerprint, small.settings.faiss_path, lambda *_: None
            )
        return sw.seconds, embedded, reused

    bare_times: list[float] = []
    pipe_times: list[float] = []
    embedded = reused = 0
    for r in range(rounds):
        for side in ("bare", "pipeline") if r % 2 == 0 else ("pipeline", "bare"):
            if side == "bare":
                bare_times.append(bare())
            else:
                seconds, embedded, reused = pipeline()
                pipe_times.append(seconds)
            log(
                f"  round {r + 1} {side}: {len(texts) / (bare_times if side == 'bare' else pipe_times)[-1]:.1f} "
                "chunks/s"
            )
    small.close()
    ratios = [b / p for b, p in zip(bare_times, pipe_times, strict=True)]
    bare_rate = rate(len(texts) * rounds, sum(bare_times))
    pipe_rate = rate(embedded * rounds, sum(pipe_times))
    return {
        "runtime": embedder.runtime,
        "notes": len(paths),
        "chunks": len(texts),
        "tokens": tokens,
        "rounds": rounds,
        "same_texts": same_texts,
        "bare_seconds": bare_times,
        "bare_chunks_s": bare_rate,
        "bare_tokens_s": rate(tokens * rounds, sum(bare_times)),
        "pipeline_seconds": pipe_times,
        "pipeline_embedded": embedded,
        "pipeline_reused": reused,
        "pipeline_chunks_s": pipe_rate,
        "pipeline_tokens_s": rate(tokens * rounds, sum(pipe_times)),
        "ratio": statistics.median(ratios),
        "ratio_of_totals": pipe_rate / bare_rate if bare_rate else None,
        "round_ratios": ratios,
    }


def print_profile(profiler: cProfile.Profile, what: str) -> None:
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats(30)
    stats.sort_stats("tottime").print_stats(20)
    log(f"--- cProfile of the {what} (times inflated by profiling) ---\n{out.getvalue()}")


# -- main ------------------------------------------------------------------------------------------
def run(args: argparse.Namespace) -> dict[str, Any]:
    source = unpack("mdcorpus") / "corpus"
    if args.tree:
        source = source / args.tree
        if not source.is_dir():
            raise SystemExit(f"no tree {args.tree!r} in mdcorpus: {sorted(p.name for p in source.parent.iterdir())}")
    corpus = working_copy(source, args.limit, args.tree)
    state = corpus.parent / "state"
    load = MachineLoad()
    result: dict[str, Any] = {"corpus": str(corpus), "limit": args.limit, "tree": args.tree, "targets": TARGETS}

    log("baseline: read + sha256 every note …")
    result["baseline_read_hash"] = baseline_read_hash(corpus)
    log("lexical pass …")
    svc, result["lexical"] = lexical_pass(corpus, state, args.profile)
    result["peak_rss_mb_after_lexical"] = peak_rss_mb()
    log("baseline: walk + stat …")
    result["baseline_walk_stat"] = baseline_walk_stat(corpus)
    log("unchanged re-scan …")
    result["rescan"] = rescan(svc)
    log(f"incremental ({INCREMENTAL_FILES} notes) …")
    result["incremental"] = incremental(svc, corpus, INCREMENTAL_FILES)
    if args.encoder_chunks > 0:
        log("encoder throughput …")
        result["encoder"] = encoder(svc, corpus, args.encoder_chunks, args.encoder_rounds)
    svc.close()
    result["peak_rss_mb_end"] = peak_rss_mb()
    result["machine"] = load.report()
    return result


def render(r: dict[str, Any]) -> str:
    lex, base, scan, sbase, inc = (
        r["lexical"],
        r["baseline_read_hash"],
        r["rescan"],
        r["baseline_walk_stat"],
        r["incremental"],
    )
    rows = [
        ["lexical pass (Dory)", lex["files_s"], lex["seconds"], f"≥ {TARGETS['lexical_files_s']} files/s"],
        ["  per CPU-second (Dory)", lex["files_per_cpu_s"], lex["cpu_seconds"], "CPU-s"],
        ["  baseline: read + sha256", base["files_s"], base["seconds"], ""],
        ["  Dory / baseline", f"{lex['files_s'] / base['files_s']:.1%}", None, ""],
        ["unchanged re-scan (Dory)", scan["files_s"], scan["seconds"], f"≥ {TARGETS['rescan_files_s']:,} files/s"],
        ["  baseline: walk + stat", sbase["files_s"], sbase["seconds"], ""],
        ["  Dory / baseline", f"{scan['files_s'] / sbase['files_s']:.1%}", None, ""],
        [f"incremental, {inc['files']} edited notes", inc["files_s"], inc["seconds"], ""],
    ]
    out = [
        f"Dory indexing benchmark: {r['corpus']}" + (f" (first {r['limit']} notes)" if r["limit"] else ""),
        f"other processes kept {_cores(r['machine'])} cores busy on average during the run",
    ]
    warning = busy_machine_warning(r["machine"])
    out += [warning] if warning else []
    out += ["", table(["stage", "files/s", "seconds", "SPEC §11 target"], rows), ""]
    reasons = ", ".join(f"{k} {v}" for k, v in lex["skipped_by_reason"].items()) or "none"
    out += [
        f"lexical pass: {lex['files_indexed']:,} notes indexed, {lex['chunks']:,} chunks, "
        f"{lex['skipped']:,} skipped ({reasons}); {lex['broken_frontmatter']:,} indexed with broken frontmatter"
        + (" [cProfile on: times inflated]" if lex["profiled"] else ""),
        f"baseline read {base['files']:,} notes, {base['bytes'] / 1e6:,.1f} MB",
        f"re-scan: {scan['files']:,} unchanged, {scan['changed']} changed (expected 0)",
        f"incremental: {inc['changed']} changed (expected {inc['files']}), {inc['chunks_written']:,} chunks written; "
        f"its time includes a walk of every note (the unchanged re-scan took {scan['seconds']:.2f} s); "
        f"notes restored and re-indexed: {inc['restored']}",
        f"peak RSS after the lexical pass: {r['peak_rss_mb_after_lexical']:,.0f} MB "
        f"(end of run: {r['peak_rss_mb_end']:,.0f} MB)",
    ]
    enc = r.get("encoder")
    if enc:
        rows = [
            [
                "bare MiniLMEmbedder.embed_documents",
                enc["bare_chunks_s"],
                enc["bare_tokens_s"],
                sum(enc["bare_seconds"]),
            ],
            [
                "pipeline vector_pass.embed_pending",
                enc["pipeline_chunks_s"],
                enc["pipeline_tokens_s"],
                sum(enc["pipeline_seconds"]),
            ],
        ]
        per_round = ", ".join(f"{x:.0%}" for x in enc["round_ratios"])
        out += [
            "",
            f"encoder ({enc['runtime']} runtime, one instance for both): {enc['chunks']} real chunks from "
            f"{enc['notes']} notes, {enc['tokens']:,} tokens, {enc['rounds']} alternating rounds; same texts "
            f"in both: {enc['same_texts']}; pipeline embedded {enc['pipeline_embedded']}, reused "
            f"{enc['pipeline_reused']} per round",
            table(["encoder", "chunks/s", "tokens/s", "seconds"], rows),
            f"pipeline / bare: {enc['ratio']:.1%} (median of rounds: {per_round}; over summed times "
            f"{fmt(enc['ratio_of_totals'] * 100 if enc['ratio_of_totals'] else None)}%; "
            f"target ≥ {TARGETS['pipeline_ratio']:.0%})",
        ]
    return "\n".join(out)


def _cores(load: dict[str, Any]) -> str:
    others = load.get("others_cores")
    return "?" if others is None else f"{others:.2f} of {load['cores']}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", default=None, help="use only this top-level tree of the set (e.g. obsidian-hub)")
    parser.add_argument("--limit", type=int, default=None, help="use only the first N notes (sorted paths)")
    parser.add_argument(
        "--encoder-chunks", type=int, default=400, help="chunks for the encoder comparison (0 skips it; default 400)"
    )
    parser.add_argument("--encoder-rounds", type=int, default=3, help="alternating bare/pipeline rounds (default 3)")
    parser.add_argument("--profile", action="store_true", help="cProfile the lexical pass (to stderr)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    args = parser.parse_args()
    result = run(args)
    print(json.dumps(result, indent=2, default=str) if args.json else render(result))


if __name__ == "__main__":
    main()
