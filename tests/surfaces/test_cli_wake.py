"""`dory wake` through the real console script: the plain output is the JSON block byte for byte (hooks
paste it into the model's context), bad budgets and unknown profiles are usage errors, and the recent
sessions it lists follow the session plane (a deleted session leaves the block)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

FILES = {
    "core/user.md": "---\ntitle: User\n---\n# User\n\nMaya, a backend developer in Lisbon. Prefers terse answers — "
    "no emojis.  \n\n## Boundaries\n\nDo not mention the side project at work.\n",
    "core/soul.md": "# Soul\n\nBe direct; say “I don't know” when unsure.\n",
    "core/active.md": "# Active\n\n- Migrating the billing service to Postgres 16\n- Café rota app (weekends)\n",
    "dory.toml": '[wake.profiles.mine]\nsections = ["core/active.md"]\n',
}
SESSION = "".join(
    json.dumps(record) + "\n"
    for record in (
        {
            "type": "user",
            "session_id": "billing-9",
            "title": "Billing migration dry run",
            "timestamp": "2025-04-02T09:00:00Z",
            "content": "Run the billing migration against staging.",
        },
        {"type": "assistant", "timestamp": "2025-04-02T09:00:30Z", "content": "Done; 3 rows needed manual fixes."},
    )
)
KNOWN = ["casual", "coding", "default", "mine", "privacy", "writing"]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    for rel, text in FILES.items():
        (corpus / rel).parent.mkdir(parents=True, exist_ok=True)
        (corpus / rel).write_text(text, encoding="utf-8")
    return corpus


def test_plain_wake_is_the_json_block_and_bad_arguments_are_usage_errors(dory, root: Path, tree_digest) -> None:
    base = ("--corpus", str(root))
    made = dory(*base, "sessions", "ingest", "-", "--device", "d", "--json", input=SESSION)
    assert made.code == 0, made
    session_path = made.json()["sessions"][0]["path"]
    before = tree_digest(root)
    calls: list[tuple[str, ...]] = [
        ("wake", "--json"),
        ("wake",),
        ("wake", "--profile", "coding", "--budget", "60", "--json"),
        ("wake", "--profile", "coding", "--budget", "60"),
        ("wake", "--profile", "mine", "--json"),
        ("wake", "--profile", "mine"),
        ("wake", "--budget", "2000", "--json"),
        ("wake", "--budget", "2000"),
        ("wake", "--profile", "nope", "--json"),
        ("wake", "--max-chars", "20000", "--json"),
    ]
    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = list(pool.map(lambda args: dory(*base, *args), calls))
    for as_json, plain in ((runs[0], runs[1]), (runs[2], runs[3]), (runs[4], runs[5])):
        assert as_json.code == plain.code == 0, (as_json, plain)
        wake: dict[str, Any] = as_json.json()
        assert plain.stdout == wake["block"] + "\n" and plain.stderr == ""
        assert wake["chars"] == len(wake["block"]) and wake["tokens"] <= wake["budget"]
    default = runs[0].json()
    assert "Maya, a backend developer in Lisbon" in default["block"]
    assert f"Billing migration dry run ({session_path})" in default["block"]
    assert runs[2].json()["budget"] == 60 and runs[2].json()["profile"] == "coding"
    assert runs[4].json()["sections"][0]["source"] == "core/active.md"

    assert runs[6].code == 2, runs[6]
    assert runs[6].error() == {
        "code": "usage_error",
        "type": "UsageError",
        "message": "budget: Input should be less than or equal to 1500",
        "details": {
            "errors": [
                {"field": "budget", "problem": "Input should be less than or equal to 1500", "type": "less_than_equal"}
            ]
        },
    }
    assert (runs[7].code, runs[7].stdout) == (2, "")
    assert runs[7].stderr == "error [usage_error]: budget: Input should be less than or equal to 1500\n"
    assert runs[8].code == 2, runs[8]
    assert runs[8].error() == {
        "code": "usage_error",
        "type": "UsageError",
        "details": {"profile": "nope", "known": KNOWN},
        "message": f"unknown wake profile 'nope'; known profiles: {', '.join(KNOWN)}",
    }
    assert runs[9].code == 2 and runs[9].error()["code"] == "usage_error"
    assert tree_digest(root) == before  # wake only reads

    deleted = dory(*base, "sessions", "delete", "billing-9", "--json")
    assert deleted.code == 0, deleted
    after = dory(*base, "wake", "--json")
    assert after.code == 0, after
    assert "Billing migration" not in after.json()["block"] and session_path not in after.json()["block"]
