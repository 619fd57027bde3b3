"""The same BERT forward pass as bert_numpy, run by torch (optional; about 2× faster on CPU).

torch is imported only when a TorchBert is created, because `import torch` alone takes over a second
and most runs never need it. The prepared numpy weights are shared with torch (torch.from_numpy does
not copy), so both runtimes compute with identical numbers and give the same vectors to ~1e-6.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dory.cpu import usable_cpu_count

from .bert_weights import BertWeights, LayerWeights


class TorchBert:
    """Runs token ids through embeddings, the encoder layers and mean pooling with torch on the CPU."""

    runtime = "torch"
    # Tokens per forward pass; measured best on 2 CPUs (31 chunks/s at 2048 vs 23 at 16384).
    token_budget = 2048

    def __init__(self, weights: BertWeights) -> None:
        import torch  # lazy: see module docstring

        self._torch = torch
        torch.set_num_threads(usable_cpu_count())
        self.config = weights.config
        self._w = _to_torch(torch, weights)

    def encode(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """ids, mask: (B, T) int arrays, right-padded. Returns pooled (B, H) float32, not normalised."""
        torch = self._torch
        F = torch.nn.functional
        cfg = self.config
        w = self._w
        with torch.inference_mode():
            ids_t = torch.from_numpy(np.ascontiguousarray(ids, dtype=np.int64))
            keep = torch.from_numpy(np.ascontiguousarray(mask)) > 0
            length = ids_t.shape[1]
            x = w["word"][ids_t] + w["position"][:length] + w["token_type0"]
            x = F.layer_norm(x, (cfg.hidden_size,), w["embed_norm_g"], w["embed_norm_b"], cfg.layer_norm_eps)
            # Boolean mask for scaled_dot_product_attention: True = may attend. (B, 1, 1, T).
            attend = keep[:, None, None, :]
            for layer in w["layers"]:
                x = self._layer(x, layer, attend)
            weights = keep.to(torch.float32).unsqueeze(-1)
            pooled = (x * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
            vectors: np.ndarray = pooled.numpy().astype(np.float32, copy=True)
            return vectors

    def _layer(self, x: Any, layer: dict[str, Any], attend: Any) -> Any:
        torch = self._torch
        F = torch.nn.functional
        cfg = self.config
        batch, length, _ = x.shape
        qkv = torch.matmul(x, layer["qkv_w"]) + layer["qkv_b"]
        q, k, v = qkv.view(batch, length, 3, cfg.num_heads, cfg.head_dim).permute(2, 0, 3, 1, 4)
        # scale=1.0: the 1/sqrt(head_dim) factor is already folded into the query weights.
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=attend, scale=1.0)
        context = context.transpose(1, 2).reshape(batch, length, cfg.hidden_size)
        attended = torch.matmul(context, layer["attn_out_w"]) + layer["attn_out_b"] + x
        attended = F.layer_norm(
            attended, (cfg.hidden_size,), layer["attn_norm_g"], layer["attn_norm_b"], cfg.layer_norm_eps
        )
        inner = F.gelu(torch.matmul(attended, layer["ff_in_w"]) + layer["ff_in_b"])  # exact (erf) GELU
        out = torch.matmul(inner, layer["ff_out_w"]) + layer["ff_out_b"] + attended
        return F.layer_norm(out, (cfg.hidden_size,), layer["out_norm_g"], layer["out_norm_b"], cfg.layer_norm_eps)


def _to_torch(torch: Any, weights: BertWeights) -> dict[str, Any]:
    """Wrap the prepared numpy arrays as torch tensors (zero-copy)."""

    def layer_tensors(layer: LayerWeights) -> dict[str, Any]:
        return {name: torch.from_numpy(value) for name, value in vars(layer).items()}

    return {
        "word": torch.from_numpy(weights.word_embeddings),
        "position": torch.from_numpy(weights.position_embeddings),
        "token_type0": torch.from_numpy(weights.token_type0),
        "embed_norm_g": torch.from_numpy(weights.embed_norm_g),
        "embed_norm_b": torch.from_numpy(weights.embed_norm_b),
        "layers": [layer_tensors(layer) for layer in weights.layers],
    }
