"""Retrieval evaluation: the request and the per-mode, per-query results."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from dory.models.common import MODE_ALIASES, SearchMode, _Model


class EvalRequest(_Model):
    """Evaluate search on queries with known answers: given inline (`queries`, for HTTP and MCP) or
    as a JSON-lines file the caller can read (`queries_file`, an absolute path from the CLI)."""

    queries_file: str | None = None
    queries: list[dict[str, Any]] | None = Field(None, max_length=10_000)
    modes: list[str] = Field(default_factory=lambda: ["bm25", "vector", "hybrid"])
    k: int = Field(10, ge=1, le=200)
    scope_field: str | None = Field(None, description="query field holding a path-prefix scope")
    per_query: bool = False

    @field_validator("modes")
    @classmethod
    def _known_modes(cls, values: list[str]) -> list[str]:
        out: list[str] = []
        for value in values:
            mode = MODE_ALIASES.get(value.strip().lower())
            if mode is None:
                raise ValueError(f"unknown mode {value!r}")
            out.append(mode)
        return out

    @model_validator(mode="after")
    def _one_source(self) -> EvalRequest:
        if (self.queries is None) == (self.queries_file is None):
            raise ValueError("give either queries or queries_file")
        return self


class EvalQueryResult(_Model):
    id: str
    query: str
    ranks: dict[str, int | None]


class EvalModeResult(_Model):
    mode: SearchMode
    recall_at_k: float
    mrr_at_10: float
    ndcg_at_10: float
    queries: int
    per_query: list[EvalQueryResult] | None = None


class EvalResponse(_Model):
    k: int
    queries: int
    modes: list[EvalModeResult]
    warnings: list[str] = Field(default_factory=list)
