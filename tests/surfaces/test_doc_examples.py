"""The harness that runs the docs' examples (tests/support/doc_examples.py, example_runner.py): what it
reads as an example, how a block says it cannot run, how it cuts lines into commands, and that it
runs a block as a reader would and reports what fails, with what it printed.

These run on small documents written here with the lexical backend (no model); the README itself is
run by test_readme_examples.py. `dory migrate` blocks run against the sources the runner makes
(support/migration_sources.py): one of each kind the README's migration section names.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.doc_examples import Marker, MarkerError, blocks, commands, inline_commands, logical_lines, parse_marker
from support.example_home import make_home
from support.example_runner import ExampleRunner, Outcome, dory_on_path, reader_env

FENCE = "```"


def doc(*parts: str) -> str:
    return "\n".join(parts) + "\n"


# -- reading a document --------------------------------------------------------------------------
def test_markers() -> None:
    assert parse_marker("<!-- example: run -->") == Marker("run")
    assert parse_marker("  <!-- example: skip (needs systemd (a user session)) -->") == Marker(
        "skip", "needs systemd (a user session)"
    )
    assert parse_marker("<!-- example: assume `pip install .` (installed) -->") == Marker(
        "assume", "installed", ("pip install .",)
    )
    assert parse_marker("<!-- a comment -->") is None and parse_marker("text") is None
    for bad, why in [
        ("<!-- example: skip -->", "needs a reason"),
        ("<!-- example: skip () -->", "needs a reason"),
        ("<!-- example: assume (no command) -->", "names the command"),
        ("<!-- example: run (why) -->", "takes nothing more"),
        ("<!-- example: ignore (x) -->", "unknown example marker"),
    ]:
        with pytest.raises(MarkerError, match=why):
            parse_marker(bad)


def test_which_blocks_are_examples_and_their_markers() -> None:
    text = doc(
        "# Title",
        "<!-- example: skip (needs a harness) -->",
        "",
        f"{FENCE}sh",
        "dory connect claude-code",
        FENCE,
        "## Config",
        f"{FENCE}toml",
        "[wake]",
        FENCE,
        f"{FENCE}",
        "dory/surfaces   the CLI; `dory ops watch` lives in dory/daemon",
        FENCE,
        "- a list item:",
        f"  {FENCE}",
        "  printf 'x' | dory write a.md --file -",
        f"  {FENCE}",
        f"{FENCE}sh",
        "scripts/install-systemd.sh ~/notes",
        FENCE,
    )
    found = blocks(text, "doc.md")
    assert [(b.line, b.language, b.is_example, b.skipped, b.heading) for b in found] == [
        (4, "sh", True, True, "Title"),
        (8, "toml", False, False, "Config"),
        (11, "", False, False, "Config"),  # a diagram naming dory modules
        (15, "", True, False, "Config"),
        (18, "sh", True, False, "Config"),  # a shell block runs (or says why not) even without dory
    ]
    assert found[0].marker == Marker("skip", "needs a harness") and found[0].where == "doc.md:4 (Title)"
    assert found[3].lines == ["printf 'x' | dory write a.md --file -"]


@pytest.mark.parametrize(
    "text,why",
    [
        (doc("<!-- example: skip (x) -->", "some prose", f"{FENCE}sh", "dory status", FENCE), "right before its block"),
        (doc("<!-- example: skip (x) -->", f"{FENCE}toml", "[wake]", FENCE), "runs no `dory` command"),
        (doc("<!-- example: run -->", "<!-- example: run -->", f"{FENCE}sh", FENCE), "two example markers"),
        (doc("text", "<!-- example: run -->"), "no block after it"),
        (doc("<!-- example: skip because -->", f"{FENCE}sh", "dory status", FENCE), "doc.md:1: .*needs a reason"),
    ],
)
def test_misplaced_or_malformed_markers_are_errors(text: str, why: str) -> None:
    with pytest.raises(MarkerError, match=why):
        blocks(text, "doc.md")


def test_lines_become_the_commands_bash_would_run() -> None:
    lines = [
        "dory a --x 'q; r' && dory b \"s && t\"   # a comment; && not a separator",
        "curl -s -d '{\"q\": 1}' \\",
        "     http://127.0.0.1:8765/v1/search",
        "",
        "printf '# T\\n' | dory write t.md --file - ; dory get t.md#L2",
        "TOKEN=dory_…",
    ]
    found = [command for line in logical_lines(lines) for command in commands(line)]
    assert found == [
        "dory a --x 'q; r'",
        'dory b "s && t"',
        "curl -s -d '{\"q\": 1}'       http://127.0.0.1:8765/v1/search",
        "printf '# T\\n' | dory write t.md --file -",
        "dory get t.md#L2",
        "TOKEN=dory_…",
    ]


def test_inline_commands_of_prose() -> None:
    text = doc(
        'Run `dory reindex`, then `dory search "q"`; ``dory x`` and `dory.toml` are not.', FENCE, "`dory no`", FENCE
    )
    assert inline_commands(text) == [(1, "dory reindex"), (1, 'dory search "q"')]


# -- running blocks ------------------------------------------------------------------------------
@pytest.fixture
def runner(tmp_path: Path, dory_cmd: list[str]) -> ExampleRunner:
    """A reader's home with `~/notes` (lexical: no model) named by DORY_CORPUS."""
    home = make_home(tmp_path / "home")
    env = reader_env(
        home, [dory_on_path(dory_cmd, tmp_path / "bin")], DORY_CORPUS=str(home / "notes"), DORY_EMBEDDER_BACKEND="none"
    )
    runner = ExampleRunner(home, env)
    [init] = runner.run_block(blocks(doc(f"{FENCE}sh", "dory init ~/notes --no-model && true", FENCE))[0])[:1]
    assert not init.failed, init.report()
    return runner


def run_doc(runner: ExampleRunner, *lines: str, marker: str = "") -> list[Outcome]:
    [block] = blocks(doc(*([marker] if marker else []), f"{FENCE}sh", *lines, FENCE), "doc.md")
    return runner.run_block(block)


def test_placeholders_are_filled_from_earlier_output(runner: ExampleRunner) -> None:
    outcomes = run_doc(
        runner,
        "printf '# Tea\\n\\nGreen, 80 °C.\\n' | dory write knowledge/tea.md --file -",
        "dory get knowledge/tea.md                 # note the sha256:… hash",
        "dory write knowledge/tea.md --kind replace --expected-hash sha256:… --file new.md",
        "dory sessions ingest ~/.claude/projects/my-app/5b6f….jsonl",
        "dory proposals create Tea 'Tea is best at 80 °C' --scope concept && dory proposals apply ID",
    )
    assert [o.code for o in outcomes] == [0] * 6, "\n".join(o.report() for o in outcomes)
    assert outcomes[2].ran.startswith("dory write knowledge/tea.md --kind replace --expected-hash sha256:")
    assert outcomes[2].ran.split()[-3] in outcomes[1].output
    assert outcomes[3].ran.endswith("/.claude/projects/my-app/5b6f9a1e-2c3d-4e5f-8a9b-0c1d2e3f4a5b.jsonl")
    assert (
        (runner.home / "notes" / "knowledge" / "tea.md")
        .read_text(encoding="utf-8")
        .endswith("a little longer tastes better.\n")
    )


def test_a_failing_command_is_reported_with_its_output_and_the_rest_still_runs(runner: ExampleRunner) -> None:
    outcomes = run_doc(
        runner,
        "dory get knowledge/nope.md",
        "dory write knowledge/x.md --kind replace --expected-hash sha256:… --content x",
        "dory proposals show ID",
        "dory status",
    )
    assert [(o.code, o.failed) for o in outcomes] == [(3, True), (None, True), (None, True), (0, False)]
    report = outcomes[0].report()
    assert report.startswith("doc.md:1 (top): dory get knowledge/nope.md\n    exit 3\n    | error [not_found]")
    assert outcomes[1].note == "placeholder: sha256:… but no earlier command of the block printed a hash"
    assert outcomes[2].note.startswith("placeholder: ID but no proposal is waiting")


def test_assumed_commands_are_not_run(runner: ExampleRunner) -> None:
    outcomes = run_doc(
        runner, "false && dory status", marker="<!-- example: assume `false` (the test machine has it) -->"
    )
    assert [(o.written, o.code, o.failed, o.note) for o in outcomes] == [
        ("false", None, False, "assumed done: the test machine has it"),
        ("dory status", 0, False, ""),
    ]


def test_variables_and_a_daemon_started_then_stopped_with_ctrl_c(runner: ExampleRunner) -> None:
    outcomes = run_doc(
        runner,
        "export NOTE=knowledge/later.md GREETING='hello there'",
        "SCOPE=durable",
        "dory --corpus ~/notes ops watch",
        "DORY_EMBEDDER_BACKEND=none dory status",  # a command with a variable of its own
        'printf "# Later\\n\\n$GREETING\\n" | dory write "$NOTE" --file -',
        'dory search "$GREETING" --mode bm25 --in "$SCOPE"',
    )
    assert [o.code for o in outcomes] == [0] * 6, "\n".join(o.report() for o in outcomes)
    assert outcomes[2].note == "stopped with Ctrl-C (SIGINT)" and "stopped" in outcomes[2].output
    assert "daemon" in outcomes[3].output and "knowledge/later.md" in outcomes[5].output


def test_a_migrate_block_runs_on_a_source_made_for_it(runner: ExampleRunner) -> None:
    outcomes = run_doc(
        runner,
        "dory migrate ~/Downloads/notion-export.zip --dry-run    # the plan first",
        "dory migrate ~/Downloads/notion-export.zip --estimate",
        "dory migrate ~/Downloads/notion-export.zip",
        "dory migrate runs",
        "dory migrate undo RUN",
    )
    assert [o.code for o in outcomes] == [0] * 5, "\n".join(o.report() for o in outcomes)
    assert outcomes[0].note.startswith("made a Notion export zip (two linked pages) at ")
    assert [o.note for o in outcomes[1:]] == [""] * 4
    assert outcomes[4].ran != outcomes[4].written and outcomes[4].ran.split()[-1] in outcomes[3].output


# One example per kind of source, as the README's migration section gives them.
SOURCES = [
    ("dory migrate ~/Obsidian/Vault", "an Obsidian vault"),
    ("dory migrate ~/logseq-graph", "a Logseq graph"),
    ("dory migrate Export-1234.zip", "a Notion export zip"),
    ("dory migrate conversations.json", "a ChatGPT conversations.json"),
    ("dory migrate ~/.claude/projects/my-app", ""),  # the reader's own transcripts (example_home)
    ('dory migrate "My Notebook.enex"', "an Evernote .enex export"),
    ("dory migrate Takeout/Keep", "a Google Keep Takeout folder"),
    ('dory migrate "Bear Notes.bear2bk"', "a Bear .bear2bk backup"),
    ("dory migrate memory.jsonl", "an MCP memory server's memory.jsonl"),
    ("dory migrate mem0-export.json", "a mem0 export"),
    ("dory migrate ~/old-notes", "a folder of markdown notes"),
    ("dory migrate ~/Downloads/notes-backup --from keep", "a Google Keep Takeout folder"),
]


def test_each_kind_of_migration_source_is_made_and_imported(runner: ExampleRunner) -> None:
    outcomes = run_doc(runner, *[f"{command}   # a comment" for command, _ in SOURCES])
    assert [o.code for o in outcomes] == [0] * len(SOURCES), "\n".join(o.report() for o in outcomes)
    for outcome, (_, what) in zip(outcomes, SOURCES, strict=True):
        assert outcome.note.startswith(f"made {what}") if what else outcome.note == "", outcome.report()
    assert all("created 0 files" not in o.output for o in outcomes), "\n".join(o.report() for o in outcomes)
