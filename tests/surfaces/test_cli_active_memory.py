"""`dory active-memory` through the real console script: --json is the response model, plain output is the
block itself (NONE or synthesis plus evidence lines), bad arguments are usage errors, and an unindexed
corpus is not_found."""

from __future__ import annotations

from pathlib import Path

FILES = {
    "people/maya.md": "---\ntype: person\n---\n# Maya\n\nMaya prefers Postgres for the billing service.\n",
    "projects/billing/state.md": "# Billing\n\nThe billing service runs on Postgres 16.\n",
}
PROMPT = "which database does the billing service use? see billing/db.py"


def test_active_memory_prints_the_block_or_none(dory, tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    base = ("--corpus", str(root))
    unindexed = dory(*base, "active-memory", PROMPT, "--json")
    assert unindexed.code == 3 and unindexed.error()["code"] == "not_found", unindexed
    assert dory(*base, "reindex").code == 0

    as_json = dory(*base, "active-memory", PROMPT, "--deadline-ms", "10000", "--json")
    assert as_json.code == 0, as_json
    body = as_json.json()
    assert (body["found"], body["profile"]) == (True, "coding")
    assert [e["path"] for e in body["evidence"]] == ["projects/billing/state.md"]
    assert body["excluded"] == ["people/maya.md: personal page (coding profile)"]
    plain = dory(*base, "active-memory", PROMPT, "--deadline-ms", "10000")
    assert plain.code == 0 and plain.stdout == body["block"] + "\n", plain
    assert plain.stdout.splitlines() == [
        "Memory (coding): The billing service runs on Postgres 16.",
        "- projects/billing/state.md:1-3 — The billing service runs on Postgres 16.",
    ]

    nothing = dory(*base, "active-memory", "tomatoes need sun")
    assert (nothing.code, nothing.stdout) == (0, "NONE\n"), nothing
    writing = dory(*base, "active-memory", "which database does Maya prefer?", "--profile", "writing", "--json")
    assert writing.json()["evidence"][0]["path"] == "people/maya.md"

    for bad in (("--profile", "nope"), ("--deadline-ms", "5"), ("--max-evidence", "0")):
        refused = dory(*base, "active-memory", PROMPT, *bad, "--json")
        assert refused.code == 2 and refused.error()["code"] == "usage_error", (bad, refused)
    blank = dory(*base, "active-memory", "   ", "--json")
    assert blank.code == 2 and blank.error()["code"] == "usage_error", blank
