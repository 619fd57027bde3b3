"""Prompt-injection scoring: normalise the text, look for signals, add up a score.

No filter of this kind is perfect, so it scores instead of deciding: each signal (a pattern, see
`injection_signals`) has a weight, and the score is the sum over signals of the strongest hit of
each. At REJECT_AT or above a write is refused (`prompt_injection`); from SUSPECT_AT up to there it
is quarantined for a person by default (`prompt_injection_suspect`); below, it passes.

What the patterns see (the views of one text, all scanned):

- The folded text: per character NFKC, case folded, combining marks (accents) dropped, format
  characters (soft hyphen, zero-width characters, word joiner, Unicode tags) and variation
  selectors dropped, blank fillers turned into spaces, and Cyrillic, Greek and other letters that
  look like Latin ones mapped to Latin. The patterns are folded the same way when compiled, so a
  Russian pattern still matches Russian text: both sides map "о" to "o".
- When the text has format characters or selectors, the same with each of them as a space: they
  can glue words together ("ignore<soft hyphen>previous") as well as split one.
- When the text has letter-spaced words ("i g n o r e"), the same with those closed up.
- Each base64 run (16 characters or more) that decodes to printable UTF-8, folded, and the runs
  inside that decoded text once more. A hit there also adds `encoded_payload`: instructions hidden
  in an encoding are a signal of their own.

Line breaks, markdown emphasis, quotes and list markers between words are part of the patterns'
word separator, so an instruction split over lines reads as one phrase.

A hit inside markdown code (a closed fence or an inline span) counts less: notes about tokenizers
quote `<|im_start|>`, security notes quote attack strings. A role marker quoted as code does not
count; an instruction quoted as code counts half, so it is quarantined instead of refused.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import islice
from typing import Literal

from dory.memory.injection_signals import SIGNALS

REJECT_AT = 1.0
SUSPECT_AT = 0.5
ENCODED_WEIGHT = 0.5
Verdict = Literal["clean", "suspect", "reject"]


@dataclass(frozen=True)
class Signal:
    name: str
    weight: float
    description: str
    regex: re.Pattern[str]
    in_code: float  # the share of the weight a hit inside markdown code counts


@dataclass(frozen=True)
class Hit:
    signal: str
    description: str
    weight: float  # after the code discount
    start: int  # index in the original text (the start of the encoded run for a decoded hit)
    matched: str  # the folded text that matched


@dataclass(frozen=True)
class Assessment:
    score: float
    hits: tuple[Hit, ...]  # the strongest hit of each signal, in text order

    @property
    def verdict(self) -> Verdict:
        if self.score >= REJECT_AT:
            return "reject"
        return "suspect" if self.score >= SUSPECT_AT else "clean"


# ---------------------------------------------------------------------------------------------
# Folding
# ---------------------------------------------------------------------------------------------

_HIDDEN = "\x00"  # stands for a format character or selector in folded text (NUL itself folds to "")
# Blank fillers and the braille blank render as space: treat them as the space an attacker meant.
_SPACE_LIKE = frozenset("\u115f\u1160\u3164\uffa0\u2800")
# Variation selectors, Mongolian free variation selectors and the combining grapheme joiner: invisible
# like format characters, though Unicode files them as marks.
_SELECTOR = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef\u180b-\u180d\u180f\u034f]")
# Letters that look like Latin ones (after case folding): Cyrillic, Greek, Armenian, IPA and small
# capitals; typographic quotes become ASCII ones.
_CONFUSABLES = str.maketrans(
    {
        **dict.fromkeys("аα", "a"),
        **dict.fromkeys("вβ", "b"),
        **dict.fromkeys("еєε", "e"),
        **dict.fromkeys("іιıɩɪ", "i"),
        **dict.fromkeys("ѕꜱ", "s"),
        **dict.fromkeys("оοօᴏ", "o"),
        **dict.fromkeys("рρᴘ", "p"),
        **dict.fromkeys("нһհʜ", "h"),
        **dict.fromkeys("ηոɴ", "n"),
        **dict.fromkeys("уʏ", "y"),
        **dict.fromkeys("υսᴜ", "u"),
        **dict.fromkeys("хχ", "x"),
        **dict.fromkeys("кκᴋ", "k"),
        **dict.fromkeys("мᴍ", "m"),
        **dict.fromkeys("тτᴛ", "t"),
        **dict.fromkeys("сᴄ", "c"),
        **dict.fromkeys("јȷᴊ", "j"),
        **dict.fromkeys("ԁᴅ", "d"),
        **dict.fromkeys("ɡɢ", "g"),
        **dict.fromkeys("ӏʟ", "l"),
        **dict.fromkeys("ɑᴀ", "a"),
        "ԛ": "q",
        "ԝ": "w",
        "ᴡ": "w",
        "ν": "v",
        "ᴠ": "v",
        "ʀ": "r",
        "ʙ": "b",
        "ᴇ": "e",
        "ᴢ": "z",
        **dict.fromkeys("‘’‛ʼ", "'"),
        **dict.fromkeys("“”„", '"'),
    }
)
_PLAIN = re.compile(r"[\t\n\r\x20-\x7e]*")


@lru_cache(maxsize=16384)
def _fold_char(char: str) -> str:
    """What one character looks like to the patterns ('' for what nobody sees, _HIDDEN for a format
    character or selector)."""
    if char in _SPACE_LIKE:
        return " "
    category = unicodedata.category(char)
    if category == "Cf" or _SELECTOR.match(char):
        return _HIDDEN
    if category in ("Cc", "Cs", "Mn", "Me") and char not in "\t\n\r":
        return ""
    folded = unicodedata.normalize("NFKC", char).casefold()
    bare = "".join(c for c in unicodedata.normalize("NFD", folded) if unicodedata.category(c) != "Mn")
    return bare.translate(_CONFUSABLES)


@dataclass(frozen=True)
class _View:
    text: str
    origin: list[int] | None  # index in the original text of each character (None: the same)
    anchor: int | None = None  # decoded text: every hit points at the encoded run

    def position(self, index: int) -> int:
        if self.anchor is not None:
            return self.anchor
        return self.origin[index] if self.origin is not None else index

    def without(self, drop: set[int]) -> _View:
        """This view minus the characters at `drop`, each kept one still pointing at its original."""
        kept = [i for i in range(len(self.text)) if i not in drop]
        return _View("".join(self.text[i] for i in kept), [self.position(i) for i in kept], self.anchor)


def _folded(text: str, anchor: int | None = None) -> _View:
    """The folded text, with _HIDDEN where a format character or selector was."""
    if _PLAIN.fullmatch(text):
        return _View(text.lower(), None, anchor)
    pieces: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        folded = _fold_char(char)
        pieces.append(folded)
        origin.extend([index] * len(folded))
    return _View("".join(pieces), origin, anchor)


def fold(text: str) -> str:
    """The text as the patterns see it (format characters dropped)."""
    return _folded(text).text.replace(_HIDDEN, "")


def compile_pattern(source: str) -> re.Pattern[str]:
    """A pattern over folded text, written naturally: its literal letters are folded like the text."""
    if re.search(r"\\[A-Z]", source):
        raise ValueError(f"an uppercase escape would change under folding: {source[:60]}")
    return re.compile(fold(source), re.DOTALL | re.MULTILINE)


# ---------------------------------------------------------------------------------------------
# Views
# ---------------------------------------------------------------------------------------------

_LETTER_SPACED = re.compile(r"(?<!\w)\w(?: \w(?!\w)){2,}")
_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{16,}={0,2}")
MAX_ENCODED_RUNS = 64  # per text: decoding is cheap, but a hostile text could hold millions of runs
MAX_RUN_CHARS = 65_536


def _text_views(view: _View) -> Iterator[_View]:
    """The folded view as it is: format characters dropped, then as spaces; letter-spaced words closed."""
    hidden = {i for i, char in enumerate(view.text) if char == _HIDDEN} if _HIDDEN in view.text else set()
    glued = view.without(hidden) if hidden else view
    yield glued
    if hidden:
        yield _View(view.text.replace(_HIDDEN, " "), view.origin, view.anchor)
    spaced = {i for m in _LETTER_SPACED.finditer(glued.text) for i in range(m.start(), m.end()) if glued.text[i] == " "}
    if spaced:
        yield glued.without(spaced)


def _decode(run: str) -> str | None:
    """The text a base64 run stands for, when it is printable UTF-8 and mostly letters."""
    raw = run.rstrip("=").replace("-", "+").replace("_", "/")
    if len(raw) % 4 == 1 or len(raw) > MAX_RUN_CHARS:
        return None
    try:
        plain = base64.b64decode(raw + "=" * (-len(raw) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    if not all(char.isprintable() or char in "\t\n\r" for char in plain):
        return None
    return plain if sum(char.isalpha() for char in plain) * 2 >= len(plain) else None


def _decoded(text: str, anchor: int | None, depth: int) -> Iterator[_View]:
    for match in islice(_BASE64_RUN.finditer(text), MAX_ENCODED_RUNS):
        plain = _decode(match.group())
        if plain is None:
            continue
        at = match.start() if anchor is None else anchor
        yield from _text_views(_folded(plain, at))
        if depth < 1:
            yield from _decoded(plain, at, depth + 1)


# ---------------------------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------------------------

COMPILED: tuple[Signal, ...] = tuple(
    Signal(spec.name, spec.weight, spec.description, compile_pattern(spec.source), spec.in_code) for spec in SIGNALS
)
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})[^\n]*\n.*?^[ \t]{0,3}\1[ \t]*$", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"(`+)[^`\n]+?\1")


class _Ranges:
    """Sorted, non-overlapping [start, end) ranges of a text, asked whether they hold a position."""

    def __init__(self, ranges: list[tuple[int, int]]) -> None:
        self.ranges = sorted(ranges)
        self.starts = [start for start, _ in self.ranges]

    def holds(self, position: int) -> bool:
        index = bisect.bisect_right(self.starts, position) - 1
        return index >= 0 and position < self.ranges[index][1]


def _code(text: str) -> _Ranges:
    """Closed fences and inline code spans (an unclosed fence is text, as in canonical pages)."""
    fences = _Ranges([m.span() for m in _FENCE.finditer(text)])
    spans = [m.span() for m in _INLINE_CODE.finditer(text) if not fences.holds(m.start())]
    return _Ranges(fences.ranges + spans)


def _hits(view: _View, code: _Ranges) -> Iterator[Hit]:
    for signal in COMPILED:
        for match in signal.regex.finditer(view.text):
            start = view.position(match.start())
            in_code = code.holds(start)
            weight = signal.weight * (signal.in_code if in_code else 1.0)
            if weight:
                yield Hit(signal.name, signal.description, weight, start, match.group()[:120])
            if not in_code:
                break  # the strongest this signal gets in this view


def assess(text: str) -> Assessment:
    """Score `text` as a possible prompt injection (pure, no I/O)."""
    code = _code(text)
    best: dict[str, Hit] = {}
    encoded: Hit | None = None
    for view in [*_text_views(_folded(text)), *_decoded(text, None, 0)]:
        for hit in _hits(view, code):
            if view.anchor is not None and encoded is None:
                encoded = Hit("encoded_payload", "instructions hidden in base64", ENCODED_WEIGHT, hit.start, "")
            if hit.signal not in best or hit.weight > best[hit.signal].weight:
                best[hit.signal] = hit
    if encoded is not None:
        best[encoded.signal] = encoded
    hits = tuple(sorted(best.values(), key=lambda hit: (hit.start, hit.signal)))
    return Assessment(round(sum(hit.weight for hit in hits), 2), hits)
