"""Active memory: one prompt in, `NONE` or a compact block of synthesis and evidence out (SPEC §5)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from dory.models.common import _Model
from dory.models.search import Confidence

ActiveStageName = Literal[
    "profile", "policy", "keyword_search", "durable_search", "session_recall", "admission", "block"
]


class ActiveMemoryRequest(_Model):
    prompt: str = Field(..., min_length=1, max_length=20_000, description="the user's prompt, as the agent got it")
    profile: str = Field(
        "auto",
        min_length=1,
        max_length=64,
        description="auto (classified from the prompt), or a wake profile: default, coding, writing, privacy, casual",
    )
    deadline_ms: int = Field(800, ge=50, le=10_000, description="the answer comes back within this many ms")
    max_evidence: int = Field(3, ge=1, le=8, description="evidence lines in the block at most")
    max_chars: int = Field(1200, ge=200, le=4000, description="hard character cap of the block")

    @field_validator("prompt")
    @classmethod
    def _usable(cls, value: str) -> str:
        if "\x00" in value:
            raise ValueError("prompt contains a NUL byte")
        if not value.strip():
            raise ValueError("prompt is blank")
        return value


class ActiveEvidence(_Model):
    path: str
    start_line: int
    end_line: int
    quote: str = Field(description="the hit's snippet on one line, shortened")
    confidence: Confidence
    source: Literal["durable", "session"]


class ActiveStage(_Model):
    name: ActiveStageName
    ran: bool
    ms: float = Field(description="time the stage took (0 when it did not run)")
    note: str | None = Field(None, description="why it was skipped or dropped, or what it decided")


class ActiveMemoryResponse(_Model):
    found: bool = Field(description="false when the block is exactly NONE")
    block: str = Field(description="NONE, or the synthesis and evidence lines")
    profile: str
    profile_reason: str = Field(description="why this profile: given, or the classifier's signal")
    synthesis: str | None = None
    evidence: list[ActiveEvidence] = Field(default_factory=list)
    stages: list[ActiveStage]
    dropped_stages: list[str] = Field(default_factory=list, description="stages skipped because the deadline passed")
    excluded: list[str] = Field(default_factory=list, description="paths the profile's source policy kept out")
    deadline_ms: int
    elapsed_ms: float
    warnings: list[str] = Field(default_factory=list)
