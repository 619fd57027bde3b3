"""Embedders: the factory that turns settings into an Embedder (provisional; see the module docs)."""

from __future__ import annotations

from dataclasses import dataclass

from dory.errors import ConfigError

from .base import Embedder, NamedCounter
from .minilm import MiniLMEmbedder
from .tokens import default_token_counter

__all__ = ["Embedder", "EmbedderSettings", "NamedCounter", "default_token_counter", "load_embedder"]


@dataclass(frozen=True)
class EmbedderSettings:
    backend: str = "minilm"
    runtime: str = "auto"
    model_path: str | None = None
    url: str | None = None
    model: str | None = None
    api_key: str | None = None
    dims: int | None = None
    batch_size: int = 32
    timeout_s: float = 30.0


def load_embedder(settings: EmbedderSettings) -> Embedder | None:
    if settings.backend == "none":
        return None
    if settings.backend == "minilm":
        return MiniLMEmbedder(settings.model_path, settings.runtime)
    raise ConfigError(f"unknown embedder backend {settings.backend!r}")
