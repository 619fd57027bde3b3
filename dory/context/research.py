"""Research (SPEC §5): a question answered only from lines the corpus holds, every claim cited.

The service gathers the evidence (hybrid search, then the exact lines of each hit) into `Passage`s;
this module writes the answer and the artifact:

- extractive (no LLM, or the LLM failed): the evidence sentences sharing the most content words with
  the question (the search's own query terms), each followed by [path:start-end] of its lines;
- the LLM: asked to cite [path:start-end] after every claim. Every citation is checked: its path must
  be one of the evidence paths and its lines inside that file. One that does not resolve is removed
  from the text and reported; an answer left with no citation at all is not grounded, so the
  extractive answer replaces it.
"""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass
from typing import Any

from dory.llm.client import LlmClient
from dory.memory.entities import slugify
from dory.models import DroppedCitation, ResearchCitation, ResearchEvidence
from dory.search.query import parse_query, words

FOLDER = "references/research/"
MAX_SENTENCES = 3
# A sentence of the hit two places lower needs one more question term to come first: search rank is
# evidence too. On SciFact (bm25, k=5) the first citation named an expected abstract 0.460 -> 0.485
# (queries 0-199) and 0.433 -> 0.473 (200-499, not used to choose), citation precision 0.39 -> 0.43.
RANK_PENALTY = 0.5
MAX_SENTENCE_CHARS = 400
QUOTE_CHARS = 240
SLUG_CHARS = 60
NO_EVIDENCE = "No evidence for this question was found in the corpus."
NO_OVERLAP = "No sentence of the evidence shares a word with the question; read the evidence below."

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string", "maxLength": 6000}},
    "required": ["answer"],
    "additionalProperties": False,
}
PROMPT = (
    "You answer a question using only the evidence given: lines of notes, each line numbered. "
    "After every claim, cite the lines it comes from as [path:start-end], with a path and line numbers "
    "exactly as shown. Cite nothing else. If the evidence does not answer the question, say so."
)

_BRACKET = re.compile(r"\[([^\[\]\n]{1,600})\]")
_CITATION = re.compile(r"^\s*(.+?):(\d{1,9})(?:\s*[-–]\s*(\d{1,9}))?\s*$")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+")
_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_QUOTE_MARKER = re.compile(r"^\s*>\s?")


@dataclass(frozen=True)
class Passage:
    """One piece of evidence: the exact lines `start_line..end_line` of `path` as read now."""

    path: str
    title: str
    start_line: int
    end_line: int
    lines: list[str]
    total_lines: int
    score: float

    def evidence(self) -> ResearchEvidence:
        flat = " ".join(" ".join(self.lines).split())
        quote = flat if len(flat) <= QUOTE_CHARS else flat[: QUOTE_CHARS - 1].rstrip() + "…"
        return ResearchEvidence(
            path=self.path,
            title=self.title,
            start_line=self.start_line,
            end_line=self.end_line,
            quote=quote,
            score=self.score,
        )


@dataclass(frozen=True)
class Sentence:
    text: str
    path: str
    start_line: int
    end_line: int

    @property
    def citation(self) -> str:
        return cite(self.path, self.start_line, self.end_line)


def cite(path: str, start: int, end: int) -> str:
    return f"[{path}:{start}-{end}]"


def sources(passages: list[Passage]) -> list[str]:
    return list(dict.fromkeys(p.path for p in passages))


# -- the extractive answer ---------------------------------------------------------------------------
def extractive_answer(question: str, passages: list[Passage]) -> tuple[str, list[ResearchCitation]]:
    """The sentences sharing the most question terms, less RANK_PENALTY per place their hit is below
    the first (ties: the better hit, then the earlier line)."""
    if not passages:
        return NO_EVIDENCE, []
    terms = set(parse_query(question).all_terms)
    scored = []
    for rank, passage in enumerate(passages):
        for order, sentence in enumerate(sentences(passage)):
            shared = len(terms & set(words(sentence.text)))
            if shared:
                scored.append((RANK_PENALTY * rank - shared, rank, order, sentence))
    scored.sort(key=lambda row: row[:3])
    chosen: list[Sentence] = []
    for *_, sentence in scored:
        if sentence.text.lower() not in {s.text.lower() for s in chosen}:
            chosen.append(sentence)
        if len(chosen) == MAX_SENTENCES:
            break
    if not chosen:
        return NO_OVERLAP, []
    answer = " ".join(f"{s.text} {s.citation}" for s in chosen)
    citations = [
        ResearchCitation(path=s.path, start_line=s.start_line, end_line=s.end_line, text=s.citation) for s in chosen
    ]
    return answer, citations


def sentences(passage: Passage) -> list[Sentence]:
    """The passage's prose as sentences with their line ranges. A paragraph's wrapped lines join
    into one text; a heading, a blank line, a fence or a list item starts a new block."""
    out: list[Sentence] = []
    block: list[tuple[int, str]] = []
    for number, line in enumerate(passage.lines, passage.start_line):
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "```", "~~~", "---", "|")):
            out += _block_sentences(passage.path, block)
            block = []
            continue
        text = _QUOTE_MARKER.sub("", line)
        if _LIST_MARKER.match(text):
            out += _block_sentences(passage.path, block)
            block = []
            text = _LIST_MARKER.sub("", text)
        block.append((number, text.strip()))
    return out + _block_sentences(passage.path, block)


def _block_sentences(path: str, block: list[tuple[int, str]]) -> list[Sentence]:
    if not block:
        return []
    starts, numbers, joined = [], [], ""
    for number, text in block:
        starts.append(len(joined))
        numbers.append(number)
        joined += text + " "
    bounds = [0, *(m.end() for m in _SENTENCE_END.finditer(joined)), len(joined)]
    out = []
    for begin, end in itertools.pairwise(bounds):
        text = joined[begin:end].strip()
        if len(words(text)) < 2:  # a lone word or a stray mark is no sentence
            continue
        first = numbers[bisect.bisect_right(starts, begin) - 1]
        last = numbers[bisect.bisect_right(starts, max(begin, end - 2)) - 1]
        if len(text) > MAX_SENTENCE_CHARS:
            text = text[: MAX_SENTENCE_CHARS - 1].rstrip() + "…"
        out.append(Sentence(text, path, first, last))
    return out


# -- the LLM answer ----------------------------------------------------------------------------------
def llm_input(question: str, passages: list[Passage]) -> str:
    parts = [f"Question: {question}", "", "Evidence:"]
    for passage in passages:
        parts.append(f"\n{cite(passage.path, passage.start_line, passage.end_line)} {passage.title}")
        parts += [f"{number}: {line}" for number, line in enumerate(passage.lines, passage.start_line)]
    return "\n".join(parts)


def ask_llm(client: LlmClient, question: str, passages: list[Passage]) -> str:
    """The model's answer text; raises LlmUnavailable or LlmBadOutput (the caller falls back)."""
    answer = client.complete_json(PROMPT, llm_input(question, passages), SCHEMA, "research")
    return str(answer["answer"]).strip()


def check_citations(answer: str, passages: list[Passage]) -> tuple[str, list[ResearchCitation], list[DroppedCitation]]:
    """The answer with every citation that does not resolve removed, the kept ones and the dropped ones.

    A bracket that does not look like a citation (a markdown link's text, a checkbox) is left alone;
    one bracket may hold several citations separated by `;` or `,`."""
    by_path = {p.path: p for p in passages}
    kept: list[ResearchCitation] = []
    dropped: list[DroppedCitation] = []

    def rewrite(match: re.Match[str]) -> str:
        parts = re.split(r"[;,]", match.group(1))
        parsed = [_CITATION.match(part) for part in parts]
        if not all(parsed):
            return match.group(0)
        good = []
        for found in parsed:
            assert found is not None  # all() above
            path = found.group(1).strip().removeprefix("./")
            start = int(found.group(2))
            end = int(found.group(3) or found.group(2))
            text = cite(path, start, end)
            why = _unresolved(by_path.get(path), path, start, end)
            if why is None:
                good.append(text)
                kept.append(ResearchCitation(path=path, start_line=start, end_line=end, text=text))
            else:
                dropped.append(DroppedCitation(path=path, start_line=start, end_line=end, text=text, reason=why))
        return " ".join(good)

    cleaned = _BRACKET.sub(rewrite, answer)
    cleaned = re.sub(r"[ \t]+([.,;:!?])", r"\1", re.sub(r"[ \t]{2,}", " ", cleaned)).strip()
    return cleaned, kept, dropped


def _unresolved(passage: Passage | None, path: str, start: int, end: int) -> str | None:
    if passage is None:
        return f"{path} is not among the evidence"
    if start < 1 or end < start or end > passage.total_lines:
        return f"lines {start}-{end} are not inside {path} (lines 1-{passage.total_lines})"
    return None


# -- the artifact ------------------------------------------------------------------------------------
def render(question: str, answer: str, evidence: list[ResearchEvidence], dropped: list[DroppedCitation]) -> str:
    """The artifact's body: Question, Answer, Evidence, Sources (the frontmatter is the write's)."""
    lines = [f"# Research: {_one_line(question)}", "", "## Question", "", question.strip(), "", "## Answer", "", answer]
    if dropped:
        listed = ", ".join(f"{d.text} ({d.reason})" for d in dropped)
        lines += ["", f"_Citations dropped because they do not resolve: {listed}_"]
    lines += ["", "## Evidence", ""]
    lines += [f"- {cite(e.path, e.start_line, e.end_line)} {e.title}: “{e.quote}”" for e in evidence] or ["(none)"]
    lines += ["", "## Sources", ""]
    lines += [f"- {path}" for path in dict.fromkeys(e.path for e in evidence)] or ["(none)"]
    return "\n".join(lines) + "\n"


def artifact_name(day: str, question: str, attempt: int) -> str:
    """references/research/<day>-<slug>.md; attempt 2, 3, … add a suffix (a clash never overwrites)."""
    slug = slugify(question)[:SLUG_CHARS].rstrip("-") or "question"
    suffix = f"-{attempt}" if attempt > 1 else ""
    return f"{FOLDER}{day}-{slug}{suffix}.md"


def _one_line(text: str) -> str:
    return " ".join(text.split())
