"""Admission and the block: which hits count as evidence, and the compact text an agent reads.

Admission keeps a hit only with real evidence: never a weak hit (no retriever matched it for real), and
then a measure of real overlap with the prompt (see `admitted`). The
block is extractive: its synthesis is the evidence sentence sharing most words with the prompt, followed by
at most N lines `path:start-end — quote`. Lines that would pass the character cap are left out whole; the
line saying which stages the deadline dropped is always kept.
"""

from __future__ import annotations

import re

from dory.models import ActiveEvidence, SearchHit

NONE = "NONE"
QUOTE_CHARS = 200
VECTOR_ADMIT = 0.5  # MiniLM cosine between a prompt and a passage that answers it
SYNTHESIS_CHARS = 280
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"\w{3,}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_STOP_TEXT = (
    "the and for are but not you all any can had her was one our out has him his how its let may who why "
    "did get got use with this that what when where which will would could should about from have into "
    "they them then than there their your yours were been being does done also just more most some such"
)
_STOP = frozenset(_STOP_TEXT.split())


def admitted(hit: SearchHit, prompt_terms: set[str]) -> bool:
    """Real evidence: not weak, and one of: durable search's confidence medium or high (its coverage and
    cosine measures), a cosine of at least VECTOR_ADMIT, or enough of the prompt's words in the hit.

    Session recall's confidence says only which hit came first, so a session hit needs the cosine or the
    words. Enough words: half of the prompt's content words, at least two (one for a one-word prompt)
    and at most four (a long prompt is not expected to be quoted whole)."""
    if hit.weak:
        return False
    if hit.evidence_class != "session" and hit.confidence in ("high", "medium"):
        return True
    if hit.explain is not None and (hit.explain.vector_score or 0.0) >= VECTOR_ADMIT:
        return True
    shared = terms(" ".join([hit.title, *hit.heading_path, hit.snippet])) & prompt_terms
    needed = max(min(2, len(prompt_terms)), min(4, (len(prompt_terms) + 1) // 2))
    return bool(prompt_terms) and len(shared) >= needed


def terms(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.casefold()) if w not in _STOP}


def one_line(text: str, limit: int) -> str:
    flat = " ".join(_CONTROL.sub(" ", text).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def synthesis(prompt: str, hit: SearchHit) -> str:
    """The sentence of the best hit that shares most words with the prompt (the first one on a tie)."""
    wanted = terms(prompt)
    sentences = [s.strip(" …-*#>") for s in _SENTENCE.split(hit.snippet) if s.strip(" …-*#>")]
    if not sentences:
        return one_line(hit.title, SYNTHESIS_CHARS)
    best = max(sentences, key=lambda s: (len(terms(s) & wanted), -sentences.index(s)))
    return one_line(best, SYNTHESIS_CHARS)


def evidence(hit: SearchHit) -> ActiveEvidence:
    return ActiveEvidence(
        path=hit.path,
        start_line=hit.start_line,
        end_line=hit.end_line,
        quote=one_line(hit.snippet, QUOTE_CHARS),
        confidence=hit.confidence,
        source="session" if hit.evidence_class == "session" else "durable",
    )


def render(profile: str, summary: str, items: list[ActiveEvidence], dropped: list[str], max_chars: int) -> str:
    """The block, at most `max_chars` characters; evidence lines that do not fit are left out whole."""
    tail = f"(dropped past the deadline: {', '.join(dropped)})" if dropped else ""
    head = one_line(f"Memory ({profile}): {summary}", max(max_chars - len(tail) - 1, 40))
    lines = [head]
    used = len(head) + (len(tail) + 1 if tail else 0)
    for item in items:
        line = f"- {item.path}:{item.start_line}-{item.end_line} — {item.quote}"
        if used + len(line) + 1 > max_chars:
            break
        lines.append(line)
        used += len(line) + 1
    if tail:
        lines.append(tail)
    return "\n".join(lines)[:max_chars]
