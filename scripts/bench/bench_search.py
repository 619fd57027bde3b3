"""Search latency of a warm service at ~10k and ~100k chunks, next to same-process baselines.

    python scripts/bench/bench_search.py [--sizes 10000,100000] [--queries 200] [--modes bm25,vector,hybrid]
                                         [--json] [--rebuild]

`--modes bm25` measures the lexical side only: no vectors are built, no vector baselines, no CLI runs.

Corpora: real notes from mdcorpus (tldr, both PowerShell doc trees and the Obsidian vault, interleaved)
are copied into a corpus until the lexical index holds at least the target number of chunks (a second
copy under `copy2/` and so on when one is not enough). Built corpora and indexes are cached under
`$DORY_BENCH_DIR/search-<size>` (default /tmp/dory-bench) and reused by later runs.

Vectors are SYNTHETIC AROUND REAL ONES: embedding 100k chunks takes over an hour on 2 cores, so a random
sample of real chunks (2,000 by default) is embedded with MiniLM; those chunks keep their real vectors and
every other chunk gets a randomly chosen sample vector plus gaussian noise (σ = 0.02 per dimension),
L2-normalised. They are stored the way the vector pass stores them (`chunks.vector_hash`, the `fingerprint`
meta, the FAISS file), and a fresh `DoryService` loads them as a user's would. Query embedding is real.

Measured with real queries from mdcorpus/queries_*.jsonl (every tree): `svc.search` in bm25, vector and
hybrid mode (p50/p95/p99), against numpy brute force and FAISS IndexFlatIP on the same vectors and the
bare query embedding; plus the one-shot CLI `dory search` (a new process each time, hybrid).

Threads and load (`--busy N`, default 2; 0 skips it): the vector side of the query path is measured
again on a fresh service, first as the machine is, then with N busy-loop processes running (a loaded
machine on purpose): hybrid and vector `svc.search` (Dory's policy: one BLAS thread, one FAISS thread;
dory/cpu.py), next to same-process baselines on 1 and on all usable CPUs: the bare query embedding,
numpy `X @ q` + argpartition over the same vectors, and FAISS IndexFlatIP nq=1 (OpenMP threads).
`--threads-only` measures just this part (quick runs while tuning).

The lexical side is measured against a bare FTS5 query on the same table in the same loop
(`SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT 10`, with the OR of the
query's quoted terms that Dory builds, since a raw query is not valid FTS5 syntax): on a shared, noisy
machine the ratio to it is the figure that holds.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import itertools
import json
import math
import os
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import faiss
import numpy as np
from _common import (
    MachineLoad,
    bench_dir,
    blas_thread_count,
    blas_threads,
    busy_loops,
    busy_machine_warning,
    current_rss_mb,
    log,
    make_service,
    percentiles,
    table,
    timed,
    unpack,
    usable_cpus,
)

from dory.corpus.paths import IgnoreRules, is_note
from dory.index.embedders.base import fingerprint_key
from dory.index.store import embed_text, title_context
from dory.index.vectors import VectorStore
from dory.models import ReindexRequest, Scope, SearchRequest
from dory.search.lexical import _BM25, lexical_candidates
from dory.search.query import fts_match, parse_query

TREES = ("tldr", "powershell-docs", "office-docs-powershell", "obsidian-hub")
MODES = ("bm25", "vector", "hybrid")
TOP_K = 50  # the engine's default candidate list (search.candidates)
TARGETS = {"bm25_p50_ms": 5.0, "hybrid_p50_ms": 25.0, "hybrid_p95_ms": 60.0, "cli_s": 1.5}
TARGET_TEXT = {"bm25": "p50 ≤ 5 ms", "hybrid": "p50 ≤ 25 ms, p95 ≤ 60 ms (100k)"}


# -- building the corpus ---------------------------------------------------------------------------
def source_notes(source: Path) -> list[str]:
    """Notes of every tree, interleaved one from each tree in turn, each tree in sorted order."""
    rules = IgnoreRules()
    per_tree = []
    for tree in TREES:
        found = []
        for folder, dirs, files in os.walk(source / tree):
            rel = Path(folder).relative_to(source).as_posix()
            dirs[:] = [d for d in dirs if not rules.skips_dir(d, f"{rel}/{d}")]
            found += [f"{rel}/{f}" for f in files if is_note(f) and not rules.skips_file(f, f"{rel}/{f}")]
        per_tree.append(sorted(found))
    return [p for group in itertools.zip_longest(*per_tree) for p in group if p is not None]


def build_corpus(work: Path, source: Path, target: int) -> dict[str, Any]:
    """Copy notes into `work/corpus` and index them lexically until the index holds ≥ target chunks."""
    shutil.rmtree(work, ignore_errors=True)
    corpus, state = work / "corpus", work / "state"
    corpus.mkdir(parents=True)
    notes = source_notes(source)
    svc = make_service(corpus, state)
    copied = chunks = 0
    # Chunks per note: a high first guess, then the measured ratio. Each round copies 90% of what the
    # estimate says is missing, so the count approaches the target from below and overshoots little.
    per_note = 20.0
    with timed() as sw:
        while chunks < target:
            want = max(20, math.ceil((target - chunks) / per_note * 0.9))
            for _ in range(want):
                copy_round, index = divmod(copied, len(notes))
                prefix = "" if copy_round == 0 else f"copy{copy_round + 1}/"
                rel = notes[index]
                (corpus / prefix / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source / rel, corpus / prefix / rel)
                copied += 1
            svc.reindex(ReindexRequest(vectors=False))
            chunks = svc.store.counts()["chunks"]
            per_note = max(chunks / copied, 0.5)
            log(f"  {copied:,} notes copied, {chunks:,} chunks")
    counts = svc.store.counts()
    svc.close()
    info = {
        "target": target,
        "notes_copied": copied,
        "copies": math.ceil(copied / len(notes)),
        "files": counts["files"],
        "chunks": counts["chunks"],
        "build_seconds": sw.seconds,
    }
    (work / "corpus.json").write_text(json.dumps(info))
    return info


def chunk_texts(svc: Any, ids: list[int]) -> list[str]:
    """The texts the vector pass would embed for these chunk ids, in order."""
    out = {}
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        rows = svc.store.conn.execute(
            "SELECT c.id, c.text, c.heading_path, f.title, f.frontmatter, f.path FROM chunks c "
            f"JOIN files f ON f.id = c.file_id WHERE c.id IN ({','.join('?' * len(part))})",
            part,
        ).fetchall()
        for row in rows:
            context = title_context(row["title"], json.loads(row["frontmatter"]), row["path"])
            out[row["id"]] = embed_text(context, json.loads(row["heading_path"]), row["text"])
    return [out[i] for i in ids]


def build_vectors(work: Path, sample_size: int, noise: float) -> dict[str, Any]:
    """Real MiniLM vectors for a sample of chunks, synthetic ones (sample + noise) for the rest."""
    svc = make_service(work / "corpus", work / "state")
    embedder = svc.resources.require_embedder()
    fingerprint = fingerprint_key(embedder.fingerprint())
    ids = np.array([r[0] for r in svc.store.conn.execute("SELECT id FROM chunks ORDER BY id")], dtype=np.int64)
    rng = np.random.default_rng(20240501)
    sample_pos = np.sort(rng.choice(len(ids), size=min(sample_size, len(ids)), replace=False))
    log(f"  embedding {len(sample_pos):,} real chunks with MiniLM ({embedder.runtime}) …")
    with timed() as sw:
        sample = embedder.embed_documents(chunk_texts(svc, [int(i) for i in ids[sample_pos]]))
    log(f"  … {sw.seconds:.0f} s ({len(sample_pos) / sw.seconds:.1f} chunks/s)")
    vectors = sample[rng.integers(0, len(sample), size=len(ids))]
    vectors += rng.normal(0.0, noise, size=vectors.shape).astype(np.float32)
    vectors[sample_pos] = sample
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    cfg = svc.settings.index
    store = VectorStore(embedder.dims, cfg.vector_index, cfg.ivf_threshold)
    store.rebuild(ids, vectors)
    with svc.store.conn:
        svc.store.conn.execute("UPDATE chunks SET vector_hash = content_hash")
        svc.store.set_meta("fingerprint", fingerprint)
    store.save(svc.settings.faiss_path)
    svc.close()
    info = {
        "fingerprint": fingerprint,
        "real_sample": len(sample_pos),
        "noise_sigma": noise,
        "vectors": len(ids),
        "sample_embed_chunks_s": len(sample_pos) / sw.seconds,
        "ivf": store.is_ivf,
    }
    (work / "vectors.json").write_text(json.dumps(info))
    return info


def prepare(size: int, source: Path, args: argparse.Namespace) -> tuple[Path, dict[str, Any], dict[str, Any] | None]:
    """The cached corpus + index for `size` chunks, built (or its vectors rebuilt) when missing or stale."""
    work = bench_dir() / f"search-{size}"
    corpus_info = _read_json(work / "corpus.json")
    if args.rebuild or corpus_info is None or not (work / "state" / "index.sqlite").exists():
        log(f"[{size:,}] building the corpus …")
        corpus_info = build_corpus(work, source, size)
    if not needs_vectors(args):
        return work, corpus_info, None
    vec_info = _read_json(work / "vectors.json")
    svc = make_service(work / "corpus", work / "state")
    fingerprint = fingerprint_key(svc.resources.require_embedder().fingerprint())
    svc.close()
    if (
        vec_info is None
        or vec_info["fingerprint"] != fingerprint
        or vec_info["real_sample"] != min(args.sample_vectors, corpus_info["chunks"])
        or vec_info["noise_sigma"] != args.noise
        or not (work / "state" / "vectors.faiss").exists()
    ):
        log(f"[{size:,}] building vectors …")
        vec_info = build_vectors(work, args.sample_vectors, args.noise)
    return work, corpus_info, vec_info


def needs_vectors(args: argparse.Namespace) -> bool:
    return args.threads_only or bool({"vector", "hybrid"} & set(args.modes))


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


# -- queries ---------------------------------------------------------------------------------------
def load_queries(root: Path, count: int) -> list[str]:
    """`count` real queries, taken in turn from each tree's queries file (each shuffled with a fixed seed)."""
    per_tree = []
    for tree in TREES:
        lines = (root / f"queries_{tree}.jsonl").read_text(encoding="utf-8").splitlines()
        queries = [json.loads(line)["query"] for line in lines if line.strip()]
        random.Random(tree).shuffle(queries)
        per_tree.append(queries)
    out: list[str] = []
    for group in zip(*per_tree, strict=False):
        out += group
    return out[:count]


# -- measuring -------------------------------------------------------------------------------------
def ms_stats(seconds: list[float]) -> dict[str, float]:
    return {k: (v * 1000 if k != "n" else v) for k, v in percentiles(seconds).items()}


def measure(work: Path, queries: list[str], warmup: list[str], args: argparse.Namespace) -> dict[str, Any]:
    svc = make_service(work / "corpus", work / "state")  # fresh: loads the index like a user's service
    out: dict[str, Any] = {}
    if "hybrid" in args.modes:
        with timed() as sw:
            svc.search(SearchRequest(query=(warmup or queries)[0], mode="hybrid"))
        out["first_hybrid_search_s"] = sw.seconds  # loads the model and the FAISS file
    for q in warmup:
        for mode in args.modes:
            svc.search(SearchRequest(query=q, mode=mode))
    # Modes take turns on each query (the first mode rotates), so load from other processes and
    # caches warmed by the previous search fall on every mode alike. "hybrid_blas1" is a what-if:
    # hybrid with numpy's BLAS held to one thread for that call (see `blas_threads`).
    profiler = cProfile.Profile() if args.profile else None
    runs = [*args.modes, *(["hybrid_blas1"] if "hybrid" in args.modes else [])]
    times: dict[str, list[float]] = {run: [] for run in runs}
    hits = dict.fromkeys(runs, 0)
    for n, q in enumerate(queries):
        for run in runs[n % len(runs) :] + runs[: n % len(runs)]:
            mode, threads = run.removesuffix("_blas1"), 1 if run.endswith("_blas1") else None
            with blas_threads(threads) if threads else contextlib.nullcontext():
                if profiler and run == "hybrid":
                    profiler.enable()
                t0 = time.perf_counter()
                res = svc.search(SearchRequest(query=q, mode=mode))
                times[run].append(time.perf_counter() - t0)
                if profiler and run == "hybrid":
                    profiler.disable()
            hits[run] += bool(res.hits)
    for run in runs:
        out[run] = ms_stats(times[run])
    out["queries_with_hits"] = hits
    if profiler:
        text = io.StringIO()
        stats = pstats.Stats(profiler, stream=text)
        stats.sort_stats("cumulative").print_stats(40)
        stats.sort_stats("tottime").print_stats(20)
        log(f"--- cProfile of {len(queries)} hybrid searches (times inflated by profiling) ---\n{text.getvalue()}")
    if "bm25" in args.modes:
        out["lexical"] = lexical_baselines(svc, queries)
    if not needs_vectors(args):
        out["rss_mb"] = current_rss_mb()
        svc.close()
        return out

    # Baselines on the very same vectors, taking turns on each query vector like the modes above.
    embedder, store = svc.resources.require_embedder(), svc.resources.vectors()
    qtimes, q1times, qvecs = [], [], []
    for n, q in enumerate(queries):
        for one_thread in (n % 2 == 1, n % 2 == 0):
            with blas_threads(1) if one_thread else contextlib.nullcontext():
                t0 = time.perf_counter()
                vector = embedder.embed_query(q)
                (q1times if one_thread else qtimes).append(time.perf_counter() - t0)
        qvecs.append(vector)
    out["query_embedding_blas1"] = ms_stats(q1times)
    out["query_embedding"] = ms_stats(qtimes)
    matrix = _matrix_of(store)
    flat = faiss.IndexFlatIP(matrix.shape[1])
    flat.add(matrix)
    contenders = {
        "dory_vector_store": lambda v: store.search(v, TOP_K),
        "numpy_brute_force": lambda v: _numpy_top(matrix, v, TOP_K),
        "faiss_flat_ip": lambda v: flat.search(v.reshape(1, -1), TOP_K),
    }
    names = list(contenders)
    base_times: dict[str, list[float]] = {name: [] for name in names}
    for n, v in enumerate(qvecs[:5] + qvecs):  # the first five are warm-up
        for name in names[n % 3 :] + names[: n % 3]:
            t0 = time.perf_counter()
            contenders[name](v)
            if n >= 5:
                base_times[name].append(time.perf_counter() - t0)
    for name in names:
        out[name] = ms_stats(base_times[name])
    out["rss_mb"] = current_rss_mb()
    svc.close()
    if "hybrid" in args.modes and args.cli_runs > 0:
        out["cli"] = cli_runs(work, queries, args.cli_runs)
    return out


def lexical_baselines(svc: Any, queries: list[str]) -> dict[str, Any]:
    """`svc.search` bm25 and Dory's lexical retriever next to bare FTS5, taking turns on each query.

    "bare FTS5" is the floor: FTS5's own rank over the OR of the query's quoted terms, top 10, no
    weights, no join. "OR only" is the retriever as it was before AND-first (the weighted OR list).
    """
    conn = svc.store.conn
    bare_sql = "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT 10"
    or_sql = f"SELECT rowid, {_BM25} AS score FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY score LIMIT ?"
    limit = max(svc.settings.search.candidates, 10 * 5)
    parsed = [parse_query(q) for q in queries]
    matches = [fts_match(p) or '""' for p in parsed]
    contenders = {
        "svc_search_bm25": lambda n: svc.search(SearchRequest(query=queries[n], mode="bm25")),
        "retriever": lambda n: lexical_candidates(svc.store, parsed[n], Scope(), limit),
        "retriever_or_only": lambda n: conn.execute(or_sql, (matches[n], limit)).fetchall(),
        "bare_fts5": lambda n: conn.execute(bare_sql, (matches[n],)).fetchall(),
    }
    names = list(contenders)
    times: dict[str, list[float]] = {name: [] for name in names}
    for n in range(len(queries)):
        for name in names[n % len(names) :] + names[: n % len(names)]:
            t0 = time.perf_counter()
            contenders[name](n)
            times[name].append(time.perf_counter() - t0)
    out: dict[str, Any] = {name: ms_stats(times[name]) for name in names}
    bare = out["bare_fts5"]
    out["ratio_to_bare"] = {
        name: {p: out[name][p] / bare[p] for p in ("p50", "p95", "p99")} for name in names if name != "bare_fts5"
    }
    return out


def _numpy_top(matrix: np.ndarray, query: np.ndarray, k: int) -> np.ndarray:
    scores = matrix @ query
    top = np.argpartition(-scores, k - 1)[:k]
    return top[np.argsort(-scores[top])]


def _matrix_of(store: VectorStore) -> np.ndarray:
    """A private copy of the stored vectors (flat index only)."""
    if store.is_ivf:
        raise SystemExit("baselines expect a flat vector index; this size built an IVF index")
    flat = faiss.downcast_index(store.index.index)
    view = faiss.rev_swig_ptr(flat.get_xb(), store.ntotal * store.dims).reshape(store.ntotal, store.dims)
    return np.array(view, dtype=np.float32, copy=True)


def cli_runs(work: Path, queries: list[str], runs: int) -> dict[str, Any]:
    """Wall time and peak RSS of `dory search` (hybrid), one new process per query."""
    exe = shutil.which("dory", path=str(Path(sys.executable).parent)) or shutil.which("dory") or "dory"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DORY_")}
    walls, rss, failures = [], [], []
    for q in queries[-runs:]:
        cmd = [exe, "--corpus", str(work / "corpus"), "--state-dir", str(work / "state"), "search", q]
        t0 = time.perf_counter()
        with open(os.devnull, "wb") as sink:
            proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.PIPE, env=env)
            err = proc.stderr.read() if proc.stderr else b""
            _, status, usage = os.wait4(proc.pid, 0)
        walls.append(time.perf_counter() - t0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        rss.append(usage.ru_maxrss / 1024)
        if proc.returncode != 0:
            failures.append(err.decode(errors="replace")[-300:])
    return {
        "runs": runs,
        "median_s": statistics.median(walls),
        "max_s": max(walls),
        "min_s": min(walls),
        "peak_rss_mb": max(rss),
        "failures": failures,
    }


# -- the query path's threads, idle and busy ------------------------------------------------------
def measure_threads(work: Path, queries: list[str], busy: int) -> dict[str, Any]:
    """The vector side of the query path as the machine is, then with `busy` busy loops (see docstring)."""
    svc = make_service(work / "corpus", work / "state")
    svc.search(SearchRequest(query=queries[0], mode="hybrid"))  # loads the model and the FAISS file
    embedder, store = svc.resources.require_embedder(), svc.resources.vectors()
    matrix = _matrix_of(store)
    flat = faiss.IndexFlatIP(matrix.shape[1])
    flat.add(matrix)
    cpus = usable_cpus()
    vectors = [embedder.embed_query(q) for q in queries]

    def faiss_on(threads: int, v: np.ndarray) -> None:
        faiss.omp_set_num_threads(threads)  # this thread only (libgomp)
        flat.search(v.reshape(1, -1), TOP_K)

    # run name → a call on query number n; embed_documents has no thread limit of its own, so the
    # blasN runs measure what the query path cost before Dory's policy held it to one thread.
    calls: dict[str, Any] = {
        "hybrid": lambda n: svc.search(SearchRequest(query=queries[n], mode="hybrid")),
        "vector": lambda n: svc.search(SearchRequest(query=queries[n], mode="vector")),
        "query_embedding_policy": lambda n: embedder.embed_query(queries[n]),
        "query_embedding_blas1": lambda n: _with_blas(1, embedder.embed_documents, [queries[n]]),
        "query_embedding_blasN": lambda n: _with_blas(cpus, embedder.embed_documents, [queries[n]]),
        "numpy_blas1": lambda n: _with_blas(1, _numpy_top, matrix, vectors[n], TOP_K),
        "numpy_blasN": lambda n: _with_blas(cpus, _numpy_top, matrix, vectors[n], TOP_K),
        "faiss_flat_omp1": lambda n: faiss_on(1, vectors[n]),
        "faiss_flat_ompN": lambda n: faiss_on(cpus, vectors[n]),
    }
    out: dict[str, Any] = {"cpus": cpus, "busy_loops": busy, "passes": {}}
    for label, loops in (("as_is", 0), (f"busy{busy}", busy)) if busy else (("as_is", 0),):
        with busy_loops(loops):
            load = MachineLoad()
            out["passes"][label] = {**_take_turns(calls, len(queries)), "machine": load.report()}
    faiss.omp_set_num_threads(cpus)
    svc.close()
    return out


def _with_blas(threads: int, fn: Any, *args: Any) -> Any:
    with blas_threads(threads):
        return fn(*args)


def _take_turns(calls: dict[str, Any], count: int) -> dict[str, dict[str, float]]:
    """Each call on each query number, the first call rotating, so load falls on every run alike."""
    names = list(calls)
    times: dict[str, list[float]] = {name: [] for name in names}
    for n in range(-2, count):  # two warm-up rounds
        for name in names[n % len(names) :] + names[: n % len(names)]:
            t0 = time.perf_counter()
            calls[name](max(n, 0))
            if n >= 0:
                times[name].append(time.perf_counter() - t0)
    return {name: ms_stats(values) for name, values in times.items()}


THREAD_ROWS = (
    ("svc.search hybrid (Dory's policy)", "hybrid"),
    ("svc.search vector (Dory's policy)", "vector"),
    ("query embedding (Dory's policy)", "query_embedding_policy"),
    ("  baseline: query embedding, BLAS 1", "query_embedding_blas1"),
    ("  baseline: query embedding, BLAS N", "query_embedding_blasN"),
    ("  baseline: numpy X @ q, BLAS 1", "numpy_blas1"),
    ("  baseline: numpy X @ q, BLAS N", "numpy_blasN"),
    ("  baseline: FAISS FlatIP nq=1, OMP 1", "faiss_flat_omp1"),
    ("  baseline: FAISS FlatIP nq=1, OMP N", "faiss_flat_ompN"),
)


def render_threads(t: dict[str, Any]) -> list[str]:
    passes = t["passes"]
    headers = ["ms (p50 / p95)"] + [
        f"{label} (others {p['machine']['others_cores']:.1f} cores)"
        if p["machine"]["others_cores"] is not None
        else label
        for label, p in passes.items()
    ]
    rows = [
        [label] + [f"{p[key]['p50']:.1f} / {p[key]['p95']:.1f}" for p in passes.values()] for label, key in THREAD_ROWS
    ]
    return [
        f"threads and load: N = {t['cpus']} usable CPUs; busy pass = {t['busy_loops']} busy loops",
        table(headers, rows),
    ]


# -- main ------------------------------------------------------------------------------------------
def run(args: argparse.Namespace) -> dict[str, Any]:
    root = unpack("mdcorpus")
    every = load_queries(root, args.queries + args.warmup)
    queries, warmup = every[: args.queries], every[args.queries :]
    result: dict[str, Any] = {
        "vectors_note": f"SYNTHETIC AROUND REAL: {args.sample_vectors:,} chunks embedded with MiniLM, every other "
        f"chunk a sample vector + N(0, {args.noise}) noise per dimension, L2-normalised; "
        "queries are real and really embedded",
        "queries": len(queries),
        "warmup": len(warmup),
        "top_k": TOP_K,
        "targets": TARGETS,
        "blas_threads": blas_thread_count(),
        "sizes": {},
    }
    for size in args.sizes:
        work, corpus_info, vec_info = prepare(size, root / "corpus", args)
        log(f"[{size:,}] measuring …")
        load = MachineLoad()
        figures = {} if args.threads_only else measure(work, queries, warmup, args)
        if vec_info is not None:  # the threads/load part measures the vector side
            figures["threads"] = measure_threads(work, queries[: args.load_queries], args.busy)
        result["sizes"][str(size)] = {"corpus": corpus_info, "vectors": vec_info, **figures, "machine": load.report()}
    return result


def render(r: dict[str, Any]) -> str:
    out = [
        "Dory search latency (warm service)",
        f"vectors: {r['vectors_note']}",
        f"{r['queries']} real queries from mdcorpus (4 trees), {r['warmup']} warm-up; top-k {r['top_k']}; "
        f"numpy BLAS threads: {r['blas_threads']}",
    ]
    for size, s in r["sizes"].items():
        c, v, cli = s["corpus"], s["vectors"], s.get("cli")
        out += [
            "",
            f"== target {int(size):,} chunks: {c['chunks']:,} chunks in {c['files']:,} notes "
            f"({c['copies']} cop{'y' if c['copies'] == 1 else 'ies'} of the source notes), "
            + (
                f"{v['vectors']:,} vectors ({v['real_sample']:,} real), {'IVF' if v['ivf'] else 'flat'} index"
                if v
                else "no vectors (lexical modes only)"
            ),
        ]
        out += render_threads(s["threads"]) if "threads" in s else []
        if "lexical" in s:
            out += render_lexical(s["lexical"])
        if v is None:
            out += [f"bench process RSS {s['rss_mb']:,.0f} MB", *machine_lines(s["machine"])]
            continue
        if "bm25" not in s:  # --threads-only
            continue
        rows = []
        for label, key, target in [
            ("svc.search bm25", "bm25", TARGET_TEXT["bm25"]),
            ("svc.search vector", "vector", ""),
            ("svc.search hybrid", "hybrid", TARGET_TEXT["hybrid"]),
            ("  what-if: hybrid, numpy BLAS on 1 thread", "hybrid_blas1", ""),
            ("  baseline: query embedding alone", "query_embedding", ""),
            ("  baseline: query embedding, BLAS 1 thread", "query_embedding_blas1", ""),
            ("  baseline: numpy X @ q + argpartition", "numpy_brute_force", ""),
            ("  baseline: FAISS IndexFlatIP nq=1", "faiss_flat_ip", ""),
            ("  Dory VectorStore.search (no embedding)", "dory_vector_store", ""),
        ]:
            if key not in s:
                continue
            p = s[key]
            rows.append([label, p["p50"], p["p95"], p["p99"], target])
        out.append(table(["ms", "p50", "p95", "p99", "SPEC §11 target"], rows, digits=2))
        if "hybrid" in s:
            hyb, emb = s["hybrid"], s["query_embedding"]
            out.append(
                f"hybrid minus query embedding (p50): {hyb['p50'] - emb['p50']:.2f} ms; first hybrid search "
                f"in a fresh service (loads model + vectors): {s['first_hybrid_search_s']:.2f} s"
            )
        out.append(f"queries with hits: {s['queries_with_hits']}; bench process RSS {s['rss_mb']:,.0f} MB")
        out += machine_lines(s["machine"])
        if cli is None:
            continue
        verdict = "ok" if cli["median_s"] <= TARGETS["cli_s"] else "MISSED"
        out.append(
            f"one-shot CLI `dory search` (hybrid, {cli['runs']} runs): median {cli['median_s']:.2f} s, "
            f"max {cli['max_s']:.2f} s, min {cli['min_s']:.2f} s, peak RSS {cli['peak_rss_mb']:,.0f} MB "
            f"[target ≤ {TARGETS['cli_s']} s: {verdict}]"
            + (f"; {len(cli['failures'])} FAILED: {cli['failures'][0]}" if cli["failures"] else "")
        )
    return "\n".join(out)


def machine_lines(machine: dict[str, Any]) -> list[str]:
    others = machine["others_cores"]
    busy = "?" if others is None else f"{others:.2f} of {machine['cores']}"
    warning = busy_machine_warning(machine)
    return [f"other processes kept {busy} cores busy on average while this size was measured"] + (
        [warning] if warning else []
    )


def render_lexical(lex: dict[str, Any]) -> list[str]:
    """The lexical table: each contender's percentiles and its ratio to bare FTS5 (same loop)."""
    rows = []
    for label, key in [
        ("svc.search bm25 (turns with the rows below)", "svc_search_bm25"),
        ("  Dory lexical retriever (this build, top 50)", "retriever"),
        ("  what-if: retriever as before (OR only, top 50)", "retriever_or_only"),
        ("  baseline: bare FTS5 MATCH … ORDER BY rank LIMIT 10", "bare_fts5"),
    ]:
        p, ratio = lex[key], lex["ratio_to_bare"].get(key)
        rows.append(
            [label, p["p50"], p["p95"], p["p99"], f"{ratio['p50']:.1f}x / {ratio['p95']:.1f}x" if ratio else ""]
        )
    return [table(["ms", "p50", "p95", "p99", "÷ bare FTS5 (p50 / p95)"], rows, digits=2)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="target chunk counts, comma-separated")
    parser.add_argument("--queries", type=int, default=200, help="measured queries per mode")
    parser.add_argument("--warmup", type=int, default=20, help="warm-up queries (not measured)")
    parser.add_argument("--sample-vectors", type=int, default=2000, help="chunks embedded for real")
    parser.add_argument("--noise", type=float, default=0.02, help="σ of the per-dimension noise")
    parser.add_argument("--cli-runs", type=int, default=5)
    parser.add_argument("--busy", type=int, default=2, help="busy-loop processes for the loaded pass (0: none)")
    parser.add_argument("--load-queries", type=int, default=60, help="queries per pass of the threads/load part")
    parser.add_argument("--threads-only", action="store_true", help="measure only the threads/load part")
    parser.add_argument("--modes", default=",".join(MODES), help="search modes to measure, comma-separated")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the cached corpora and vectors")
    parser.add_argument("--profile", action="store_true", help="cProfile the hybrid searches (to stderr)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    args = parser.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    args.modes = [m for m in (s.strip() for s in args.modes.split(",")) if m]
    if not args.modes or set(args.modes) - set(MODES):
        parser.error(f"--modes takes a comma-separated subset of {','.join(MODES)}")
    result = run(args)
    print(json.dumps(result, indent=2, default=str) if args.json else render(result))


if __name__ == "__main__":
    main()
