"""`dory research`: gather evidence with the service's own search and reads, answer, and (--save) write.

The evidence is the top search hits (never logged as recalls: research is not a person recalling a
note), each re-read through `get` so the quote and the line numbers are the file's as it is now.
Earlier research artifacts are left out of the evidence: they are answers, not sources.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from dory import llm
from dory.config import Settings
from dory.context import research
from dory.corpus.roots import check_writable, write_root
from dory.errors import AlreadyExists, BackendUnavailable, NotFound
from dory.models import (
    AnswerMethod,
    DroppedCitation,
    GetRequest,
    GetResponse,
    ResearchCitation,
    ResearchRequest,
    ResearchResponse,
    SearchRequest,
    SearchResponse,
    WriteRequest,
    WriteResponse,
)

# Asked of search beyond k, so that leaving out earlier research artifacts still leaves k hits.
EXTRA_HITS = 5
MAX_NAME_ATTEMPTS = 100

Search = Callable[[SearchRequest], SearchResponse]
Get = Callable[[GetRequest], GetResponse]
Write = Callable[[WriteRequest], WriteResponse]


class Researcher:
    def __init__(self, settings: Settings, search: Search, get: Get, write: Write) -> None:
        self.settings = settings
        self.search = search
        self.get = get
        self.write = write

    def run(self, req: ResearchRequest) -> ResearchResponse:
        if req.save:  # refuse before any work (and any LLM call) is spent
            check_writable(self.settings, f"a research note under {research.FOLDER}")
        warnings: list[str] = []
        passages = self.evidence(req, warnings)
        if req.save and not passages:
            raise NotFound(
                "no evidence for this question in the corpus: there is nothing to save", question=req.question
            )
        method, answer, kept, dropped = self.answer(req, passages, warnings)
        evidence = [p.evidence() for p in passages]
        response = ResearchResponse(
            question=req.question,
            answer=answer,
            method=method,
            evidence=evidence,
            sources=research.sources(passages),
            citations=kept,
            dropped_citations=dropped,
            markdown=research.render(req.question, answer, evidence, dropped),
            warnings=warnings,
        )
        if req.save:
            response.saved = self.save(response)
        return response

    def evidence(self, req: ResearchRequest, warnings: list[str]) -> list[research.Passage]:
        found = self.search(SearchRequest(query=req.question, mode=req.mode, k=req.k + EXTRA_HITS, record=False))
        warnings += found.warnings
        passages = []
        for hit in found.hits:
            if hit.weak or hit.path.startswith(research.FOLDER):
                continue
            try:
                read = self.get(
                    GetRequest(path=hit.path, from_line=hit.start_line, lines=hit.end_line - hit.start_line + 1)
                )
            except NotFound:
                warnings.append(f"{hit.path} was found by search but is gone from the corpus; reindex")
                continue
            lines = read.content.split("\n")
            passages.append(
                research.Passage(
                    hit.path, read.title, read.from_line, read.to_line, lines, read.total_lines, round(hit.score, 4)
                )
            )
            if len(passages) == req.k:
                break
        return passages

    def answer(
        self, req: ResearchRequest, passages: list[research.Passage], warnings: list[str]
    ) -> tuple[AnswerMethod, str, list[ResearchCitation], list[DroppedCitation]]:
        if not passages:
            return "none", research.NO_EVIDENCE, [], []
        client = llm.from_settings(self.settings) if req.llm else None
        dropped: list[DroppedCitation] = []
        if client is not None:
            with client:
                try:
                    text, kept, dropped = research.check_citations(
                        research.ask_llm(client, req.question, passages), passages
                    )
                    if kept:
                        return "llm", text, kept, dropped
                    warnings.append("the model's answer cited no evidence that resolves; the answer was extracted")
                except BackendUnavailable as exc:
                    warnings.append(f"{exc.message}; the answer was extracted without the model")
        text, kept = research.extractive_answer(req.question, passages)
        return "extractive", text, kept, dropped

    def save(self, response: ResearchResponse) -> str:
        """Create the artifact through the exact write path; a name already taken gets a suffix."""
        day = dt.datetime.now(dt.UTC).date().isoformat()
        frontmatter = {
            "title": f"Research: {' '.join(response.question.split())}",
            "type": "research",
            "source_kind": "research",
            "question": response.question,
            "created": day,
            "sources": response.sources,
        }
        for attempt in range(1, MAX_NAME_ATTEMPTS + 1):
            rel = research.artifact_name(day, response.question, attempt)
            if (write_root(self.settings, rel) / rel).exists():
                continue
            request = WriteRequest(
                path=rel, kind="create", content=response.markdown, frontmatter=frontmatter, source="dory research"
            )
            try:
                return self.write(request).path
            except AlreadyExists:  # written by someone else since the check above
                continue
        raise AlreadyExists(
            f"{MAX_NAME_ATTEMPTS} research notes for this question already exist today",
            path=research.artifact_name(day, response.question, 1),
        )
