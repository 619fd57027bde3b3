"""Context for agents: the wake block, context packing, remind (archived text back) and mark (agent weights)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from dory.models.common import MAX_INGEST_BYTES, _Model

WakeProfileName = Literal["default", "coding", "writing", "privacy", "casual"]


class WakeRequest(_Model):
    profile: str = Field(
        "default",
        min_length=1,
        max_length=64,
        description="default, coding, writing, privacy, casual, or one defined in dory.toml",
    )
    project: str | None = Field(None, max_length=200, description="a project's slug, title or alias")
    budget: int | None = Field(None, ge=50, le=1500, description="hard token budget (default from [wake])")
    max_chars: int | None = Field(None, ge=500, le=10_000, description="hard character cap of the block")
    agent: str | None = Field(None, max_length=100)


class WakeSection(_Model):
    name: str
    source: str = Field(description="the corpus path the section came from, or the computed section's name")
    tokens: int
    truncated: bool = False


class WakeResponse(_Model):
    profile: str
    block: str
    tokens: int
    chars: int
    budget: int
    max_chars: int
    sections: list[WakeSection]
    omitted: list[str] = Field(default_factory=list, description="sources left out, with why")
    frozen_at: str
    warnings: list[str] = Field(default_factory=list)


class PackInput(_Model):
    """One message of an in-memory conversation handed to `context pack` (HTTP, MCP, library)."""

    id: str | None = Field(None, max_length=200, description="a stable id (default: computed from the content)")
    role: Literal["user", "assistant", "tool", "system"]
    content: str = Field(..., max_length=MAX_INGEST_BYTES)
    kind: Literal["message", "tool_result", "image", "summary"] = "message"
    time: str | None = None
    weight: float = Field(0.0, ge=0, le=100, description="how much the agent relies on it (see `context mark`)")


class ContextPackRequest(_Model):
    session: str | None = Field(None, max_length=300, description="a stored session's id, prefix or path")
    messages: list[PackInput] | None = Field(None, description="or an in-memory conversation")
    query: str | None = Field(None, max_length=20_000, description="what the next turn is about")
    budget: int = Field(..., ge=256, le=2_000_000, description="tokens the model may see")
    reserve: int | None = Field(None, ge=0, description="tokens kept free for the answer (default [context])")
    min_recent: int | None = Field(None, ge=0, le=1000, description="the last N messages are always kept")
    beta: float | None = Field(None, ge=0, le=1, description="utility = β·relevance + (1−β)·agent weight")
    system: str | None = Field(None, max_length=200_000, description="the system block (protected)")
    wake_profile: str | None = Field(None, max_length=64, description="prepend `dory wake` with this profile")

    @model_validator(mode="after")
    def _one_source(self) -> ContextPackRequest:
        if (self.session is None) == (self.messages is None):
            raise ValueError("give exactly one of session and messages")
        return self


class PackedItem(_Model):
    kind: Literal["system", "summary", "placeholder", "recalled", "message"]
    id: str | None = Field(None, description="message or chunk id (m-<hex> or m-<hex>#<n>)")
    role: str
    time: str | None = None
    text: str
    tokens: int


class ArchivedRange(_Model):
    first_id: str
    last_id: str
    messages: int
    tokens: int
    gist: str
    recalled: list[str] = Field(default_factory=list, description="chunks of this range shown as recalled items")


class ContextPackResponse(_Model):
    lane: Literal["pass_through", "packed"]
    budget: int
    available: int = Field(description="budget minus reserve")
    tokens: int
    fill_ratio: float = Field(description="tokens / available")
    items: list[PackedItem]
    archived: list[ArchivedRange]
    recalled: list[str]
    protected: list[str] = Field(description="ids kept whatever their score (the last N messages)")
    warnings: list[str] = Field(default_factory=list)


class RemindRequest(_Model):
    ids: list[str] = Field(..., min_length=1, max_length=200)
    session: str | None = Field(None, max_length=300, description="narrow the lookup to this session")


class RemindItem(_Model):
    id: str
    session_id: str
    path: str
    role: str
    time: str | None = None
    text: str = Field(description="the archived text exactly as stored")


class RemindResponse(_Model):
    items: list[RemindItem]
    missing: list[str] = Field(default_factory=list)


class MarkRequest(_Model):
    id: str = Field(..., min_length=1, max_length=200, description="a message id (m-<hex>)")
    weight: float = Field(..., ge=0, le=100)
    session: str | None = Field(None, max_length=300)


class MarkResponse(_Model):
    id: str
    session_id: str
    path: str
    weight: float
