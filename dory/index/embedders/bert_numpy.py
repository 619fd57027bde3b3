"""A BERT encoder forward pass in plain numpy (float32), with mean pooling.

Written for all-MiniLM-L6-v2 but generic over BertConfig. The matrix products go to numpy's BLAS and
run on as many threads as the thread policy gives them (dory/cpu.py: the usable CPUs for `dory
reindex`, one for a query and for the daemon's background embedder); the element-wise steps
(softmax, GELU, LayerNorm) are single-threaded numpy, so they work in place and on row blocks small
enough to stay in the CPU cache, which is where most of the speed comes from (see `_ROW_BLOCK`).
"""

from __future__ import annotations

import math

import numpy as np

from .bert_weights import BertWeights, LayerWeights

# Element-wise work is done on blocks of this many rows of the (tokens, features) matrices. 32 rows of
# the 1536-wide feed-forward activations are 196 KB: small enough for L2, big enough that numpy's
# per-call overhead does not matter.
_ROW_BLOCK = 32

# Added to attention scores of padding positions so softmax gives them (exactly) zero weight.
_MASKED = np.float32(-1e9)

# ---------------------------------------------------------------------------------------------------
# erf and GELU
#
# numpy has no erf. We use our own rational approximation erf(x) ≈ x·P(x²)/Q(x²) on |x| ≤ 4 (with x
# clamped there: erf(4) = 1 − 1.5e-8). Coefficients were fitted by iteratively re-weighted least squares
# against math.erf. Max absolute error: 2.2e-8 in float64 arithmetic; evaluated in float32 the rounding
# of the float32 operations dominates and the error stays below 4e-7 (a few float32 ulps of 1.0).
_ERF_CLAMP = 4.0
# Plain Python floats: numpy treats them as "weak" scalars, so float32 arrays stay float32.
_ERF_P = (
    1.1283789769551669,
    0.196217416932321,
    0.05346359728801099,
    0.004002377093660806,
    0.0002880273624849203,
    1.9752578561682554e-06,
)
_ERF_Q = (
    1.0,
    0.5072243226110669,
    0.11646364636867496,
    0.015441864598011418,
    0.001216079616542516,
    3.7484571640024333e-05,
)
_INV_SQRT2 = 1.0 / math.sqrt(2.0)


def _horner(u: np.ndarray, coefficients: tuple[float, ...]) -> np.ndarray:
    """c0 + c1·u + c2·u² + … evaluated with few temporaries."""
    result = u * coefficients[-1]
    for c in reversed(coefficients[1:-1]):
        result += c
        result *= u
    result += coefficients[0]
    return result


def erf(x: np.ndarray) -> np.ndarray:
    """Error function, element-wise, as a new array of x's float dtype. See the accuracy note above."""
    t = np.clip(x, -_ERF_CLAMP, _ERF_CLAMP)
    u = t * t
    result = _horner(u, _ERF_P)
    result /= _horner(u, _ERF_Q)
    result *= t
    return result


def gelu_(x: np.ndarray) -> None:
    """Exact GELU, x·½(1 + erf(x/√2)), in place on a 2-D float32 array, block by block."""
    for start in range(0, x.shape[0], _ROW_BLOCK):
        block = x[start : start + _ROW_BLOCK]
        factor = erf(block * _INV_SQRT2)
        factor += 1.0
        factor *= 0.5
        block *= factor


# ---------------------------------------------------------------------------------------------------
# Other building blocks (all in place on 2-D or 4-D float32 arrays)


def layer_norm_(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> None:
    """LayerNorm over the last axis of a 2-D array, in place."""
    for start in range(0, x.shape[0], _ROW_BLOCK * 8):  # rows are narrow (hidden size), so bigger blocks
        block = x[start : start + _ROW_BLOCK * 8]
        block -= block.mean(axis=1, keepdims=True)
        variance = np.einsum("ij,ij->i", block, block)[:, None]
        variance /= block.shape[1]
        variance += eps
        np.sqrt(variance, out=variance)
        block /= variance
        block *= gamma
        block += beta


def softmax_(scores: np.ndarray) -> None:
    """Softmax over the last axis, in place; the max is subtracted first for stability."""
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Average of the token vectors of real (unpadded) tokens: (B, T, H) → (B, H)."""
    weights = mask.astype(np.float32)
    summed = np.einsum("bth,bt->bh", hidden, weights)
    counts = np.maximum(weights.sum(axis=1, keepdims=True), np.float32(1e-9))
    pooled: np.ndarray = summed / counts
    return pooled


# ---------------------------------------------------------------------------------------------------
# The encoder


class NumpyBert:
    """Runs token ids through embeddings, the encoder layers and mean pooling."""

    runtime = "numpy"
    # Tokens per forward pass. Small passes keep the (B, heads, T, T) attention tensor and the feed-
    # forward activations in cache; more sequences per pass do not make BLAS faster here.
    token_budget = 1024

    def __init__(self, weights: BertWeights) -> None:
        self.w = weights
        self.config = weights.config

    def encode(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """ids, mask: (B, T) int arrays, right-padded. Returns pooled (B, H) float32, not normalised."""
        batch, length = ids.shape
        hidden = self.w.word_embeddings[ids]  # gathers a fresh (B, T, H) array
        hidden += self.w.position_embeddings[:length]
        hidden += self.w.token_type0
        x = hidden.reshape(batch * length, self.config.hidden_size)
        layer_norm_(x, self.w.embed_norm_g, self.w.embed_norm_b, self.config.layer_norm_eps)
        score_bias = np.where(mask[:, None, None, :] > 0, np.float32(0), _MASKED).astype(np.float32)
        for layer in self.w.layers:
            x = self._layer(x, layer, batch, length, score_bias)
        return mean_pool(x.reshape(batch, length, -1), mask)

    def _layer(self, x: np.ndarray, layer: LayerWeights, batch: int, length: int, score_bias: np.ndarray) -> np.ndarray:
        cfg = self.config
        attended = self._attention(x, layer, batch, length, score_bias)
        attended += x  # residual
        layer_norm_(attended, layer.attn_norm_g, layer.attn_norm_b, cfg.layer_norm_eps)

        inner = attended @ layer.ff_in_w
        inner += layer.ff_in_b
        gelu_(inner)
        out: np.ndarray = inner @ layer.ff_out_w
        out += layer.ff_out_b
        out += attended  # residual
        layer_norm_(out, layer.out_norm_g, layer.out_norm_b, cfg.layer_norm_eps)
        return out

    def _attention(
        self, x: np.ndarray, layer: LayerWeights, batch: int, length: int, score_bias: np.ndarray
    ) -> np.ndarray:
        """Multi-head self-attention plus the output projection (before the residual)."""
        cfg = self.config
        qkv = x @ layer.qkv_w
        qkv += layer.qkv_b
        # (B·T, 3H) → three (B, heads, T, head_dim) views; no copies.
        q, k, v = qkv.reshape(batch, length, 3, cfg.num_heads, cfg.head_dim).transpose(2, 0, 3, 1, 4)
        scores = q @ k.transpose(0, 1, 3, 2)  # (B, heads, T, T); q is pre-scaled by 1/sqrt(head_dim)
        scores += score_bias
        softmax_(scores)
        context = scores @ v  # (B, heads, T, head_dim)
        context = context.transpose(0, 2, 1, 3).reshape(batch * length, cfg.hidden_size)
        out: np.ndarray = context @ layer.attn_out_w
        out += layer.attn_out_b
        return out
