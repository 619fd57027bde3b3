"""Deterministic extraction from conversation turns: the fallback when no language model is configured.

Used by compaction (and by digests): exact values (paths, URLs, ids, error lines, commands) are copied
verbatim, never paraphrased; open tasks are found by cue phrases, decisions by stricter ones (a
choice stated as made, with its subject, and not under a negation, a doubt or a question mark:
`is_decision`), each named by the clause it decides (`decision_subject`); the sentences that
best represent a stretch of conversation are picked by centrality (similarity of a sentence's word
profile to the whole's, TF-IDF weighted), with near-duplicates dropped. Digests also want what
*happened*: `salient` favours informative sentences that report an event in the first person
("I fixed…", "we went…", "I'm going to…"), which is where news sits in a conversation.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from dory.corpus.shorten import shorten

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])|\n+")
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
# Function words and chat filler: they say nothing about what a sentence or a query is about.
_STOP_WORDS = """
a about after again all also am an and any are as at be because been before being but by can could did do
does doing don't down for from had has have having he her here hers him his how i i'm if in into is it it's
its just let's like me more most my no not now of off on once only or other our out over own same she should
so some such than that that's the their them then there these they this those through to too under until up
very was we we'll were what when where which while who why will with would you you're your yeah yes oh okay ok
really much thanks thank great good wow cool
"""
STOP = frozenset(_STOP_WORDS.split())

URL = re.compile(r"https?://[^\s<>()\"'`\]]+[^\s<>()\"'`\].,;:!?]")
PATH = re.compile(
    r"(?<![\w/.:-])(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]+\.[A-Za-z0-9]{1,8}(?::\d+)?(?![\w/])"
    r"|(?<![\w/.-])[\w-]+\.(?:py|md|ts|tsx|js|json|toml|yaml|yml|rs|go|sh|sql|txt|cfg|ini|lock)\b"
)
IDENT = re.compile(
    r"\b(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{12,40}|"
    r"[A-Z][A-Z0-9]+-\d+)\b|(?<![\w#])#\d{2,}\b"
)
ERROR_LINE = re.compile(
    r"(?:error|exception|traceback|failed|fatal|panic|denied|refused|not found|"
    r"\b[45]\d\d\b|errno)",
    re.IGNORECASE,
)
COMMAND_CALL = re.compile(r"^(?:bash|shell|exec|run|local_shell|terminal|command)\s*:\s*(.+)$", re.IGNORECASE)
EDIT_CALL = re.compile(
    r"^(?:edit|write|multiedit|apply_patch|create|str_replace\w*|notebookedit|patch)\s*:\s*(.+)$", re.IGNORECASE
)
# A decision is a choice someone states as made: a first-person subject that decided, chose, settled
# on or agreed to something ("we decided to…", "I went with…"), a collective "let's go with / we'll
# use…", "I'll use X instead of Y", "the decision is to…", or a `Decision:` label. Talk *about*
# deciding is not one: "a big decision", "what made you decide?", "agreed!", "let's keep going".
_ADVERBS = r"(?: (?:just|finally|now|already|also|eventually|then|all|both|together|jointly|recently|quickly))*"
_CHOICE = r"(?:go with|stick with|switch to|move to|settle on|opt for|use|adopt|keep using|standardi[sz]e on)"
DECISION = re.compile(
    rf"\b(?:i|we)(?:'ve| have| had)?{_ADVERBS} (?:decided|chose|picked(?! up\b)|opted for|settled on|went with|"
    r"switched to|agreed (?:to|on|that)|made (?:the|a|our|my) (?:decision|call|choice) to)\b"
    rf"|\b(?:let's|let us|we(?:'ll| will| are going to|'re going to)){_ADVERBS} {_CHOICE}\b"
    rf"|\bi(?:'ll| will|'m going to| am going to){_ADVERBS} (?:go with|stick with|switch to|settle on|opt for)\b"
    r"|\bi(?:'ll| will|'m going to| am going to) use\b.{1,80}?\b(?:instead of|rather than)\b"
    r"|\b(?:the|our|my) (?:decision|choice|plan) (?:is|was) (?:to|that)\b"
    r"|^(?:decision|decided|chosen)\s*:"
    r"|^(?:ok(?:ay)?,?\s+)?(?:going with|went with|settled on|switch(?:ed|ing) to|decided (?:to|on|against))\b"
    r"|^from now on\b|\bfrom now on,? (?:i|we|let's)\b",
    re.IGNORECASE,
)
# A cue under a negation, a condition or a doubt states no decision ("if we decide to…", "we never
# agreed to…", "maybe we'll use…"); neither does a question.
_NOT_SETTLED = re.compile(
    r"(?:\b(?:not|never|if|whether|unless|maybe|perhaps|might|may|could|should|would)\b|n't)[\s,]*(?:\w+[\s,]+){0,2}$",
    re.IGNORECASE,
)


def is_decision(text: str) -> bool:
    """Whether a sentence states a decision taken (see DECISION), not a question or a doubt about one."""
    text = text.replace("\u2019", "'")  # typographic apostrophes: "let\u2019s" is "let's"
    if text.rstrip().endswith("?"):
        return False
    return any(not _NOT_SETTLED.search(text[: match.start()]) for match in DECISION.finditer(text))


# What the decision is, read off its sentence: the clause after the cue, without its subject,
# auxiliaries and "decided to", up to where the reasons start ("…, because…", "… - even though…").
_LEAD = re.compile(
    r"^(?:(?:ok(?:ay)?|so|and|but|then),?\s+)?(?:from now on,?\s+)?"
    r"(?:(?:the|our|my) (?:decision|choice|plan) (?:is|was) (?:to |that )?|(?:decision|decided|chosen)\s*:\s*|"
    rf"(?:i|we|let's|let us)(?:'ve|'ll|'re|'m| have| had| will| are going to| am going to)?{_ADVERBS}\s+)?"
    r"(?:(?:decided|made (?:the|a|our|my) (?:decision|call|choice)) (?:to|on|that)\s+)?",
    re.IGNORECASE,
)
_CLAUSE_END = re.compile(
    r"[,;:!?()\[\]]|\s[-–—]\s|\.(?:\s|$)|\s'cause\b|\b(?:because|since|so that|so|but|which|even though|although|"
    r"though|while|as (?:it|they|we|i|this|that|the)|given that|considering)\b",
    re.IGNORECASE,
)
SUBJECT_CHARS = 80


def decision_subject(text: str) -> str:
    """A decision's name: the clause it decides ("We decided to use SQLite because…" → "Use SQLite"),
    at most SUBJECT_CHARS and cut at a word; the sentence's start when no cue is found."""
    flat = " ".join(text.replace("\u2019", "'").split())
    start = next((m.start() for m in DECISION.finditer(flat) if not _NOT_SETTLED.search(flat[: m.start()])), 0)
    clause = _LEAD.sub("", flat[start:], count=1)
    end = _CLAUSE_END.search(clause)
    clause = (clause[: end.start()] if end else clause).strip(" .,;:-–—'\"")
    if len(clause.split()) < 1 or not any(ch.isalnum() for ch in clause):
        clause = flat.rstrip(".!?")
    clause = shorten(clause, SUBJECT_CHARS).removesuffix("…").rstrip(" ,;:-–—")
    return clause[:1].upper() + clause[1:]


PENDING = re.compile(
    r"(?:^\s*[-*] \[ \]|\btodo\b|\bfixme\b|\bnext(?: step)?s?\b|\bneed(?:s)? to\b|\bstill (?:need|have|to)\b|"
    r"\bremaining\b|\bpending\b|\bnot yet\b|\blater\b|\bfollow[- ]up\b|\bplan(?:ning)? to\b|\bgoing to\b|"
    r"\bwill (?:try|look|check|fix|add|write|send)\b)",
    re.IGNORECASE,
)


# Someone reporting what they did: a first-person subject, then a past-tense verb (regular -ed or a
# common irregular one), perhaps after "have" or "just".
_IRREGULAR = """went got made took saw began bought found had met ran won gave wrote read built did left came felt told
tried became lost sold spent taught caught drew sang flew drove grew fell kept paid brought thought heard held chose
been gone done seen taken begun shipped set put cut hit sent broke"""
DONE = re.compile(
    r"\b(?:i|we)(?:'ve| have| had)?(?: (?:just|recently|finally|also|actually|already|since))* "
    rf"(?:\w+ed|{'|'.join(_IRREGULAR.split())})\b",
    re.IGNORECASE,
)
WHEN = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|recently|just|finally|ago|last (?:week|weekend|night|month|"
    r"year|\w+day)|this (?:morning|afternoon|evening|week|weekend|month)|next (?:week|month|year))\b",
    re.IGNORECASE,
)
PLAN = re.compile(
    r"\b(?:i|we)(?:'m| am|'re| are) (?:going to|gonna|planning|about to|thinking (?:of|about))\b|"
    r"\b(?:i|we)(?:'ll| will| plan to)\b",
    re.IGNORECASE,
)


# A turn written as `**Name** (anchor): text` or `Name: text` (transcripts of people talking).
_SPEAKER = re.compile(
    r"^\s*(?:\*\*(?P<bold>[^*\n]{1,40})\*\*|(?P<plain>[A-Z][\w .'-]{0,30}))"
    r"\s*(?:\([^)\n]{1,20}\))?\s*:(?!//)\s*"
)


@dataclass(frozen=True)
class Sentence:
    text: str
    turn: int  # index of the turn it came from
    role: str
    speaker: str | None = None  # the person who said it, when the turn names one

    def attributed(self) -> str:
        """The sentence with its speaker in front (`Alice: …`), so a summary line says who said it."""
        return f"{self.speaker}: {self.text}" if self.speaker else self.text


# Labels that open a line like a speaker would but are not people.
_NOT_SPEAKERS = frozenset(
    {
        "todo",
        "fixme",
        "note",
        "notes",
        "next",
        "next steps",
        "next step",
        "decision",
        "decisions",
        "error",
        "warning",
        "summary",
        "update",
        "status",
        "result",
        "output",
        "question",
        "answer",
        "q",
        "a",
        "tl;dr",
        "important",
        "edit",
        "fix",
        "done",
        "plan",
        "goal",
    }
)


def sentences(turns: list[tuple[str, str]]) -> list[Sentence]:
    """(role, text) turns split into sentences (code fences skipped: values are taken from them separately)."""
    out = []
    for index, (role, text) in enumerate(turns):
        prose = re.sub(r"```.*?(?:```|$)", " ", text, flags=re.DOTALL)
        speaker, prose = split_speaker(prose)
        for piece in _SENTENCE.split(prose):
            piece = " ".join(piece.split())
            if len(piece) >= 12 and any(ch.isalpha() for ch in piece):
                out.append(Sentence(piece, index, role, speaker))
    return out


def split_speaker(text: str) -> tuple[str | None, str]:
    """(the speaker a turn names, the rest of it): `**Alice** (10:02): hi` → ("Alice", "hi"); a turn
    that names nobody (or opens with a label such as `TODO:`) → (None, text)."""
    if (m := _SPEAKER.match(text)) and (
        name := (m.group("bold") or m.group("plain")).strip()
    ).lower() not in _NOT_SPEAKERS:
        return name, text[m.end() :]
    return None, text


def words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOP and len(w) > 1]


def central(
    items: list[Sentence], limit: int, exclude: set[str] | None = None, max_words: int | None = None
) -> list[Sentence]:
    """The most representative sentences (TF-IDF cosine to the centroid), at most `limit` of them and at
    most `max_words` words together, in their original order."""
    exclude = exclude or set()
    bags = [Counter(words(s.text)) for s in items]
    df: Counter[str] = Counter()
    for bag in bags:
        df.update(bag.keys())
    n = len(items)
    idf = {w: math.log(1 + n / c) for w, c in df.items()}
    centroid: defaultdict[str, float] = defaultdict(float)
    for bag in bags:
        for w, c in bag.items():
            centroid[w] += c * idf[w]
    norm_c = math.sqrt(sum(v * v for v in centroid.values())) or 1.0
    scored = []
    for i, bag in enumerate(bags):
        vec = {w: c * idf[w] for w, c in bag.items()}
        norm = math.sqrt(sum(v * v for v in vec.values()))
        if norm == 0 or items[i].text in exclude:
            continue
        # Long sentences carry more: dampened length bonus, so a one-word reply never wins.
        score = sum(v * centroid[w] for w, v in vec.items()) / (norm * norm_c) * math.log(2 + len(bag))
        scored.append((score, i))
    return _pick(items, bags, scored, limit, max_words)


def salient(
    items: list[Sentence], limit: int, max_words: int | None = None, exclude: set[str] | None = None
) -> list[Sentence]:
    """The sentences that carry the news: informative ones (summed IDF of their words), favoured when
    they report a first-person event, name a time, or announce a plan; questions count for little.
    At most `limit` sentences and `max_words` words together, near-duplicates dropped, in order."""
    exclude = exclude or set()
    bags = [Counter(words(s.text)) for s in items]
    df: Counter[str] = Counter()
    for bag in bags:
        df.update(bag.keys())
    scored = []
    for i, (item, bag) in enumerate(zip(items, bags, strict=True)):
        if not bag or item.text in exclude:
            continue
        score = sum(math.log(1 + len(items) / df[w]) for w in bag)
        score *= (2.0 if DONE.search(item.text) else 1.0) * (1.5 if WHEN.search(item.text) else 1.0)
        score *= (1.3 if PLAN.search(item.text) else 1.0) * (0.3 if item.text.endswith("?") else 1.0)
        scored.append((score, i))
    return _pick(items, bags, scored, limit, max_words)


def _pick(
    items: list[Sentence], bags: list[Counter[str]], scored: list[tuple[float, int]], limit: int, max_words: int | None
) -> list[Sentence]:
    """The best-scored sentences that fit, skipping near-duplicates of ones already taken, in text order."""
    chosen: list[int] = []
    budget = max_words if max_words is not None else math.inf
    for _, i in sorted(scored, key=lambda item: (-item[0], item[1])):
        if len(chosen) >= limit:
            break
        size = len(items[i].attributed().split())
        if size <= budget and all(_overlap(bags[i], bags[j]) < 0.6 for j in chosen):
            chosen.append(i)
            budget -= size
    return [items[i] for i in sorted(chosen)]


def _overlap(a: Counter[str], b: Counter[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a.keys() & b.keys()) / min(len(a), len(b))


def cued(items: list[Sentence], cue: re.Pattern[str] | Callable[[str], bool], limit: int) -> list[Sentence]:
    """The sentences a cue (a pattern, or a test such as `is_decision`) finds, each text once, the
    latest `limit` of them: earlier ones are more often revisited."""
    test = cue.search if isinstance(cue, re.Pattern) else cue
    found, seen = [], set()
    for item in items:
        key = item.text.lower()
        if test(item.text) and key not in seen:
            seen.add(key)
            found.append(item)
    return found[-limit:]


def decisions(items: list[Sentence], limit: int) -> list[Sentence]:
    """The latest `limit` sentences that state a decision taken (`is_decision`)."""
    return cued(items, is_decision, limit)


def values(texts: list[str], calls: list[str], limit: int) -> dict[str, list[str]]:
    """Exact values: files touched, URLs, ids, error lines, commands (first seen first, deduplicated)."""
    out: dict[str, list[str]] = {"files": [], "urls": [], "ids": [], "errors": [], "commands": []}
    for call in calls:
        if m := COMMAND_CALL.match(call):
            _add(out["commands"], m.group(1).strip(), limit)
        if m := EDIT_CALL.match(call):
            for path in PATH.findall(m.group(1)) or [m.group(1).split()[0]]:
                _add(out["files"], path, limit)
    for text in texts:
        for url in URL.findall(text):
            _add(out["urls"], url, limit)
        for ident in IDENT.findall(text):
            _add(out["ids"], ident, limit)
        for line in text.splitlines():
            stripped = line.strip()
            if 8 <= len(stripped) <= 240 and ERROR_LINE.search(stripped) and not stripped.startswith(("#", "//")):
                _add(out["errors"], stripped, limit)
            if stripped.startswith("$ "):
                _add(out["commands"], stripped[2:], limit)
    return out


def paths_in(texts: list[str], limit: int) -> list[str]:
    found: list[str] = []
    for text in texts:
        for path in PATH.findall(text):
            if not URL.search(path):
                _add(found, path, limit)
    return found


def _add(bucket: list[str], value: str, limit: int) -> None:
    if value and value not in bucket and len(bucket) < limit:
        bucket.append(value)
