"""The README's examples, and the commands the template's notes give, run as written and succeed.

The README stays true by construction: every example block (see support/doc_examples.py for what
counts as one and how a block says it cannot run here) is run in order, one command at a time, on
the machine a reader has (support/example_home.py: a home folder with agent transcripts, a note
they edited, and `~/notes`, made with `dory init` and indexed, as the corpus the examples
name), by the rules of support/example_runner.py (placeholders filled in from earlier output,
the daemon and the server started in the background and stopped with Ctrl-C). Any command that
fails is reported with what it printed. Blocks that need what a test machine lacks (systemd, a
second machine) are skipped with the reason their marker gives, and listed.

The template's notes are checked the same way: each `dory …` command they give runs, in order, in
a corpus fresh from `dory init`, from inside it (as a reader who just opened it would type it).
Settings examples (``toml`` blocks) must load as settings.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest
from support.doc_examples import Block, blocks, inline_commands
from support.example_home import make_home
from support.example_runner import ExampleRunner, Outcome, dory_on_path, reader_env

from dory.service.settings import open_settings

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
TEMPLATE = REPO / "corpus-template"


def readme_blocks() -> list[Block]:
    return blocks(README.read_text(encoding="utf-8"), "README.md")


def failures(outcomes: list[Outcome]) -> str:
    return "\n\n".join(o.report() for o in outcomes if o.failed)


# -- what is run, and what is not ----------------------------------------------------------------
def test_every_shell_block_is_run_or_says_why_not() -> None:
    examples = [b for b in readme_blocks() if b.is_example]
    skipped = {b.where: b.marker.reason for b in examples if b.skipped and b.marker}
    assert len(examples) >= 12, [b.where for b in examples]
    assert all(reason for reason in skipped.values()), skipped
    # What is skipped is few, and each for something a test machine lacks: a list to keep short.
    assert len(skipped) <= 4, skipped
    for path in sorted(TEMPLATE.rglob("*.md")):
        assert not [b for b in blocks(path.read_text(encoding="utf-8"), str(path)) if b.is_example and b.skipped]


def test_settings_examples_load(tmp_path: Path) -> None:
    examples = [b for b in readme_blocks() if b.language == "toml"]
    assert len(examples) >= 2
    for n, block in enumerate(examples):
        corpus = tmp_path / f"toml-{n}"
        corpus.mkdir()
        text = "\n".join(block.lines) + "\n"
        assert tomllib.loads(text), block.where
        (corpus / "dory.toml").write_text(text, encoding="utf-8")
        open_settings(corpus, env={})  # a ConfigError names what is wrong


# -- running them --------------------------------------------------------------------------------
@pytest.fixture
def reader(tmp_path: Path, dory_cmd: list[str]) -> ExampleRunner:
    """A reader's machine: their home (transcripts, an edited note) and `~/notes`, made and indexed
    as the README's first command shows. DORY_CORPUS names it, so commands without --corpus use it.
    Sessions imported a moment ago count as still being written for `[digest] quiet_minutes` (30);
    the nightly examples digest them at once, so the reader's settings make that 0."""
    home = make_home(tmp_path / "home")
    env = reader_env(
        home,
        [dory_on_path(dory_cmd, tmp_path / "bin")],
        DORY_CORPUS=str(home / "notes"),
        DORY_DIGEST_QUIET_MINUTES="0",
    )
    for args in (["dory", "init", str(home / "notes")], ["dory", "reindex"]):
        done = subprocess.run(args, env=env, cwd=home, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
    return ExampleRunner(home, env)


@pytest.mark.model
def test_the_readme_examples_run_in_order(reader: ExampleRunner) -> None:
    outcomes: list[Outcome] = []
    for block in readme_blocks():
        if block.is_example and not block.skipped:
            outcomes += reader.run_block(block)
    assert not failures(outcomes), "README examples that fail:\n\n" + failures(outcomes)
    ran = [o for o in outcomes if not o.assumed]
    assert len(ran) >= 45, [o.written for o in ran]
    # The long-running ones did run, and stopped cleanly on Ctrl-C.
    assert [o.note for o in ran if "Ctrl-C" in o.note] == ["stopped with Ctrl-C (SIGINT)"] * 2


@pytest.mark.model
def test_the_template_notes_commands_run_in_a_fresh_corpus(tmp_path: Path, dory_cmd: list[str]) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = reader_env(home, [dory_on_path(dory_cmd, tmp_path / "bin")])
    corpus = home / "fresh"
    done = subprocess.run(["dory", "init", str(corpus)], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    runner = ExampleRunner(home, env, cwd=corpus)
    outcomes: list[Outcome] = []
    seen = []
    for path in sorted(TEMPLATE.rglob("*.md")):
        rel = path.relative_to(REPO).as_posix()
        for line, command in inline_commands(path.read_text(encoding="utf-8")):
            seen.append(command)
            outcomes += runner.run_block(Block(rel, line, "sh", [command], "inline"))
    assert not failures(outcomes), "template commands that fail:\n\n" + failures(outcomes)
    assert len(seen) >= 5 and any(re.match(r"dory search ", c) for c in seen), seen
