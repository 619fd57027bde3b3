"""Cleaning and secret redaction for imported session text (SPEC §7: "secrets redacted; NUL and
broken unicode cleaned").

`clean_text` makes any text safe to store in a markdown note and to index:
  - lone surrogates (from JSON escapes such as "\\ud800") become U+FFFD; they cannot be encoded as UTF-8;
  - CRLF and lone CR become LF (a lone CR is an old-Mac line break or a progress bar redraw; either way
    a line break reads better than two lines glued together);
  - ANSI escape sequences (terminal colours in tool output) are removed whole, so no "[31m" is left behind;
  - every other C0 and C1 control character and DEL is removed, keeping only TAB and LF. NUL is among them
    (Dory's reader refuses files with NUL bytes).

`redact` replaces secrets with `[REDACTED]`, keeping the name that announced them (`API_KEY=[REDACTED]`,
`"api_key": "[REDACTED]"`, `Authorization: Bearer [REDACTED]`) and returns how many it replaced. All
patterns live in `_RULES`, one maintained list; rules run in order and a value already `[REDACTED]` is
never counted again, so `redact` is idempotent.

Name/value pairs (`NAME=value`, `NAME: value`, JSON `"name": "value"`) are judged by the name:
  - strong names always hide their value: UPPERCASE env names ending in _KEY, _TOKEN, _SECRET, _PASSWORD,
    _PASSWD, _PWD, _AUTH, _CREDENTIALS (and bare PASSWORD, SECRET, TOKEN, APIKEY), and names of any case
    ending in password, passwd, passphrase, secret, api_key/apikey, access_key, secret_key, private_key,
    client_secret, credentials, or access/auth/refresh/session/bearer/id/api + token;
  - weak names (other lowercase `*_key`, `token`, `*_token`, `*_auth`) hide a value only when it looks
    like a credential (12+ characters with letters and digits), so `sort_key=lambda`, `next_token = tokens`
    and `cache_key = "user:42"` stay readable in coding sessions;
  - bare `key`, `auth` and `PWD` (the working directory variable) are never names of secrets.
Values that are not secrets are left alone: placeholders (`$VAR`, `${VAR}`, `<your-key>`, `***`,
`[REDACTED]`), booleans and null, type annotations (`password: str`), code (`os.environ[...]`,
`getpass()`, dotted names). `TOKEN_COUNT: 5`, `max_tokens=4096`, `sketch`, `risk-free`, `sk-learn` and
"bearer bonds" are not secrets. Known limits: space-separated CLI flags (`--password hunter2`) are not
caught unless the value has a recognised shape (sk-…, ghp_…, AKIA…, a JWT).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

REDACTED = "[REDACTED]"

_SURROGATE = re.compile("[\ud800-\udfff]")
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean_text(text: str) -> str:
    """Text without NUL, control characters, ANSI escapes or lone surrogates, with LF line breaks."""
    text = _SURROGATE.sub("\ufffd", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _ANSI.sub("", text)
    return _CONTROL.sub("", text)


@dataclass(frozen=True)
class _Rule:
    """One secret pattern; the `secret` group is what gets replaced, the rest of the match is kept."""

    name: str
    pattern: re.Pattern[str]
    is_secret: Callable[[re.Match[str]], bool]
    # Lowercase substrings one of which every match contains; a text without any skips the regex
    # (most text holds no secret, and transcripts run to megabytes). Empty: always run.
    hints: tuple[str, ...] = ()


_PLACEHOLDER = re.compile(
    r"""^(?:\$\{?\w*\}?|\$\(.*|%\w+%?|\{\{.*|<[^>]*>?|\*+|x{4,}|\.{3}|…|\[REDACTED\]|REDACTED
        |true|false|null|none|nil|undefined|yes|no
        |str|string|bytes|int|float|bool|boolean|number|any|object|optional|secretstr)$""",
    re.IGNORECASE | re.VERBOSE,
)
_DOTTED_CODE = re.compile(r"^[A-Za-z_]+(?:\.[A-Za-z_]+)+$")


def _plain_value(match: re.Match[str]) -> bool:
    """A value that could be a secret: not a placeholder, not a call or an attribute lookup in code."""
    value = match.group("secret")
    if _PLACEHOLDER.match(value) or _DOTTED_CODE.match(value):
        return False
    if "environ" in value or "getenv" in value or "process.env" in value:
        return False
    # An unquoted identifier followed by "(" is a function call: `token = make_token()`.
    return not (match.groupdict().get("q") is None and match.string[match.end() : match.end() + 1] == "(")


def _credential_shaped(value: str) -> bool:
    return (
        len(value) >= 12 and bool(re.search(r"\d", value)) and bool(re.search(r"[A-Za-z]", value)) and " " not in value
    )


_STRONG_LOWER = re.compile(
    r"(?:^|[_-])(?:password|passwd|passphrase|secret|api[_-]?key|apikey|access[_-]?key|secret[_-]?key"
    r"|private[_-]?key|client[_-]?secret|credentials?|(?:access|auth|refresh|session|bearer|id|api)[_-]?token)$"
    r"|^(?:password|passwd|passphrase|secret|apikey|credentials?)$",
    re.IGNORECASE,
)
_STRONG_UPPER = re.compile(
    r"^(?:[A-Z0-9]+_)+(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PWD|AUTH|CREDENTIALS?)$"
    r"|^(?:PASSWORD|PASSWD|SECRET|TOKEN|APIKEY|API_KEY)$"
)
_NEVER = frozenset({"key", "auth", "pwd"})


def _name_strength(name: str) -> str:
    """ "strong", "weak" or "none": how sure the name alone makes us that its value is a secret."""
    if name.lower() in _NEVER:
        return "none"
    if _STRONG_UPPER.match(name) or _STRONG_LOWER.search(name):
        return "strong"
    return "weak"


_PROSE_WORDS = frozenset({"secret", "secrets", "credential", "credentials"})


def _assignment_is_secret(match: re.Match[str]) -> bool:
    strength = _name_strength(match.group("name"))
    value = match.group("secret")
    # "The Secret: that we ..." is prose; a bare word before a colon needs a credential-shaped value.
    if match.group("name").lower() in _PROSE_WORDS and match.group("sep") == ":" and match.group("q") is None:
        strength = "weak"
    if strength == "none" or not _plain_value(match):
        return False
    if strength == "weak":
        return _credential_shaped(value)
    return len(value) >= 3


def _bearer_is_secret(match: re.Match[str]) -> bool:
    """ "bearer bonds" and "Bearer Authentication" are prose; a token is long or has digits."""
    value = match.group("secret")
    return (len(value) >= 20 or bool(re.search(r"\d", value))) and _plain_value(match)


def _authorization_is_secret(match: re.Match[str]) -> bool:
    """With a scheme (`Bearer`, `Basic`, ...) any real value is a credential; without one, it must look
    like a token, so "Authorization: required" in prose stays."""
    if match.group("scheme"):
        return len(match.group("secret")) >= 8 and _plain_value(match)
    return _bearer_is_secret(match)


def _has_long_random_run(match: re.Match[str]) -> bool:
    """Real keys carry a long random run with digits; `sk-learn-compatible-estimator` does not."""
    value = match.group("secret")
    return bool(re.search(r"[A-Za-z0-9]{16,}", value)) and bool(re.search(r"\d", value))


def _always(_: re.Match[str]) -> bool:
    return True


_NAME = (
    r"(?<![A-Za-z0-9_\-])(?P<name>(?:[A-Za-z0-9]+[_-])*"
    r"(?:password|passwd|passphrase|secret|api[_-]?key|apikey|key|token|credentials?|auth|pwd))"
    r"(?![A-Za-z0-9_\-])"
)
# After the name: an optional closing quote (JSON keys, possibly backslash-escaped inside a JSON string),
# `=`, `:` or `=>`, then a quoted value (anything up to the quote) or a bare one (up to a delimiter).
_VALUE = (
    r"\\?[\"']?[ \t]*(?P<sep>=>|=|:)[ \t]*(?P<q>\\?[\"'])?"
    r"(?P<secret>(?(q)[^\"'\\\n]+|[^\s\"'`,;&<>(){}\[\]\\]+))"
)

_RULES: tuple[_Rule, ...] = (
    _Rule(
        "private-key-block",
        re.compile(
            r"-----BEGIN (?P<kind>[A-Z ]*)PRIVATE KEY-----(?P<secret>.*?)-----END (?P=kind)PRIVATE KEY-----", re.DOTALL
        ),
        _always,
        ("private key",),
    ),
    _Rule(
        "authorization-header",
        re.compile(
            r"(?i)\b(?:proxy-)?authorization\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?"
            r"(?P<scheme>(?:bearer|basic|token|digest|bot)[ \t]+)?(?P<secret>[^\s\"'\\,;]+)"
        ),
        _authorization_is_secret,
        ("authorization",),
    ),
    _Rule(
        "bearer-token",
        re.compile(r"(?i)\bbearer[ \t]+(?P<secret>[A-Za-z0-9._~+/=-]{8,})"),
        _bearer_is_secret,
        ("bearer",),
    ),
    _Rule(
        "url-credentials", re.compile(r"\b[a-z][a-z0-9+.-]*://[^/\s:@]+:(?P<secret>[^/\s:@]+)@"), _plain_value, ("://",)
    ),
    _Rule("name-value", re.compile(_NAME + _VALUE, re.IGNORECASE), _assignment_is_secret),
    _Rule(
        "openai-anthropic-key",
        re.compile(r"(?<![A-Za-z0-9_-])(?P<secret>sk-[A-Za-z0-9][A-Za-z0-9_-]{19,})"),
        _has_long_random_run,
        ("sk-",),
    ),
    _Rule(
        "github-token",
        re.compile(r"\b(?P<secret>gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
        _always,
        ("gh", "github_pat_"),
    ),
    _Rule("aws-access-key", re.compile(r"\b(?P<secret>(?:AKIA|ASIA)[0-9A-Z]{16})\b"), _always, ("akia", "asia")),
    _Rule(
        "jwt",
        re.compile(r"\b(?P<secret>eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"),
        _always,
        ("eyj",),
    ),
    _Rule("slack-token", re.compile(r"\b(?P<secret>xox[abposr]-[A-Za-z0-9-]{10,})"), _always, ("xox",)),
    _Rule("google-api-key", re.compile(r"\b(?P<secret>AIza[0-9A-Za-z_-]{35})"), _always, ("aiza",)),
    _Rule(
        "stripe-key", re.compile(r"\b(?P<secret>[sr]k_(?:live|test)_[A-Za-z0-9]{16,})"), _always, ("k_live_", "k_test_")
    ),
    _Rule("huggingface-token", re.compile(r"\b(?P<secret>hf_[A-Za-z0-9]{30,})"), _always, ("hf_",)),
)


def _apply(rule: _Rule, text: str) -> tuple[str, int]:
    count = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal count
        if not rule.is_secret(match):
            return match.group(0)
        count += 1
        start, end = match.span("secret")
        return match.string[match.start() : start] + REDACTED + match.string[end : match.end()]

    return rule.pattern.sub(replace, text), count


def redact(text: str) -> tuple[str, int]:
    """`text` with every secret replaced by `[REDACTED]`, and the number of secrets replaced."""
    total = 0
    folded = text.lower()
    for rule in _RULES:
        if rule.hints and not any(hint in folded for hint in rule.hints):
            continue
        text, count = _apply(rule, text)
        total += count
    return text, total


def rule_names() -> list[str]:
    """The maintained pattern list, by name (for `dory status`-style reports and tests)."""
    return [rule.name for rule in _RULES]
