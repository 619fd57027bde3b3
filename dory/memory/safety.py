"""Safety checks for writes: which content Dory stores and which paths it writes to.

Both halves are pure checks: they read the disk (for symlinks) but never create, change or
delete anything, so the write engine can call them for dry runs as well as real writes.

Content decisions (see `scan_content`):

- Soft hyphen U+00AD is allowed: it is an ordinary hyphenation hint in text pasted from the web or
  from word processors. It is removed before the injection scan, so it cannot hide a pattern.
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
- One variation selector after a character is normal (emoji, CJK variants); a run of two or more
  is how data is smuggled through selectors, so the run is reported as invisible characters, with
  the decoded bytes in `details["hidden_text"]`.
- Lone surrogates are reported as control characters: they are not text and cannot be written.
- Injection patterns are matched on a folded copy of the text: NFKC, case folded, accents and
  invisible/format characters removed, a few Cyrillic/Greek lookalike letters mapped to Latin, and
  markdown emphasis (`*`, `_`, `~`, backticks, quotes, hyphens) accepted between words.

Path decisions (see `check_write_path`):

- A note name ends in exactly `.md`, lowercase: `.MD` or `.Md` is refused, so Dory never creates
  `x.md` next to `x.MD` (two files on Linux, one on macOS and Windows). Existing `.MD` notes stay
  readable; they are just not a write target.
- Unsafe characters in a path (control, format/invisible, bidi, variation selectors, unusual spaces)
  raise PathNotAllowed: an invisible character in a name makes a second file that looks exactly like
  the first. Paths are stricter than content here (no emoji ZWJ). The one exception is NUL, which
  `normalize_rel` already refuses with InvalidInput.
- Components with leading/trailing spaces or a trailing dot are refused (`note.md `, `notes./x.md`):
  lookalikes of another name, and silently renamed on Windows.
- `.dory/`, `wiki/` and `sources/semantic/` are matched case-insensitively (a case-insensitive
  filesystem treats `Wiki/` as `wiki/`), and are checked again on the real path when a symlinked
  folder is on the way.
- A symlinked folder that leads to another folder inside the corpus is allowed (people organise
  notes that way); one that leads outside is not. The target itself may not be a symlink.

Longer than ~400 lines: content scans and path checks; the prompt-injection filter is being
rewritten (issue 15) and moves to a module of its own then.
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from dory.corpus.atomic import TEMP_NAME_OVERHEAD
from dory.corpus.paths import IgnoreRules, normalize_rel, relpath
from dory.errors import (
    BidiControl,
    ContentTooLarge,
    ControlCharacters,
    InvalidInput,
    InvisibleCharacters,
    NameTooLong,
    PathNotAllowed,
    PathNotWritable,
    PathOutsideCorpus,
    PromptInjection,
    TagCharacters,
    UnsafeContent,
)

# ---------------------------------------------------------------------------------------------
# Content: the problem record
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """One failed content check. `code` is the code of the error class that reports it."""

    code: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)


_ERRORS: dict[str, type[UnsafeContent]] = {
    cls.code: cls
    for cls in (ContentTooLarge, ControlCharacters, TagCharacters, BidiControl, InvisibleCharacters, PromptInjection)
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
_SELECTORS = "\ufe00-\ufe0f\U000e0100-\U000e01ef"
_SELECTOR_RUN = re.compile(f"[{_SELECTORS}]{{2,}}")
# Emoji-ish code points (pictographs, dingbats, arrows, geometric shapes, a few symbols).
_PICTO = (
    "\u00a9\u00ae\u203c\u2049\u2122\u2139\u2190-\u21ff\u2300-\u23ff\u25a0-\u27bf\u2934\u2935\u2b00-\u2bff"
    "\u3030\u303d\u3297\u3299\U0001f000-\U0001faff"
)
_EMOJI_ZWJ = re.compile(f"(?<=[{_PICTO}\ufe0f\u20e3])\u200d(?=[{_PICTO}])")
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


def _invisible_positions(text: str) -> list[int]:
    allowed = {m.start() for m in _EMOJI_ZWJ.finditer(text)} | {m.start() for m in _SCRIPT_JOINER.finditer(text)}
    if text.startswith("\ufeff"):
        allowed.add(0)  # a byte-order mark, not hidden content
    found = [m.start() for m in _INVISIBLE.finditer(text) if m.start() not in allowed]
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
# Content: prompt-injection patterns
# ---------------------------------------------------------------------------------------------


class InjectionPattern(NamedTuple):
    name: str
    regex: re.Pattern[str]
    description: str


# Between words: spaces, line breaks and markdown emphasis/quotes/hyphens (`**all**`, `ignore_all`).
_S = r"[\s*_~`'\"\-]+"
_VERB = r"(?:ignore|disregard|forget)"
_FILL = (
    r"(?:the|all|any|of|and|or|your|my|our|these|those|every|each|previous|prior|above|earlier|preceding"
    r"|foregoing|former|original|initial|system|developer|safety|given|existing)"
)
_QUAL = (
    r"(?:all|any|every|your|previous|prior|above|earlier|preceding|foregoing|former|original|initial"
    r"|system|developer)"
)
_JAILBROKEN = (
    r"(?:dan|jailbroken|unrestricted|unfiltered|uncensored|unbound|unshackled|unchained|amoral"
    rf"|no{_S}longer{_S}(?:bound|restricted|limited|an{_S}ai)"
    rf"|free{_S}(?:of|from){_S}(?:(?:all|any|your){_S})?(?:restrictions|rules|guidelines|filters|constraints))"
)
_SHOW = (
    rf"(?:reveal|print|show|display|output|repeat|leak|dump|disclose|expose|recite|echo|share|tell{_S}me"
    rf"|give{_S}me|send{_S}me|write{_S}out|what{_S}(?:is|are|was|were)|what's)"
)
_SECRET_PROMPT = rf"(?:system|developer|hidden|initial|original|secret|internal){_S}(?:prompts?|instructions|messages?)"


def _pattern(name: str, regex: str, description: str) -> InjectionPattern:
    return InjectionPattern(name, re.compile(regex), description)


# The one maintained list. Regexes run on folded text (see `_fold`), which is already lowercase.
INJECTION_PATTERNS: tuple[InjectionPattern, ...] = (
    _pattern(
        "ignore_instructions",
        rf"\b{_VERB}{_S}(?:{_FILL}{_S}){{0,3}}{_QUAL}{_S}(?:{_FILL}{_S}){{0,3}}(?:instructions?|directives?|prompts?)\b",
        'an order to ignore earlier instructions ("ignore all previous instructions")',
    ),
    _pattern(
        "ignore_rules",
        rf"\b{_VERB}{_S}(?:(?:the|all|any|of|your){_S}){{0,2}}(?:previous|prior|above|earlier|preceding|safety|system)"
        rf"{_S}(?:(?:safety|content|policy|and){_S}){{0,2}}(?:rules|guidelines|guardrails|restrictions|policies)\b",
        'an order to ignore earlier rules or guardrails ("disregard your safety guidelines")',
    ),
    _pattern(
        "ignore_everything_above",
        rf"\b{_VERB}{_S}(?:everything|all|anything){_S}(?:(?:that|written|said|stated|mentioned|here){_S}){{0,2}}"
        rf"(?:above|so{_S}far|(?:up{_S}to|before){_S}this{_S}point|you(?:'ve|{_S}have|{_S}were|{_S}have{_S}been){_S}told)\b",
        'an order to forget the preceding context ("forget everything above")',
    ),
    _pattern(
        "role_tag",
        r"</?(?:system|assistants?|developer|tools?|functions?)(?:[_\-][a-z_\-]*)?(?:\s[^<>]{0,200}|=[^<>]{0,200})?>",
        "a chat role tag (<system>, </system>, <assistant>, <tool>, <function_calls>)",
    ),
    _pattern(
        "chat_template_token",
        r"<\|[a-z0-9_]{1,40}\|>|<(?:start|end)_of_turn>",
        "a chat-template control token (<|im_start|>, <start_of_turn>)",
    ),
    _pattern("instruction_tags", r"\[/?inst\]|<<\s*/?\s*sys\s*>>", "a Llama instruction marker ([INST], <<SYS>>)"),
    _pattern(
        "jailbreak_persona",
        rf"\b(?:you{_S}are{_S}now|from{_S}now{_S}on,?{_S}you{_S}(?:are|will{_S}be|will{_S}act{_S}as))"
        rf"(?:{_S}(?:a|an|in|my|fully|completely|totally|operating|acting|as)){{0,3}}{_S}{_JAILBROKEN}\b",
        'a jailbreak persona opener ("you are now DAN", "you are now unrestricted")',
    ),
    _pattern(
        "system_prompt_exfiltration",
        rf"\b{_SHOW}{_S}(?:(?:me|us|the|full|entire|complete|exact|whole|verbatim|back|all|of){_S}){{0,3}}your{_S}"
        rf"(?:(?:full|entire|complete|exact|whole|current){_S}){{0,2}}{_SECRET_PROMPT}\b"
        rf"|\b(?:reveal|leak|dump|disclose|expose|recite|exfiltrate)(?:{_S}(?:the|full|entire|complete|verbatim)){{0,3}}"
        rf"{_S}(?:system|developer|hidden|initial){_S}(?:prompts?|instructions)\b",
        'a request to reveal the system prompt ("print your system prompt")',
    ),
)

# Hangul fillers render as blank space: treat them as the space an attacker meant.
_SPACE_LIKE = frozenset("\u115f\u1160\u3164\uffa0")
# Cyrillic and Greek letters that look exactly like Latin ones ("ignоre" with a Cyrillic o).
_CONFUSABLES = str.maketrans("аеорсухіјѕԁһԛԝӏοιναρκ", "aeopcyxijsdhqwloivapk")
_PLAIN = re.compile(r"[\t\n\r\x20-\x7e]*")


@lru_cache(maxsize=8192)
def _fold_char(char: str) -> str:
    """What one character looks like to the pattern matcher ('' for characters nobody sees)."""
    if char in _SPACE_LIKE:
        return " "
    if char not in "\t\n\r" and unicodedata.category(char) in ("Cc", "Cf", "Cs", "Mn", "Me"):
        return ""
    folded = unicodedata.normalize("NFKC", char).casefold()
    bare = "".join(c for c in unicodedata.normalize("NFD", folded) if unicodedata.category(c) != "Mn")
    return bare.translate(_CONFUSABLES)


def _fold(text: str) -> tuple[str, list[int] | None]:
    """Folded text plus, for each folded character, the index of the original one (None = same)."""
    if _PLAIN.fullmatch(text):
        return text.lower(), None
    pieces: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        folded = _fold_char(char)
        pieces.append(folded)
        origin.extend([index] * len(folded))
    return "".join(pieces), origin


# ---------------------------------------------------------------------------------------------
# Content: building problems
# ---------------------------------------------------------------------------------------------


def _line_col(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return line, column


_UNNAMED = {"Cc": "control", "Cs": "lone surrogate", "Cn": "unassigned"}


def _describe(char: str) -> str:
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
    message = f"content contains {kind.what} {_describe(text[first])} at line {line}, column {column}"
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
    folded, origin = _fold(text)
    hits = [(m, p) for p in INJECTION_PATTERNS if (m := p.regex.search(folded))]
    if not hits:
        return None
    match, pattern = min(hits, key=lambda hit: hit[0].start())
    start = origin[match.start()] if origin is not None else match.start()
    line, column = _line_col(text, start)
    message = f"content looks like a prompt injection: {pattern.description} at line {line}, column {column}"
    details = {
        "line": line,
        "column": column,
        "pattern": pattern.name,
        "patterns": [p.name for _, p in hits],
        "matched": match.group()[:120],
    }
    return Problem(PromptInjection.code, message, details)


def scan_content(text: str, max_bytes: int) -> list[Problem]:
    """Every problem with `text`, in a stable order: size, control, tag, bidi, invisible, injection."""
    found = [_size_problem(text, max_bytes)]
    found += [_char_problem(kind, text) for kind in _CHAR_CLASSES]
    found.append(_injection_problem(text))
    return [problem for problem in found if problem is not None]


def error_for(problem: Problem) -> UnsafeContent:
    """The exception that reports `problem` (its class carries the same code)."""
    return _ERRORS[problem.code](problem.message, **problem.details)


def check_content(text: str, max_bytes: int) -> None:
    """Raise the error for the first problem; `details["problems"]` lists the codes of all of them."""
    problems = scan_content(text, max_bytes)
    if problems:
        first = problems[0]
        raise _ERRORS[first.code](first.message, **first.details, problems=[p.code for p in problems])


# ---------------------------------------------------------------------------------------------
# Write paths
# ---------------------------------------------------------------------------------------------

MAX_COMPONENT_BYTES = 255  # NAME_MAX on Linux and macOS
# A note's own name leaves room for the temporary names beside it and for its tombstone's name.
MAX_NOTE_NAME_BYTES = MAX_COMPONENT_BYTES - TEMP_NAME_OVERHEAD - len(".tombstone")
MAX_PATH_BYTES = 1024  # a relative path; leaves room for the corpus root under PATH_MAX
NOTE_SUFFIX = ".md"
EVIDENCE_PREFIX = ("sources", "semantic")

_PATH_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_PATH_FORBIDDEN_CHARS = frozenset("\u034f\u115f\u1160\u3164\uffa0")
_SELECTOR = re.compile(f"[{_SELECTORS}]")


def _unsafe_path_char(rel: str) -> str | None:
    for char in rel:
        category = unicodedata.category(char)
        if category in _PATH_FORBIDDEN_CATEGORIES or (category == "Zs" and char != " "):
            return char
        if char in _PATH_FORBIDDEN_CHARS or _SELECTOR.fullmatch(char):
            return char
    return None


def _check_characters(rel: str) -> None:
    char = _unsafe_path_char(rel)
    if char is not None:
        shown = rel.encode("unicode_escape").decode("ascii")
        raise PathNotAllowed(
            f"path contains an unsafe character {_describe(char)}: {shown}", path=shown, codepoint=f"U+{ord(char):04X}"
        )


def _check_lengths(rel: str) -> None:
    """Names the file system would refuse are refused before anything touches the disk."""
    if len(rel.encode("utf-8")) > MAX_PATH_BYTES:
        raise NameTooLong(f"path is longer than {MAX_PATH_BYTES} bytes", path=rel[:200])
    *folders, name = rel.split("/")
    for part in folders:
        if len(part.encode("utf-8")) > MAX_COMPONENT_BYTES:
            raise NameTooLong(
                f"a folder name is longer than {MAX_COMPONENT_BYTES} bytes: {part[:60]}...", path=rel[:200]
            )
    if len(name.encode("utf-8")) > MAX_NOTE_NAME_BYTES:
        raise NameTooLong(
            f"the file name is longer than {MAX_NOTE_NAME_BYTES} bytes (the file system allows "
            f"{MAX_COMPONENT_BYTES}; Dory keeps room for its temporary files): {name[:60]}...",
            path=rel[:200],
        )


def _check_shapes(rel: str) -> None:
    """Names that are lookalikes of other names: edge spaces, a trailing dot (Windows drops it)."""
    for part in rel.split("/"):
        if part != part.strip() or part.endswith("."):
            raise PathNotAllowed(f"path component {part!r} starts or ends with a space or ends with a dot", path=rel)


def _check_protected(rel: str, allow_evidence: bool, via: str = "") -> None:
    """Areas Dory never writes to: its own state, the generated wiki, immutable evidence."""
    parts = [part.casefold() for part in rel.split("/")]
    if ".dory" in parts[:-1]:
        raise PathNotWritable(f"{rel}{via} is inside .dory/, Dory's derived state", path=rel)
    if parts[0] == "wiki" and len(parts) > 1:
        raise PathNotWritable(f"{rel}{via} is inside wiki/, which is generated", path=rel)
    if tuple(parts[:2]) == EVIDENCE_PREFIX and len(parts) > 2 and not allow_evidence:
        raise PathNotWritable(f"{rel}{via} is inside sources/semantic/, which holds immutable evidence", path=rel)


def _check_visible(rel: str, rules: IgnoreRules, via: str = "") -> None:
    """Hidden, ignored or temporary names: the indexer would never see the note."""
    parts = rel.split("/")
    for depth, name in enumerate(parts[:-1], start=1):
        if rules.skips_dir(name, "/".join(parts[:depth])):
            raise PathNotAllowed(f"{rel}{via} is inside a hidden or ignored folder ({name}/)", path=rel)
    if rules.skips_file(parts[-1], rel):
        raise PathNotAllowed(f"{rel}{via} is a hidden, temporary or ignored name", path=rel)


def _check_note_name(rel: str) -> None:
    name = rel.rsplit("/", 1)[-1]
    stem = name[: -len(NOTE_SUFFIX)]
    if not name.endswith(NOTE_SUFFIX) or not stem.strip("."):
        hint = " (use a lowercase .md)" if name.lower().endswith(NOTE_SUFFIX) else ""
        raise PathNotAllowed(f"{rel} is not a markdown note name ending in .md{hint}", path=rel)


def _resolve_existing(path: Path, rel: str, real_root: Path) -> Path:
    """The real location of an existing path, refusing loops, dangling links and escapes."""
    try:
        real = path.resolve(strict=True)
    except RuntimeError as exc:  # Python 3.11/3.12 report symlink loops this way
        raise InvalidInput(f"symlink loop on the way to {rel}", path=rel) from exc
    except FileNotFoundError as exc:  # a dangling symlink: say where it points if that is outside
        if not path.resolve().is_relative_to(real_root):
            raise PathOutsideCorpus(f"{rel} leads outside the corpus through a symlink", path=rel) from exc
        raise InvalidInput(f"a broken symlink is on the way to {rel}", path=rel) from exc
    except OSError as exc:
        if exc.errno == 40:  # ELOOP (Python 3.13+)
            raise InvalidInput(f"symlink loop on the way to {rel}", path=rel) from exc
        raise InvalidInput(f"cannot inspect {rel}: {exc.strerror}", path=rel) from exc
    if not real.is_relative_to(real_root):
        raise PathOutsideCorpus(f"{rel} leads outside the corpus through a symlink", path=rel)
    return real


def _deepest_existing_folder(root: Path, real_root: Path, rel: str) -> tuple[Path, list[str]]:
    """Walk the folders of `rel` that exist; return the real deepest one and the parts below it."""
    parts = rel.split("/")
    real_parent = real_root
    for depth in range(1, len(parts)):  # folders only; the final name is checked by _check_target
        folder = root.joinpath(*parts[:depth])
        if not os.path.lexists(folder):
            return real_parent, parts[depth - 1 :]
        real_parent = _resolve_existing(folder, rel, real_root)
        if not real_parent.is_dir():
            raise InvalidInput(f"{'/'.join(parts[:depth])} is a file, not a folder", path=rel)
    return real_parent, parts[-1:]


def _check_target(target: Path, rel: str) -> None:
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InvalidInput(f"cannot inspect {rel}: {exc.strerror}", path=rel) from exc
    if stat.S_ISLNK(mode):
        raise PathNotAllowed(f"{rel} is a symlink; Dory writes only regular files", path=rel)
    if stat.S_ISDIR(mode):
        raise InvalidInput(f"{rel} is a folder, not a file", path=rel)
    if not stat.S_ISREG(mode):
        raise InvalidInput(f"{rel} is not a regular file", path=rel)


def check_write_path(root: Path, user_path: str, rules: IgnoreRules, allow_evidence: bool = False) -> tuple[str, Path]:
    """Validate a caller's path for a write; return (normalised relative path, absolute path to write).

    The absolute path has its existing folders resolved (symlinked folders inside the corpus are
    allowed) but its final component is never followed. Nothing is created. `allow_evidence` lets
    the semantic-write engine write its artifacts under sources/semantic/.
    """
    rel = normalize_rel(user_path)
    _check_characters(rel)
    _check_lengths(rel)
    _check_protected(rel, allow_evidence)
    _check_shapes(rel)
    _check_visible(rel, rules)
    _check_note_name(rel)
    real_root = root.resolve()
    real_parent, below = _deepest_existing_folder(root, real_root, rel)
    real_rel = "/".join([relpath(real_root, real_parent), *below]).removeprefix("./")
    if real_rel != rel:  # a symlinked folder moved us: the real place must obey the same rules
        _check_protected(real_rel, allow_evidence, via=f" (through a symlink, from {rel})")
        _check_visible(real_rel, rules, via=f" (through a symlink, from {rel})")
    target = real_parent.joinpath(*below)
    _check_target(target, rel)
    return rel, target
