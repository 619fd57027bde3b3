"""Safety checks for written content: which text Dory stores (paths: see write_paths.py).

Pure checks: nothing is read or written, so the write engine runs them for dry runs as well as
real writes.

Content decisions (see `scan_content`):

- Soft hyphen U+00AD is allowed between two letters: it is an ordinary hyphenation hint in text
  pasted from the web or from word processors. Anywhere else (at a word's edge, in a run) it does
  no visible job and is reported as an invisible character. The injection scan reads the text both
  without it and with it as a space, so it can neither split a pattern nor glue one together.
- LRM, RLM and ALM (U+200E, U+200F, U+061C) are allowed: right-to-left writers need them, and they
  only set the direction of neutral characters; unlike embeddings, overrides and isolates they
  cannot reorder what a reader sees. They are also removed before the injection scan.
- ZWJ/ZWNJ (U+200D, U+200C) are allowed only where they do a visible job: ZWJ between emoji
  (family, profession and flag sequences) and either of them between two letters of a joining
  script (Arabic, Syriac, Indic). Everywhere else they are invisible characters.
- A BOM (U+FEFF) is allowed as the very first character only.
- Unicode tag characters are allowed only inside an emoji subdivision flag (England, Scotland,
  Wales: U+1F3F4, tag letters, U+E007F). Any other tag character is smuggling: the error carries the
  hidden ASCII in `details["hidden_text"]`.
- One variation selector after a character that has variants is normal (an emoji or other symbol,
  a keycap digit, a CJK ideograph). After anything else (a Latin letter, a space) it changes
  nothing a reader sees and is reported as an invisible character. A run of two or more is how data
  is smuggled through selectors: the run is reported with the decoded bytes in
  `details["hidden_text"]`.
- Lone surrogates are reported as control characters: they are not text and cannot be written.
- Prompt injection is a score (dory.memory.injection): from REJECT_AT the content is refused
  (`prompt_injection`); from SUSPECT_AT it is a `prompt_injection_suspect` problem, which does not
  block a write but sends it to quarantine by default (see `screen`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from dory.errors import (
    BidiControl,
    ContentTooLarge,
    ControlCharacters,
    InvisibleCharacters,
    PromptInjection,
    SectionMarker,
    TagCharacters,
    UnsafeContent,
)
from dory.memory import injection

# ---------------------------------------------------------------------------------------------
# Content: the problem record
# ---------------------------------------------------------------------------------------------


# A score in the borderline band: not an error, but the write goes to quarantine by default.
SUSPECT = "prompt_injection_suspect"
SuspectPolicy = Literal["quarantine", "reject"]


@dataclass(frozen=True)
class Problem:
    """One failed content check. `code` is the code of the error class that reports it (or SUSPECT)."""

    code: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def blocking(self) -> bool:
        """False only for a suspect score: such content may still be kept, in quarantine."""
        return self.code != SUSPECT


_ERRORS: dict[str, type[UnsafeContent]] = {
    cls.code: cls
    for cls in (
        ContentTooLarge,
        ControlCharacters,
        TagCharacters,
        BidiControl,
        InvisibleCharacters,
        PromptInjection,
        SectionMarker,
    )
}

# ---------------------------------------------------------------------------------------------
# Content: character classes
# ---------------------------------------------------------------------------------------------

# C0 except tab/newline/carriage return, DEL, C1 (NUL included), and lone surrogates.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
_TAG = re.compile("[\U000e0000-\U000e007f]")
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")
# Zero-width and other invisible characters: ZW space/joiners, word joiner and invisible operators,
# deprecated format controls, BOM, Mongolian vowel separator, Hangul fillers (render as blank),
# interlinear annotation marks, shorthand and musical format controls.
_INVISIBLE = re.compile(
    "[\u200b-\u200d\u2060-\u2065\u206a-\u206f\ufeff\u180e\u115f\u1160\u3164\uffa0\ufff9-\ufffb"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a]"
)
SELECTORS = "\ufe00-\ufe0f\U000e0100-\U000e01ef"
_SELECTOR_RUN = re.compile(f"[{SELECTORS}]{{2,}}")
_LONE_SELECTOR = re.compile(f"(?<![{SELECTORS}])[{SELECTORS}](?![{SELECTORS}])")
# A soft hyphen between two letters is a hyphenation point; anywhere else it only hides.
_SOFT_HYPHEN = re.compile("\u00ad")
_HYPHENATION = re.compile(r"(?<=[^\W\d_])\u00ad(?=[^\W\d_])")
# Emoji-ish code points (pictographs, dingbats, arrows, geometric shapes, a few symbols).
_PICTO = (
    "\u00a9\u00ae\u203c\u2049\u2122\u2139\u2190-\u21ff\u2300-\u23ff\u25a0-\u27bf\u2934\u2935\u2b00-\u2bff"
    "\u3030\u303d\u3297\u3299\U0001f000-\U0001faff"
)
_EMOJI_ZWJ = re.compile(f"(?<=[{_PICTO}\ufe0f\u20e3])\u200d(?=[{_PICTO}])")
_VARIANT_BASE = re.compile(f"[{_PICTO}#*0-9]")  # emoji with a text and an emoji form, keycaps
# Scripts whose shaping uses ZWJ/ZWNJ: Arabic, Syriac, Thaana, NKo, Arabic extensions, Indic, Sinhala.
_JOINING = "\u0600-\u08ff\u0900-\u0dff\ufb50-\ufdff\ufe70-\ufefc"
_SCRIPT_JOINER = re.compile(f"(?<=[{_JOINING}])[\u200c\u200d](?=[{_JOINING}])")
_EMOJI_FLAG = re.compile("\U0001f3f4[\U000e0030-\U000e0039\U000e0061-\U000e007a]{1,7}\U000e007f")


def _control_positions(text: str) -> list[int]:
    return [m.start() for m in _CONTROL.finditer(text)]


def _tag_positions(text: str) -> list[int]:
    flags = {i for m in _EMOJI_FLAG.finditer(text) for i in range(m.start(), m.end())}
    return [m.start() for m in _TAG.finditer(text) if m.start() not in flags]


def _bidi_positions(text: str) -> list[int]:
    return [m.start() for m in _BIDI.finditer(text)]


def _has_variants(char: str) -> bool:
    """A character a variation selector can change: an emoji or other symbol, a keycap base, a CJK ideograph."""
    if _VARIANT_BASE.match(char) or unicodedata.category(char) in ("So", "Sm"):
        return True
    return "CJK" in unicodedata.name(char, "")


def _invisible_positions(text: str) -> list[int]:
    allowed = {m.start() for m in _EMOJI_ZWJ.finditer(text)} | {m.start() for m in _SCRIPT_JOINER.finditer(text)}
    allowed |= {m.start() for m in _HYPHENATION.finditer(text)}
    allowed |= {m.start() for m in _LONE_SELECTOR.finditer(text) if m.start() and _has_variants(text[m.start() - 1])}
    if text.startswith("\ufeff"):
        allowed.add(0)  # a byte-order mark, not hidden content
    found = [m.start() for m in _INVISIBLE.finditer(text) if m.start() not in allowed]
    found += [m.start() for m in _SOFT_HYPHEN.finditer(text) if m.start() not in allowed]
    found += [m.start() for m in _LONE_SELECTOR.finditer(text) if m.start() not in allowed]
    found += [i for m in _SELECTOR_RUN.finditer(text) for i in range(m.start(), m.end())]
    return sorted(found)


def _tag_hidden_text(text: str, positions: list[int]) -> str:
    """Tag characters mirror ASCII 0x20-0x7E at U+E0020-U+E007E: that is the smuggled text."""
    chars = (ord(text[i]) - 0xE0000 for i in positions)
    return "".join(chr(c) for c in chars if 0x20 <= c <= 0x7E)


def _selector_byte(char: str) -> int:
    """VS1-VS16 carry bytes 0-15 and VS17-VS256 bytes 16-255 in the usual smuggling scheme."""
    cp = ord(char)
    return cp - 0xFE00 if cp <= 0xFE0F else cp - 0xE0100 + 16


def _selector_hidden_text(text: str, positions: list[int]) -> str:
    runs = [m.group() for m in _SELECTOR_RUN.finditer(text)]
    return "".join(bytes(_selector_byte(c) for c in run).decode("utf-8", "replace") for run in runs)


class _CharClass(NamedTuple):
    error: type[UnsafeContent]
    what: str
    find: Callable[[str], list[int]]
    hidden: Callable[[str, list[int]], str] | None


# Order is the order problems are reported in (after size).
_CHAR_CLASSES = (
    _CharClass(ControlCharacters, "a control character", _control_positions, None),
    _CharClass(TagCharacters, "a Unicode tag character", _tag_positions, _tag_hidden_text),
    _CharClass(BidiControl, "a bidirectional control character", _bidi_positions, None),
    _CharClass(InvisibleCharacters, "an invisible character", _invisible_positions, _selector_hidden_text),
)

# ---------------------------------------------------------------------------------------------
# Content: building problems
# ---------------------------------------------------------------------------------------------


def _line_col(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return line, column


_UNNAMED = {"Cc": "control", "Cs": "lone surrogate", "Cn": "unassigned"}


def describe_char(char: str) -> str:
    """`U+200B (ZERO WIDTH SPACE)`; controls and surrogates have no Unicode name, so say what they are."""
    name = unicodedata.name(char, "") or ("NUL" if char == "\x00" else _UNNAMED.get(unicodedata.category(char), "?"))
    return f"U+{ord(char):04X} ({name})"


def _size_problem(text: str, max_bytes: int) -> Problem | None:
    size = len(text.encode("utf-8", "surrogatepass"))
    if size <= max_bytes:
        return None
    return Problem(
        ContentTooLarge.code,
        f"content is {size} bytes; the limit is {max_bytes} bytes",
        {"bytes": size, "max_bytes": max_bytes},
    )


def _char_problem(kind: _CharClass, text: str) -> Problem | None:
    positions = kind.find(text)
    if not positions:
        return None
    first = positions[0]
    line, column = _line_col(text, first)
    codepoints = sorted({f"U+{ord(text[i]):04X}" for i in positions})
    message = f"content contains {kind.what} {describe_char(text[first])} at line {line}, column {column}"
    if len(positions) > 1:
        message += f" ({len(positions)} in total)"
    details: dict[str, Any] = {
        "line": line,
        "column": column,
        "codepoint": f"U+{ord(text[first]):04X}",
        "count": len(positions),
        "codepoints": codepoints[:50],
    }
    hidden = kind.hidden(text, positions) if kind.hidden else ""
    if hidden:
        details["hidden_text"] = hidden[:1000]
        message += f"; it hides {len(hidden)} characters of text"
    return Problem(kind.error.code, message, details)


def _injection_problem(text: str) -> Problem | None:
    found = injection.assess(text)
    if found.verdict == "clean":
        return None
    first = found.hits[0]
    line, column = _line_col(text, first.start)
    if found.verdict == "reject":
        code, what = PromptInjection.code, f"looks like a prompt injection (score {found.score:g})"
    else:
        bands = f"quarantined from {injection.SUSPECT_AT:g}, refused from {injection.REJECT_AT:g}"
        code, what = SUSPECT, f"may be a prompt injection (score {found.score:g}; {bands})"
    details = {
        "line": line,
        "column": column,
        "pattern": first.signal,
        "patterns": sorted(hit.signal for hit in found.hits),
        "matched": first.matched,
        "score": found.score,
    }
    return Problem(code, f"content {what}: {first.description} at line {line}, column {column}", details)


def scan_content(text: str, max_bytes: int) -> list[Problem]:
    """Every problem with `text`, in a stable order: size, control, tag, bidi, invisible, injection
    (refused or suspect)."""
    found = [_size_problem(text, max_bytes)]
    found += [_char_problem(kind, text) for kind in _CHAR_CLASSES]
    found.append(_injection_problem(text))
    return [problem for problem in found if problem is not None]


def error_for(problem: Problem, problems: list[Problem] | None = None) -> UnsafeContent:
    """The exception that reports `problem` (its class carries the same code); with `problems`,
    `details["problems"]` lists the codes of all of them. A suspect score is reported as an injection."""
    details = problem.details | ({"problems": [p.code for p in problems]} if problems else {})
    return _ERRORS.get(problem.code, PromptInjection)(problem.message, **details)


def check_content(text: str, max_bytes: int) -> None:
    """Raise the error for the first blocking problem (a suspect score alone passes)."""
    problems = scan_content(text, max_bytes)
    blocking = [problem for problem in problems if problem.blocking]
    if blocking:
        raise error_for(blocking[0], problems)


def screen(problems: list[Problem], soft: bool, suspect: SuspectPolicy) -> Problem | None:
    """What a write does about its problems: raise the first blocking one (a `soft` write returns it
    instead, to be quarantined), and return a suspect score to be quarantined (raised as
    `prompt_injection` under the "reject" policy, unless `soft`). None: write as asked."""
    blocking = [problem for problem in problems if problem.blocking]
    first = blocking[0] if blocking else (problems[0] if problems else None)
    if first is None:
        return None
    if not soft and (first.blocking or suspect == "reject"):
        raise error_for(first, problems)
    return first
