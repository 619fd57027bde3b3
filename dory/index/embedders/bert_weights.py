"""BERT configuration and weights, rearranged once for fast inference.

Both runtimes (numpy and torch) compute `x @ W + b` on the same prepared float32 arrays, so they share
this loader. Preparation does three things the checkpoint does not:

* weights are transposed to (in, out) and made contiguous, so every projection is one plain GEMM;
* query, key and value projections are fused into one (hidden, 3*hidden) matrix: one GEMM, not three;
* the attention scale 1/sqrt(head_dim) is folded into the query weights and bias, which saves a pass
  over the (batch, heads, T, T) score tensor in every layer.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

from dory.errors import ModelUnavailable

from .model_files import INSTALL_HINT


@dataclass(frozen=True)
class BertConfig:
    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    layer_norm_eps: float
    max_positions: int

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @classmethod
    def from_file(cls, path: Path) -> BertConfig:
        raw = json.loads(path.read_text(encoding="utf-8"))
        # Our encoder implements exactly this flavour of BERT; refuse anything else loudly.
        if raw.get("hidden_act") != "gelu" or raw.get("position_embedding_type", "absolute") != "absolute":
            raise ModelUnavailable(f"{path} describes a BERT variant this encoder does not implement")
        return cls(
            hidden_size=int(raw["hidden_size"]),
            num_layers=int(raw["num_hidden_layers"]),
            num_heads=int(raw["num_attention_heads"]),
            intermediate_size=int(raw["intermediate_size"]),
            layer_norm_eps=float(raw["layer_norm_eps"]),
            max_positions=int(raw["max_position_embeddings"]),
        )


@dataclass(frozen=True)
class LayerWeights:
    qkv_w: np.ndarray  # (H, 3H), query part pre-scaled
    qkv_b: np.ndarray  # (3H,)
    attn_out_w: np.ndarray  # (H, H)
    attn_out_b: np.ndarray
    attn_norm_g: np.ndarray
    attn_norm_b: np.ndarray
    ff_in_w: np.ndarray  # (H, I)
    ff_in_b: np.ndarray
    ff_out_w: np.ndarray  # (I, H)
    ff_out_b: np.ndarray
    out_norm_g: np.ndarray
    out_norm_b: np.ndarray


@dataclass(frozen=True)
class BertWeights:
    config: BertConfig
    word_embeddings: np.ndarray  # (vocab, H)
    position_embeddings: np.ndarray  # (max_positions, H)
    token_type0: np.ndarray  # (H,): single-sentence inputs always have token type 0
    embed_norm_g: np.ndarray
    embed_norm_b: np.ndarray
    layers: tuple[LayerWeights, ...]


def load_bert(model_dir: Path) -> BertWeights:
    """Read config.json and model.safetensors from a (verified) model folder."""
    config = BertConfig.from_file(model_dir / "config.json")
    try:
        tensors = load_file(str(model_dir / "model.safetensors"))
    except Exception as exc:  # safetensors raises its own error types for damaged files
        raise ModelUnavailable(
            f"MiniLM model file {model_dir / 'model.safetensors'} cannot be read ({exc}); {INSTALL_HINT}"
        ) from exc
    try:
        return _prepare(config, tensors)
    except KeyError as exc:
        raise ModelUnavailable(f"MiniLM weights in {model_dir} lack tensor {exc}; {INSTALL_HINT}") from exc


def _prepare(config: BertConfig, t: dict[str, np.ndarray]) -> BertWeights:
    def f32(name: str) -> np.ndarray:
        return np.ascontiguousarray(t[name], dtype=np.float32)

    layers = tuple(_prepare_layer(config, t, f"encoder.layer.{i}.") for i in range(config.num_layers))
    return BertWeights(
        config=config,
        word_embeddings=f32("embeddings.word_embeddings.weight"),
        position_embeddings=f32("embeddings.position_embeddings.weight"),
        token_type0=f32("embeddings.token_type_embeddings.weight")[0].copy(),
        embed_norm_g=f32("embeddings.LayerNorm.weight"),
        embed_norm_b=f32("embeddings.LayerNorm.bias"),
        layers=layers,
    )


def _prepare_layer(config: BertConfig, t: dict[str, np.ndarray], prefix: str) -> LayerWeights:
    def linear(name: str) -> tuple[np.ndarray, np.ndarray]:
        """Checkpoint stores (out, in) for x @ W.T; we want (in, out) for x @ W."""
        weight = t[prefix + name + ".weight"].astype(np.float32).T
        return np.ascontiguousarray(weight), t[prefix + name + ".bias"].astype(np.float32)

    def norm(name: str) -> tuple[np.ndarray, np.ndarray]:
        return t[prefix + name + ".weight"].astype(np.float32), t[prefix + name + ".bias"].astype(np.float32)

    scale = np.float32(1.0 / math.sqrt(config.head_dim))
    q_w, q_b = linear("attention.self.query")
    k_w, k_b = linear("attention.self.key")
    v_w, v_b = linear("attention.self.value")
    attn_out_w, attn_out_b = linear("attention.output.dense")
    ff_in_w, ff_in_b = linear("intermediate.dense")
    ff_out_w, ff_out_b = linear("output.dense")
    attn_norm_g, attn_norm_b = norm("attention.output.LayerNorm")
    out_norm_g, out_norm_b = norm("output.LayerNorm")
    return LayerWeights(
        qkv_w=np.ascontiguousarray(np.concatenate([q_w * scale, k_w, v_w], axis=1)),
        qkv_b=np.concatenate([q_b * scale, k_b, v_b]),
        attn_out_w=attn_out_w,
        attn_out_b=attn_out_b,
        attn_norm_g=attn_norm_g,
        attn_norm_b=attn_norm_b,
        ff_in_w=ff_in_w,
        ff_in_b=ff_in_b,
        ff_out_w=ff_out_w,
        ff_out_b=ff_out_b,
        out_norm_g=out_norm_g,
        out_norm_b=out_norm_b,
    )
