"""The `auto` profile: a small deterministic classifier over the prompt's shape and words.

Shape first, because it is unambiguous: a code fence, a file path with a source extension, or a stack
trace make the prompt a coding one whatever its words. Otherwise programming words and prose-writing
words are counted; the larger count wins when it has at least one word, else the prompt is `default`.
`auto` never picks `privacy` or `casual`: those are chosen by the user, not guessed.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^\s*(```|~~~)", re.MULTILINE)
_EXTENSIONS = (
    "py|pyi|ts|tsx|js|jsx|mjs|go|rs|java|kt|swift|c|h|cc|cpp|hpp|cs|rb|php|sh|bash|sql|toml|ya?ml|json|lock|ipynb"
)
_SOURCE_PATH = re.compile(rf"(?<![\w@])(?:[\w.-]+/)*[\w-]+\.(?:{_EXTENSIONS})\b(?::\d+)?", re.IGNORECASE)
_TRACE = re.compile(
    r"Traceback \(most recent call last\)|File \"[^\"]+\", line \d+|^\s+at [\w.$<>]+\(|\b[A-Z]\w*(?:Error|Exception)\b"
    r"|\bpanic: |segmentation fault|\bexit (?:code|status) \d+",
    re.MULTILINE,
)
_CALL = re.compile(
    r"\b[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*\(\)|\b[a-z]+_[a-z0-9_]+\b|\b[a-z]+[A-Z]\w*\b|=>|::|!=|=="
)
_WORD = re.compile(r"[a-z][a-z+#-]*")

_CODING_WORDS_TEXT = (
    "api async bug bugs build compile compiler commit config css database debug deploy dependency docker endpoint "
    "error exception function functions git branch html import json kubernetes lint linter merge method migration "
    "module mypy null pipeline pytest python query refactor regex repo repository rust schema script sql "
    "stacktrace "
    "test tests typescript javascript golang java variable webpack npm pip cli compiler crash segfault "
    "backend frontend server code coding unittest ci"
)
CODING_WORDS = frozenset(_CODING_WORDS_TEXT.split())
_WRITING_WORDS_TEXT = (
    "essay blog article draft paragraph paragraphs tone voice prose rewrite rephrase headline chapter story "
    "newsletter letter poem outline proofread wording phrasing sentence sentences narrative intro conclusion "
    "copywriting editorial manuscript novel speech toast caption tagline"
)
WRITING_WORDS = frozenset(_WRITING_WORDS_TEXT.split())


def classify(prompt: str) -> tuple[str, str]:
    """(profile, reason) for a prompt: `coding`, `writing` or `default`, and the signal that decided."""
    if _FENCE.search(prompt):
        return "coding", "a fenced code block"
    if _TRACE.search(prompt):
        return "coding", "a stack trace or error name"
    path = _SOURCE_PATH.search(prompt)
    if path:
        return "coding", f"a source file path ({path.group(0)[:60]})"
    words = _WORD.findall(prompt.lower())
    coding = sorted({w for w in words if w in CODING_WORDS})
    writing = sorted({w for w in words if w in WRITING_WORDS})
    code_shapes = len(_CALL.findall(prompt))
    if (coding or code_shapes) and len(coding) + min(code_shapes, 2) > len(writing):
        signal = ", ".join(coding[:4]) or "identifiers and operators"
        return "coding", f"programming words ({signal})"
    if writing:
        return "writing", f"writing words ({', '.join(writing[:4])})"
    return "default", "no coding or writing signal"
