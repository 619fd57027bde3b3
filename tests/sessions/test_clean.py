"""Cleaning and redaction of imported session text: every secret shape, near-misses that must survive."""

from __future__ import annotations

import pytest

from dory.sessions import clean
from dory.sessions.clean import REDACTED, clean_text, redact, rule_names

OPENAI = "sk-proj-Ab3dE6gH9jK2mN5pQ8rS1tU4vW7xY0zA3bC6dE9f"
ANTHROPIC = "sk-ant-api03-Zx8Yw7Vu6Ts5Rq4Po3Nm2Lk1Jh0GfEdCbA-9f8e7d6c"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTQyIn0.kX9vR2mQ7tL4wP8zN1cB5dF3hJ6g"
GHP = "ghp_R8t2Kq9Lm4Vx7Nc1Bz6Hd3Fs5Jw0Ya2Pe8Gu"


# --- clean_text -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a\x00b", "ab"),
        ("lone \ud800 and \udfff surrogates", "lone \ufffd and \ufffd surrogates"),
        ("windows\r\nline\r\nends", "windows\nline\nends"),
        ("old mac\rbreak", "old mac\nbreak"),
        ("\x1b[31mFAILED\x1b[0m test", "FAILED test"),
        ("title\x1b]0;my terminal\x07 text", "title text"),
        ("bell\x07 vt\x0b ff\x0c esc\x1b del\x7f c1\x85\x9b end", "bell vt ff esc del c1 end"),
        ("tab\tand\nnewline stay", "tab\tand\nnewline stay"),
        ("unicode stays: é 漢字 🙂 \u2014", "unicode stays: é 漢字 🙂 \u2014"),
    ],
)
def test_clean_text(raw: str, expected: str) -> None:
    assert clean_text(raw) == expected


def test_clean_text_output_is_storable_and_idempotent() -> None:
    raw = "".join(chr(code) for code in range(0, 0x200)) + "\ud800\udc00x\r\n"
    cleaned = clean_text(raw)
    cleaned.encode("utf-8")  # no surrogates left
    assert not any(ord(ch) < 32 and ch not in "\t\n" for ch in cleaned)
    assert not any(0x7F <= ord(ch) <= 0x9F for ch in cleaned)
    assert clean_text(cleaned) == cleaned


# --- redact: secrets --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "kept", "secret"),
    [
        (f"export OPENAI_API_KEY={OPENAI}", "export OPENAI_API_KEY=", OPENAI),
        (f'ANTHROPIC_API_KEY="{ANTHROPIC}"', 'ANTHROPIC_API_KEY="', ANTHROPIC),
        ("GITHUB_TOKEN=gho_16C7e42F292c6912E7710c838347Ae178B4a", "GITHUB_TOKEN=", "gho_16C7e42F292c6912E7710c8"),
        ("DB_PASSWORD=hunter2 psql", "DB_PASSWORD=", "hunter2"),
        ("STRIPE_SECRET: whsec_abc123def456", "STRIPE_SECRET: ", "whsec_abc123def456"),
        ("client_secret = 'Zq8-Lm3_Pw9xVb2'", "client_secret = '", "Zq8-Lm3_Pw9xVb2"),
        ('{"api_key": "abcd1234efgh5678", "model": "gpt"}', '{"api_key": "', "abcd1234efgh5678"),
        ('{\\"password\\": \\"p4ssw0rd!\\"}', '{\\"password\\": \\"', "p4ssw0rd!"),
        ("x-api-key: 0123456789abcdef0123", "x-api-key: ", "0123456789abcdef0123"),
        ("csrf_token=a8f5f167f44f4964e6c998dee827110c", "csrf_token=", "a8f5f167f44f4964e6c998dee827110c"),
        (f"curl -H 'Authorization: Bearer {JWT}' https://api", "Authorization: Bearer ", JWT),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic ", "dXNlcjpwYXNzd29yZA=="),
        ('"Authorization": "token ghs_abcdefghijklmnop"', '"Authorization": "token ', "ghs_abcdefghijklmnop"),
        ("use bearer abc123def456ghi in the header", "use bearer ", "abc123def456ghi"),
        (f"my key is {OPENAI} ok", "my key is ", OPENAI),
        (f"anthropic {ANTHROPIC}", "anthropic ", ANTHROPIC),
        (f"token {GHP} leaked", "token ", GHP),
        ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "", "github_pat_11ABCDEFG"),
        ("aws AKIAIOSFODNN7EXAMPLE key", "aws ", "AKIAIOSFODNN7EXAMPLE"),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws_secret_access_key = ",
            "wJalrXUtnFEMI",
        ),
        (f"cookie jwt {JWT}", "cookie jwt ", JWT),
        ("postgres://alice:s3cretpw@db.local:5432/app", "postgres://alice:", "s3cretpw"),
        ("slack xoxb-123456789012-abcdefghijkl", "slack ", "xoxb-123456789012"),
        ("AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW here", "", "AIzaSyA1b2C3d4E5f6G7h8"),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
            "-----BEGIN RSA",
            "MIIEpAIBAAKCAQEA",
        ),
        ("The Password: hunter2", "The Password: ", "hunter2"),
        ("AUTHORIZATION: BEARER ABC123DEF456GHI789", "AUTHORIZATION: BEARER ", "ABC123DEF456GHI789"),
    ],
)
def test_secrets_are_redacted_and_names_kept(raw: str, kept: str, secret: str) -> None:
    out, count = redact(raw)
    assert secret not in out
    assert kept in out and REDACTED in out
    assert count == 1


def test_several_secrets_are_counted_once_each() -> None:
    text = (
        f"OPENAI_API_KEY={OPENAI}\nAuthorization: Bearer {JWT}\n"
        f'{{"api_key": "{OPENAI}"}}\nAWS AKIAIOSFODNN7EXAMPLE and {GHP}'
    )
    out, count = redact(text)
    assert count == 5
    assert OPENAI not in out and JWT not in out and GHP not in out and "AKIAIOSFODNN7EXAMPLE" not in out


def test_redaction_is_idempotent() -> None:
    text = f'KEY: OPENAI_API_KEY={OPENAI} / Authorization: Bearer {JWT} / {{"token": "{GHP}"}}'
    once, count = redact(text)
    twice, again = redact(once)
    assert count == 3 and again == 0 and twice == once


# --- redact: near misses ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "I'll sketch the design; the plan is risk-free.",
        "TOKEN_COUNT: 5 tokens were used (max_tokens=4096, tokens: 12)",
        "pip install scikit-learn; from sklearn import sk-learn-compatible-estimator",
        "bearer bonds are paper; Bearer Authentication is an HTTP scheme",
        "sorted(rows, key=len); sort_key = lambda r: r[0]; next_token = tokens[i + 1]",
        "def login(password: str, api_key: str | None = None) -> Token:",
        "password = getpass.getpass(); token = make_token(user)",
        "api_key = os.environ['OPENAI_API_KEY']; secret = process.env.SECRET",
        'curl -H "Authorization: Bearer $TOKEN" -H "X-Api-Key: ${API_KEY}"',
        "OPENAI_API_KEY=<your-key-here> and DB_PASSWORD=*** and API_TOKEN=...",
        "PWD=/home/alice OLDPWD=/tmp cd - ; echo $PWD",
        "The Secret: that we keep tests small. Credentials: see the vault.",
        "Authorization: required for every call",
        'cache_key = "user:42"; primary_key=True; foreign_key=None',
        "task-force, desk-lamp, ask-me-anything, AKIA is a prefix",
        "the jwt starts with eyJ and nothing else",
        "auth: true\nkey: value\nsecret: false",
    ],
)
def test_near_misses_are_left_alone(text: str) -> None:
    assert redact(text) == (text, 0)


# --- the pattern list -------------------------------------------------------------------------------

# One positive example per maintained rule: adding a rule without an example fails this test.
EXAMPLES = {
    "private-key-block": "-----BEGIN PRIVATE KEY-----\nMIIBVQIBADANBg\n-----END PRIVATE KEY-----",
    "authorization-header": f"Authorization: Bearer {JWT}",
    "bearer-token": "bearer abc123def456ghi",
    "url-credentials": "https://bob:pa55word@example.com/",
    "name-value": "SERVICE_TOKEN=abcdef",
    "openai-anthropic-key": OPENAI,
    "github-token": GHP,
    "aws-access-key": "AKIAIOSFODNN7EXAMPLE",
    "jwt": JWT,
    "slack-token": "xoxp-123456789012-abcdef",
    "google-api-key": "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW",
    "stripe-key": "sk_live_abcdefghijklmnop1234",
    "huggingface-token": "hf_abcdefghijklmnopqrstuvwxyzABCDEF12",
}


def test_every_rule_has_an_example_it_redacts() -> None:
    assert set(rule_names()) == set(EXAMPLES)
    for rule in clean._RULES:
        example = EXAMPLES[rule.name]
        out, count = clean._apply(rule, example)
        assert count >= 1 and REDACTED in out, rule.name
        # Through the public entry too: a rule's substring hints must never hide a match it would make.
        assert redact(f"see {example} here")[1] >= 1, rule.name
