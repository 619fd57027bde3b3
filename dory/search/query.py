"""User query → terms, phrases and a safe FTS5 MATCH expression.

A user query never reaches FTS5 as typed: quotes, parentheses, `*`, `-`, `NEAR`, `AND`, `OR`,
`NOT`, column filters and stray unicode are all reduced to word tokens, which are then quoted. The
only syntax Dory honours is its own: "double-quoted phrases" and a trailing `*` for a prefix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_WORD = re.compile(r"\w+", re.UNICODE)
_PHRASE = re.compile(r'"([^"]+)"')
_PREFIX = re.compile(r"(\w+)\*")
_IDENTIFIER = re.compile(r"\w+(?:[./@_:-]\w+)+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]{3,}")

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
    ]
)


@dataclass
class ParsedQuery:
    raw: str
    terms: list[str] = field(default_factory=list)  # distinct lowercase words, stopwords removed
    phrases: list[list[str]] = field(default_factory=list)  # quoted phrases and punctuated identifiers
    prefixes: list[str] = field(default_factory=list)
    cjk: list[str] = field(default_factory=list)  # runs of CJK text for the trigram table

    @property
    def all_terms(self) -> list[str]:
        return self.terms + [t for p in self.phrases for t in p if t not in self.terms]


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def parse_query(text: str) -> ParsedQuery:
    parsed = ParsedQuery(raw=text)
    for phrase in _PHRASE.findall(text):
        tokens = words(phrase)
        if len(tokens) > 1:
            parsed.phrases.append(tokens)
    for ident in _IDENTIFIER.findall(text):
        tokens = words(ident)
        if len(tokens) > 1 and tokens not in parsed.phrases:
            parsed.phrases.append(tokens)
    parsed.prefixes = list(dict.fromkeys(p.lower() for p in _PREFIX.findall(text)))
    all_words = list(dict.fromkeys(words(text)))
    content = [w for w in all_words if w not in STOPWORDS and w not in parsed.prefixes]
    # A query made only of stopwords ("what is it") still searches for them.
    parsed.terms = content or [w for w in all_words if w not in parsed.prefixes]
    parsed.cjk = _CJK.findall(text)
    return parsed


def _quote(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'


def fts_match(parsed: ParsedQuery) -> str | None:
    """An OR of quoted terms, phrases and prefixes; bm25 rewards documents matching more of them."""
    clauses = [_quote(term) for term in parsed.terms]
    clauses += [_quote(" ".join(phrase)) for phrase in parsed.phrases]
    clauses += [_quote(prefix) + "*" for prefix in parsed.prefixes]
    return " OR ".join(clauses) if clauses else None


def trigram_match(parsed: ParsedQuery) -> str | None:
    return " OR ".join(_quote(run) for run in parsed.cjk) if parsed.cjk else None
