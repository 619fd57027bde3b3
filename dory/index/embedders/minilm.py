"""all-MiniLM-L6-v2, the default offline embedder.

Loading is lazy and in two stages, so constructing an embedder is free:

* the tokenizer (0.5 MB, ~10 ms) on the first `count_tokens` or embed call;
* the weights (90 MB) on the first embed call.

Runtimes: "numpy" (our own encoder, always available), "torch" (same weights through torch; about 2×
faster; needs `pip install torch`), "onnx" (our own ONNX graph of the same weights, run by
onnxruntime: 1.3-1.7× faster than numpy on one thread, 5× on two threads of a busy machine, the
same peak memory; needs the `onnx` extra; bert_onnx.py), or "auto" (torch if it is installed, else
onnx if it is, else numpy). All give the same vectors (to 1e-5) and the same fingerprint, so an index
built with one can be searched with another (scripts/bench/bench_encoder.py measures them).

Texts are sorted by token length and encoded in micro-batches of similar length, so short texts are
not padded to the length of long ones; the result rows are put back in the caller's order.

Threads (numpy runtime; the policy and its measurements are in dory/cpu.py): `embed_query` always
runs numpy's BLAS on one thread. One short text is a handful of thin products whose cost is reading
the 90 MB of weights, so a second thread gains nothing idle and, when other processes hold the
cores, turns ~10 ms into hundreds. `embed_documents` uses the process's count: all usable CPUs in
`dory reindex`, one in the daemon (dory/daemon/embedder.py), DORY_BLAS_THREADS when set. The vectors
do not depend on the thread count (equal to 1e-6, tested). The onnx runtime follows the same
policy: each run takes the BLAS count of that moment as its intra-op thread count. The torch runtime keeps torch's own
thread setting (torch.set_num_threads in bert_torch), which this policy does not change.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from pathlib import Path
from typing import Protocol

import numpy as np

from dory.cpu import single_blas_thread
from dory.errors import ConfigError, ModelUnavailable

from .base import Fingerprint, PrefixedEmbedder, l2_normalize_rows
from .bert_weights import load_bert
from .model_files import (
    MODEL_ID,
    MODEL_REVISION,
    install_model,
    locate_model_dir,
    model_status,
    verify_model,
)
from .tokens import MAX_TOKENS, MiniLMTokenizer

__all__ = ["RUNTIMES", "MiniLMEmbedder", "install_model", "model_status", "verify_model"]

RUNTIMES = ("auto", "numpy", "torch", "onnx")
DIMS = 384
ONNX_INSTALL_HINT = "run `pip install 'dory-memory[onnx]'` or set the runtime to 'numpy' or 'auto'"


class _Encoder(Protocol):
    runtime: str
    token_budget: int

    def encode(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray: ...


class MiniLMEmbedder(PrefixedEmbedder):
    """all-MiniLM-L6-v2: 384-d, mean pooling, 256-token window, no query/document prefixes."""

    name = "minilm-l6-v2"
    dims = DIMS

    def __init__(self, model_path: str | os.PathLike[str] | None = None, runtime: str = "auto") -> None:
        if runtime not in RUNTIMES:
            raise ConfigError(f"unknown MiniLM runtime {runtime!r}; expected one of {', '.join(RUNTIMES)}")
        self._model_path = model_path
        self._requested_runtime = runtime
        self._lock = threading.Lock()  # the daemon may embed from several threads; load only once
        self._tokenizer: MiniLMTokenizer | None = None
        self._encoder: _Encoder | None = None

    # -- identity --------------------------------------------------------------------------------

    def fingerprint(self) -> Fingerprint:
        return {
            "model": MODEL_ID,
            "revision": MODEL_REVISION,
            "dims": DIMS,
            "max_tokens": MAX_TOKENS,
            "query_prefix": self.query_prefix,
            "doc_prefix": self.doc_prefix,
        }

    @property
    def runtime(self) -> str:
        """The runtime that is (or will be) used: "numpy", "torch" or "onnx". Never loads anything."""
        if self._encoder is not None:
            return self._encoder.runtime
        return resolve_runtime(self._requested_runtime)

    # -- tokens ----------------------------------------------------------------------------------

    def count_tokens(self, text: str) -> int:
        return self._get_tokenizer().count(text)

    # -- embedding -------------------------------------------------------------------------------

    def embed_query(self, text: str) -> np.ndarray:
        """One short text: on one BLAS thread, which is as fast idle and far faster on a busy machine
        (the thread policy in dory/cpu.py)."""
        with single_blas_thread():
            return super().embed_query(text)

    def _embed(self, texts: list[str]) -> np.ndarray:
        result = np.zeros((len(texts), DIMS), dtype=np.float32)
        if not texts:
            return result
        encoder = self._get_encoder()
        token_ids = self._get_tokenizer().encode_batch(texts)
        for group in plan_micro_batches([len(ids) for ids in token_ids], encoder.token_budget):
            ids, mask = pad_batch([token_ids[i] for i in group])
            result[group] = encoder.encode(ids, mask)
        return l2_normalize_rows(result)

    # -- lazy loading ----------------------------------------------------------------------------

    def _get_tokenizer(self) -> MiniLMTokenizer:
        if self._tokenizer is None:
            with self._lock:
                if self._tokenizer is None:
                    self._tokenizer = MiniLMTokenizer.from_model_dir(locate_model_dir(self._model_path))
        return self._tokenizer

    def _get_encoder(self) -> _Encoder:
        if self._encoder is None:
            with self._lock:
                if self._encoder is None:
                    self._encoder = self._load_encoder()
        return self._encoder

    def _load_encoder(self) -> _Encoder:
        model_dir = locate_model_dir(self._model_path)
        verify_model(model_dir)
        runtime = resolve_runtime(self._requested_runtime)
        if runtime == "onnx":
            return _load_onnx(model_dir)  # reads the weights only the first time (bert_onnx.graph_file)
        weights = load_bert(model_dir)
        if runtime == "torch":
            from .bert_torch import TorchBert

            try:
                return TorchBert(weights)
            except (ImportError, OSError) as exc:  # torch is present but broken (missing libs, ABI)
                if self._requested_runtime == "torch":
                    raise ModelUnavailable(
                        f"MiniLM runtime 'torch' was requested but torch cannot be imported ({exc}); "
                        "repair torch or set the runtime to 'numpy'"
                    ) from exc
                # "auto" only prefers torch; the numpy runtime gives the same vectors.
        from .bert_numpy import NumpyBert

        return NumpyBert(weights)


def _load_onnx(model_dir: Path) -> _Encoder:
    """Our own ONNX graph of the same weights, run by onnxruntime (bert_onnx.py)."""
    try:
        from .bert_onnx import OnnxBert

        return OnnxBert.from_model_dir(model_dir)
    except ImportError as exc:  # installed but broken (missing shared library, ABI mismatch)
        raise ModelUnavailable(
            f"MiniLM runtime 'onnx' was requested but onnxruntime or onnx cannot be imported ({exc}); "
            f"{ONNX_INSTALL_HINT}"
        ) from exc


def resolve_runtime(requested: str) -> str:
    """Map "auto" to "torch" when torch is importable, else "onnx" when onnxruntime and onnx are, else
    "numpy". Asking for "torch" or "onnx" when it is not installed is an error."""
    has_torch = importlib.util.find_spec("torch") is not None
    if requested == "torch" and not has_torch:
        raise ModelUnavailable(
            "MiniLM runtime 'torch' was requested but torch is not installed; "
            "run `pip install torch` or set the runtime to 'numpy' or 'auto'"
        )
    if requested == "onnx" and not _onnx_installed():
        raise ModelUnavailable(
            f"MiniLM runtime 'onnx' was requested but onnxruntime and onnx are not both installed; {ONNX_INSTALL_HINT}"
        )
    if requested == "auto":
        if has_torch:
            return "torch"
        return "onnx" if _onnx_installed() else "numpy"
    return requested


def _onnx_installed() -> bool:
    return all(importlib.util.find_spec(name) is not None for name in ("onnxruntime", "onnx"))


def plan_micro_batches(lengths: list[int], token_budget: int) -> list[list[int]]:
    """Group text indices into batches of similar length whose padded size fits `token_budget`.

    Indices are visited longest first, so each batch is padded to its first member's length; a batch
    grows while (members × that length) stays within the budget. Every batch has at least one member.
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i], reverse=True)
    batches: list[list[int]] = []
    for index in order:
        if batches and (len(batches[-1]) + 1) * lengths[batches[-1][0]] <= token_budget:
            batches[-1].append(index)
        else:
            batches.append([index])
    return batches


def pad_batch(sequences: list[list[int]], pad_id: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Right-pad token id lists into (ids, attention mask) int64 arrays of the longest length."""
    longest = max(len(seq) for seq in sequences)
    ids = np.full((len(sequences), longest), pad_id, dtype=np.int64)
    mask = np.zeros((len(sequences), longest), dtype=np.int64)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)] = seq
        mask[row, : len(seq)] = 1
    return ids, mask
