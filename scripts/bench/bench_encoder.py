"""MiniLM encoder runtimes side by side: numpy (the baseline) against onnxruntime on our own graph.

Everything runs in ONE process and alternates between the runtimes query by query and batch by batch,
so a noisy machine slows both alike and the ratios hold. Measures:

* the vectors: cosine of each runtime's vectors against numpy's on the batch texts (min / mean);
* query embedding (one real SciFact query, `embed_query`, which holds one thread): p50 / p95 ms;
* batch embedding (`embed_documents` on real SciFact abstracts, up to 256 tokens) at 1 and 2 threads;
* load time (weights + graph build + session) and the process RSS after each load;
* with --busy N (default 2): the query and batch rounds again with N busy-loop processes running.

    python scripts/bench/bench_encoder.py [--queries 200] [--chunks 300] [--busy 2] [--int8]

--int8 adds an int8 model (onnxruntime.quantization.quantize_dynamic, per-channel, reduce_range) for
reference only: its vectors differ (cosine reported), so Dory would need a separate fingerprint for it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    blas_threads,
    busy_loops,
    current_rss_mb,
    percentiles,
    table,
    timed,
    unpack,
)

from dory.index.embedders.minilm import MiniLMEmbedder


def load_texts(queries: int, chunks: int) -> tuple[list[str], list[str]]:
    root = unpack("scifact")
    query_texts = [json.loads(line)["query"] for line in (root / "queries.jsonl").read_text().splitlines()[:queries]]
    files = sorted((root / "corpus").rglob("*.md"))[:chunks]
    return query_texts, [path.read_text(encoding="utf-8") for path in files]


class Int8Embedder(MiniLMEmbedder):
    """The onnx runtime with its graph replaced by a dynamically quantized copy (bench only)."""

    def _load_encoder(self) -> Any:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        from dory.index.embedders.bert_onnx import OnnxBert, graph_file
        from dory.index.embedders.model_files import locate_model_dir

        fp32 = graph_file(locate_model_dir())
        assert isinstance(fp32, str), "the bench needs a writable cache folder"
        with tempfile.TemporaryDirectory() as folder:
            int8 = Path(folder) / "int8.onnx"
            quantize_dynamic(fp32, int8, per_channel=True, reduce_range=True, weight_type=QuantType.QInt8)
            encoder = OnnxBert(int8.read_bytes())
        encoder.runtime = "onnx-int8"
        return encoder


def load(runtimes: dict[str, MiniLMEmbedder]) -> list[list[Any]]:
    rows = []
    for name, embedder in runtimes.items():
        with timed() as sw:
            embedder.embed_query("warm up the tokenizer, the weights and the one-thread session")
        rows.append([name, sw.seconds * 1000, current_rss_mb()])
    return rows


def query_round(runtimes: dict[str, MiniLMEmbedder], queries: list[str]) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in runtimes}
    for query in queries:
        for name, embedder in runtimes.items():  # alternate: the same moment of machine noise for each
            with timed() as sw:
                embedder.embed_query(query)
            times[name].append(sw.seconds * 1000)
    return times


def batch_round(
    runtimes: dict[str, MiniLMEmbedder], chunks: list[str], threads: int, repeat: int = 1
) -> dict[str, float]:
    seconds = dict.fromkeys(runtimes, 0.0)
    with blas_threads(threads):
        for start in range(0, len(chunks) * repeat, 32):
            batch = [chunks[(start + i) % len(chunks)] for i in range(32)]
            for name, embedder in runtimes.items():
                with timed() as sw:
                    embedder.embed_documents(batch)
                seconds[name] += sw.seconds
    total = len(range(0, len(chunks) * repeat, 32)) * 32
    return {name: total / spent for name, spent in seconds.items()}


def measure(runtimes: dict[str, MiniLMEmbedder], queries: list[str], chunks: list[str], label: str) -> None:
    times = query_round(runtimes, queries)
    base = percentiles(times["numpy"], (50, 95))
    rows = []
    for name, values in times.items():
        p = percentiles(values, (50, 95))
        rows.append([name, p["p50"], p["p95"], base["p50"] / p["p50"], base["p95"] / p["p95"]])
    print(f"\n## query embedding, {label} ({len(queries)} SciFact queries, 1 thread)")
    print(table(["runtime", "p50 ms", "p95 ms", "p50 × numpy", "p95 × numpy"], rows, digits=2))
    rows = []
    for threads in (1, 2):
        rates = batch_round(runtimes, chunks, threads)
        rows += [[f"{name} @{threads}", rate, rate / rates["numpy"]] for name, rate in rates.items()]
    print(f"\n## batch embedding, {label} ({len(chunks)} SciFact abstracts, batches of 32)")
    print(table(["runtime @threads", "chunks/s", "× numpy"], rows, digits=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--chunks", type=int, default=300)
    parser.add_argument("--busy", type=int, default=2, help="busy loops for the loaded round (0: skip it)")
    parser.add_argument("--int8", action="store_true", help="also measure a dynamically quantized int8 graph")
    args = parser.parse_args()

    queries, chunks = load_texts(args.queries, args.chunks)
    runtimes: dict[str, MiniLMEmbedder] = {"numpy": MiniLMEmbedder(runtime="numpy")}
    runtimes["onnx"] = MiniLMEmbedder(runtime="onnx")
    if args.int8:
        runtimes["onnx-int8"] = Int8Embedder(runtime="onnx")
    print(f"## load (first embed_query: weights, graph, session); RSS before: {current_rss_mb():.0f} MB")
    print(table(["runtime", "load ms", "RSS after MB"], load(runtimes)))

    reference = runtimes["numpy"].embed_documents(chunks)
    rows = []
    for name, embedder in runtimes.items():
        cosines = (embedder.embed_documents(chunks) * reference).sum(axis=1)
        rows.append([name, float(cosines.min()), float(cosines.mean())])
    print(f"\n## vectors against numpy ({len(chunks)} abstracts)")
    print(table(["runtime", "min cosine", "mean cosine"], rows, digits=7))

    measure(runtimes, queries, chunks, "no busy loops")
    if args.busy:
        with busy_loops(args.busy):
            measure(runtimes, queries, chunks, f"{args.busy} busy loops")
    print(f"\nRSS at the end: {current_rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
