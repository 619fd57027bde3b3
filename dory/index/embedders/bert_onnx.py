"""The same BERT forward pass as bert_numpy, as an ONNX graph we build ourselves, run by onnxruntime.

No ONNX file of all-MiniLM-L6-v2 exists on PyPI, and exporting one needs torch. We do not need either:
the graph below is written node by node with the `onnx` helper API from the prepared weights
(bert_weights.py: fused QKV, query pre-scaled by 1/sqrt(head_dim), (in, out) matrices), so it computes
exactly what NumpyBert computes, step for step, and the vectors agree to ~1e-6 (tested).

The graph is built once and cached in Dory's cache folder (see graph_file; never in site-packages).
Inputs: input_ids and attention_mask, int64 (batch, length), both dimensions dynamic. Output: the
mean-pooled (batch, hidden) float32 vectors, not normalised; MiniLMEmbedder normalises them, as it
does for the other runtimes.

Threads follow the policy numpy's BLAS follows (dory/cpu.py): each run uses the process's BLAS thread
count at that moment, which is 1 inside `single_blas_thread()` (the query path), the background count
in the daemon (1 unless DORY_BLAS_THREADS says otherwise) and every usable CPU in `dory reindex`.
Where no OpenBLAS is found the count is `default_blas_threads()`, as numpy's would be. An onnxruntime
session has a fixed intra-op thread count, so sessions are made per count, lazily, and kept; in the
daemon the queries and the background embedder share one single-threaded session.

Measured against numpy in one process (scripts/bench/bench_encoder.py, 2 cores already busy with
other work): one query p50 7.5 against 12.5 ms (1.68×), 22 against 34 ms with two more busy loops;
batches 14.0 against 11.0 chunks/s on one thread, 8.6 against 1.5 on two (numpy's OpenBLAS threads
collapse when the cores are taken, onnxruntime's do not). Load 0.22 s from the cached graph (numpy:
0.16 s). Peak RSS after a 32-text batch 214 MB (numpy: 213); each further session adds ~120-180 MB.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from dory.cpu import blas_threads, default_blas_threads

from .bert_weights import BertWeights, LayerWeights, load_bert
from .model_files import EXPECTED_SHA256, cache_dir

# Part of the cached graph's file name: bump it whenever build_bert_model changes what it builds.
GRAPH_VERSION = 1
# LayerNormalization is an ONNX operator from opset 17 on; onnxruntime 1.20 supports opsets up to 21.
_OPSET = 17
# Added to the attention scores of padding positions, as in bert_numpy.
_MASKED = -1e9


class _GraphBuilder:
    """Collects nodes and initializers; each `op` call adds a node and returns its output's name."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self._helper = helper
        self._numpy_helper = numpy_helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0

    def const(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(self._numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, op_type: str, *inputs: str, **attributes: Any) -> str:
        self._count += 1
        output = f"{op_type.lower()}_{self._count}"
        self.nodes.append(self._helper.make_node(op_type, list(inputs), [output], **attributes))
        return output

    def ops(self, op_type: str, inputs: list[str], outputs: int, **attributes: Any) -> list[str]:
        self._count += 1
        names = [f"{op_type.lower()}_{self._count}_{i}" for i in range(outputs)]
        self.nodes.append(self._helper.make_node(op_type, inputs, names, **attributes))
        return names


def build_bert_model(weights: BertWeights) -> Any:
    """The encoder and mean pooling as an onnx.ModelProto (checked with onnx.checker)."""
    import onnx
    from onnx import TensorProto, helper

    cfg = weights.config
    g = _GraphBuilder()
    g.const("word_embeddings", weights.word_embeddings)
    g.const("position_embeddings", weights.position_embeddings)
    g.const("token_type0", weights.token_type0)
    g.const("embed_norm_g", weights.embed_norm_g)
    g.const("embed_norm_b", weights.embed_norm_b)
    g.const("zero_1d", np.array([0], dtype=np.int64))
    g.const("axis_1", np.array([1], dtype=np.int64))
    g.const("axes_1_2", np.array([1, 2], dtype=np.int64))
    g.const("axis_last", np.array([-1], dtype=np.int64))
    g.const("score_keep", np.array(0.0, dtype=np.float32))
    g.const("score_masked", np.array(_MASKED, dtype=np.float32))
    g.const("sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))
    g.const("one", np.array(1.0, dtype=np.float32))
    g.const("half", np.array(0.5, dtype=np.float32))
    g.const("min_count", np.array(1e-9, dtype=np.float32))
    g.const("heads_shape", np.array([0, 0, cfg.num_heads, cfg.head_dim], dtype=np.int64))
    g.const("hidden_shape", np.array([0, 0, cfg.hidden_size], dtype=np.int64))

    # Embeddings: word + position[:T] + token type 0, then LayerNorm.
    length = g.op("Shape", "input_ids", start=1, end=2)
    positions = g.op("Slice", "position_embeddings", "zero_1d", length, "zero_1d")
    x = g.op("Gather", "word_embeddings", "input_ids")
    x = g.op("Add", g.op("Add", x, positions), "token_type0")
    x = g.op("LayerNormalization", x, "embed_norm_g", "embed_norm_b", axis=-1, epsilon=cfg.layer_norm_eps)

    # Additive attention bias (B, 1, 1, T): 0 for real tokens, -1e9 for padding.
    keep = g.op("Greater", "attention_mask", g.const("mask_zero", np.array(0, dtype=np.int64)))
    score_bias = g.op("Unsqueeze", g.op("Where", keep, "score_keep", "score_masked"), "axes_1_2")

    for index, layer in enumerate(weights.layers):
        x = _add_layer(g, x, layer, f"layer{index}", score_bias, cfg.layer_norm_eps)

    # Mean pooling over real tokens: sum(x · m) / max(sum(m), 1e-9).
    mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    summed = g.op("ReduceSum", g.op("Mul", x, g.op("Unsqueeze", mask, "axis_last")), "axis_1", keepdims=0)
    counts = g.op("Max", g.op("ReduceSum", mask, "axis_last", keepdims=1), "min_count")
    pooled = g.op("Div", summed, counts)
    g.nodes.append(helper.make_node("Identity", [pooled], ["pooled"]))

    graph = helper.make_graph(
        g.nodes,
        "dory-bert",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "length"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "length"]),
        ],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", cfg.hidden_size])],
        initializer=g.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", _OPSET)], producer_name="dory")
    model.ir_version = 8  # the oldest IR that opset 17 allows, so older onnxruntime builds load it
    onnx.checker.check_model(model)
    return model


def _add_layer(g: _GraphBuilder, x: str, layer: LayerWeights, name: str, score_bias: str, eps: float) -> str:
    """One encoder layer: self-attention, residual + LayerNorm, GELU feed-forward, residual + LayerNorm."""
    w = {field: g.const(f"{name}.{field}", value) for field, value in vars(layer).items()}
    qkv = g.op("Add", g.op("MatMul", x, w["qkv_w"]), w["qkv_b"])
    q, k, v = g.ops("Split", [qkv], 3, axis=-1)

    def heads(t: str, perm: list[int]) -> str:
        return g.op("Transpose", g.op("Reshape", t, "heads_shape"), perm=perm)

    # (B, heads, T, d) @ (B, heads, d, T): the 1/sqrt(d) scale is already in the query weights.
    scores = g.op("Add", g.op("MatMul", heads(q, [0, 2, 1, 3]), heads(k, [0, 2, 3, 1])), score_bias)
    context = g.op("MatMul", g.op("Softmax", scores, axis=-1), heads(v, [0, 2, 1, 3]))
    context = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), "hidden_shape")
    attended = g.op("Add", g.op("Add", g.op("MatMul", context, w["attn_out_w"]), w["attn_out_b"]), x)
    attended = g.op("LayerNormalization", attended, w["attn_norm_g"], w["attn_norm_b"], axis=-1, epsilon=eps)

    inner = g.op("Add", g.op("MatMul", attended, w["ff_in_w"]), w["ff_in_b"])
    # Exact GELU, x · ½ · (1 + erf(x / √2)), in the form onnxruntime fuses into one kernel.
    gelu = g.op("Mul", g.op("Mul", inner, g.op("Add", g.op("Erf", g.op("Div", inner, "sqrt2")), "one")), "half")
    out = g.op("Add", g.op("Add", g.op("MatMul", gelu, w["ff_out_w"]), w["ff_out_b"]), attended)
    return g.op("LayerNormalization", out, w["out_norm_g"], w["out_norm_b"], axis=-1, epsilon=eps)


def graph_file(model_dir: Path) -> str | bytes:
    """The built graph of the (verified) weights in `model_dir`: a cached file's path, else the bytes.

    Building takes about a second (load the weights, write the graph, check it); opening a session on
    the cached file about 0.07 s, so the graph is kept in Dory's cache folder (model_files.cache_dir),
    named after the weights' sha256 and GRAPH_VERSION. The weights are verified against that sha256
    before we get here, so a file of that name always holds this graph. It is written atomically; where
    the cache folder is not writable the graph stays in memory for this process only.
    """
    path = cache_dir() / "onnx" / f"minilm-{EXPECTED_SHA256['model.safetensors'][:16]}-g{GRAPH_VERSION}.onnx"
    if path.is_file():
        return str(path)
    model_bytes: bytes = build_bert_model(load_bert(model_dir)).SerializeToString()
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_bytes(model_bytes)
        os.replace(temporary, path)
    except OSError:  # read-only or full: no cache this time, and no half-written file left behind
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
        return model_bytes
    return str(path)


def current_threads() -> int:
    """The intra-op thread count for a run now: numpy's BLAS count at this moment (see the docstring)."""
    return blas_threads() or default_blas_threads()


class OnnxBert:
    """Runs token ids through the built graph with onnxruntime; one session per intra-op thread count."""

    runtime = "onnx"
    # Tokens per run: like NumpyBert's budget, small runs keep attention and feed-forward tensors in cache.
    token_budget = 1024

    def __init__(self, model: str | bytes) -> None:
        """`model`: the graph file's path or its bytes (see graph_file)."""
        import onnxruntime  # ImportError here tells the caller the runtime is unavailable

        self._ort = onnxruntime
        self._model = model
        self._sessions: dict[int, Any] = {}
        self._lock = threading.Lock()
        # The session this caller will use first (a second one costs ~120 MB): a query makes the
        # one-thread session, `dory reindex` the all-CPU one. A damaged cached graph fails here, at load.
        self.session(current_threads())

    @classmethod
    def from_model_dir(cls, model_dir: Path) -> OnnxBert:
        """The encoder for the verified weights in `model_dir`; a damaged cached graph is rebuilt once."""
        model = graph_file(model_dir)
        try:
            return cls(model)
        except Exception:  # onnxruntime raises its own error types for a file it cannot load
            if isinstance(model, bytes):
                raise
            Path(model).unlink(missing_ok=True)
            return cls(graph_file(model_dir))

    def session(self, threads: int) -> Any:
        """The session running on `threads` intra-op threads, made on first use."""
        with self._lock:
            if threads not in self._sessions:
                options = self._ort.SessionOptions()
                options.intra_op_num_threads = threads
                options.inter_op_num_threads = 1
                options.graph_optimization_level = self._ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                self._sessions[threads] = self._ort.InferenceSession(
                    self._model, sess_options=options, providers=["CPUExecutionProvider"]
                )
            return self._sessions[threads]

    def encode(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """ids, mask: (B, T) int arrays, right-padded. Returns pooled (B, H) float32, not normalised."""
        threads = current_threads()
        feeds = {
            "input_ids": np.ascontiguousarray(ids, dtype=np.int64),
            "attention_mask": np.ascontiguousarray(mask, dtype=np.int64),
        }
        (pooled,) = self.session(threads).run(["pooled"], feeds)
        result: np.ndarray = np.asarray(pooled, dtype=np.float32)
        return result
