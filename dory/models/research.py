"""Research: a question answered from the corpus's own evidence, every claim cited by path and lines."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from dory.models.common import _Model

AnswerMethod = Literal["llm", "extractive", "none"]


class ResearchRequest(_Model):
    question: str = Field(..., min_length=1, max_length=2000)
    k: int = Field(5, ge=1, le=20, description="how many search hits become evidence")
    mode: Literal["hybrid", "bm25"] = Field(
        "hybrid", description="the search that finds the evidence (hybrid uses vectors when there are some)"
    )
    llm: bool = Field(True, description="let the configured [llm] write the answer (false: extractive)")
    save: bool = Field(False, description="write the artifact to references/research/<date>-<slug>.md")

    @field_validator("question")
    @classmethod
    def _no_nul(cls, value: str) -> str:
        if "\x00" in value:
            raise ValueError("question contains a NUL byte")
        if not value.strip():
            raise ValueError("question is blank")
        return value


class ResearchEvidence(_Model):
    path: str
    title: str
    start_line: int
    end_line: int
    quote: str = Field(description="the lines as read now, on one line, cut to a short quote")
    score: float


class ResearchCitation(_Model):
    path: str
    start_line: int
    end_line: int
    text: str = Field(description="the citation as written, e.g. [notes/a.md:3-5]")


class DroppedCitation(ResearchCitation):
    reason: str = Field(description="why it does not resolve: not among the evidence, or lines outside the file")


class ResearchResponse(_Model):
    question: str
    answer: str
    method: AnswerMethod = Field(description="who wrote the answer: the llm, extraction, or none (no evidence)")
    evidence: list[ResearchEvidence]
    sources: list[str] = Field(description="the distinct paths of the evidence")
    citations: list[ResearchCitation] = Field(default_factory=list, description="the citations the answer keeps")
    dropped_citations: list[DroppedCitation] = Field(default_factory=list)
    markdown: str = Field(description="the artifact: Question, Answer, Evidence, Sources")
    saved: str | None = Field(None, description="the corpus path the artifact was written to (--save)")
    warnings: list[str] = Field(default_factory=list)
