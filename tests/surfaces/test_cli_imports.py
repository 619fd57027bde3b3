"""A one-shot `dory` loads only what its command needs (SPEC §11: `--help` near the cost of importing
click, a bm25 search well under a second). Checked on what the process imported, never on time:
each probe runs the real entry point (dory.surfaces.launch:main) in a fresh interpreter and reports
the top-level packages in sys.modules once the command has finished."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from tests.conftest import write_files

PROBE = (
    "import json, sys\n"
    "from dory.surfaces.launch import main\n"
    "sys.argv = ['dory', *json.loads(sys.argv[1])]\n"
    "try:\n"
    "    main()\n"
    "except SystemExit as exc:\n"
    "    code = exc.code\n"
    "else:\n"
    "    code = 0\n"
    "dory = {name for name in sys.modules if name.startswith('dory.')}\n"
    "loaded = {name.split('.')[0] for name in sys.modules} | dory\n"
    "report = {'code': code, 'modules': sorted(loaded)}\n"
    "sys.stderr.write('\\nPROBE ' + json.dumps(report) + '\\n')\n"
)

# What no command below may load: the vector side (FAISS, the embedder and its tokenizer) and the
# servers. `--help` loads none of the heavy libraries at all.
NEVER = {"faiss", "fastapi", "uvicorn", "mcp", "starlette", "apscheduler", "dory.index.embedders", "dory.index.vectors"}
NOT_FOR_HELP = NEVER | {
    "numpy",
    "pydantic",
    "pydantic_core",
    "rich",
    "markdown_it",
    "httpx",
    "dory.models",
    "dory.config",
}


def probe(*args: str, cwd: Path) -> tuple[object, set[str], str]:
    """(exit code, modules loaded, stdout) of `dory ARGS` run in a fresh interpreter."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("DORY_")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(list(args))], env=env, cwd=cwd, capture_output=True, text=True
    )
    marker = done.stderr.rfind("\nPROBE ")
    assert marker >= 0, f"the probe did not finish: exit {done.returncode}\n{done.stderr[-3000:]}"
    report = json.loads(done.stderr[marker + len("\nPROBE ") :])
    return report["code"], set(report["modules"]), done.stdout


def test_help_loads_neither_pydantic_nor_numpy_nor_faiss(tmp_path: Path) -> None:
    code, modules, stdout = probe("--help", cwd=tmp_path)
    assert code == 0
    assert "search" in stdout and "reindex" in stdout  # the real help, with every command listed
    assert modules & NOT_FOR_HELP == set()
    # Nor what click itself does without (SPEC §11: `--help` within 1.5x of `import click`).
    assert modules & {"pathlib", "ctypes", "glob"} == set()


def test_a_subcommand_help_loads_no_models(tmp_path: Path) -> None:
    for command in (["search", "--help"], ["sessions", "search", "--help"], ["memory-write", "--help"]):
        code, modules, stdout = probe(*command, cwd=tmp_path)
        assert code == 0 and "Usage:" in stdout, command
        assert modules & NOT_FOR_HELP == set(), command


def test_a_bm25_search_loads_neither_faiss_nor_the_embedder(tmp_path: Path) -> None:
    """The default settings (an embedder configured), a lexical index: `-m bm25` answers from FTS5
    alone, without importing the vector store, the embedder, numpy or the jobs, servers and writers."""
    corpus = write_files(
        tmp_path / "corpus",
        {
            "dory.toml": "",
            "knowledge/otters.md": "# Otters\n\nSea otters hold hands while they drift.\n",
            "knowledge/herons.md": "# Herons\n\nA heron waits in the shallows.\n",
        },
    )
    code, _, _ = probe("--corpus", str(corpus), "reindex", "--no-vectors", "--json", cwd=tmp_path)
    assert code == 0
    code, modules, stdout = probe(
        "--corpus", str(corpus), "search", "-m", "bm25", "otters drift", "--json", "--no-record", cwd=tmp_path
    )
    assert code == 0
    assert [hit["path"] for hit in json.loads(stdout)["hits"]] == ["knowledge/otters.md"]
    assert modules & NEVER == set()
    assert modules & {"dory.jobs", "dory.migrate", "dory.memory.exact", "dory.service.migrate"} == set()
    # Nor numpy (the vector side's), markdown-it (the chunker's), httpx or rich: FTS5 and the models only.
    assert modules & {"numpy", "markdown_it", "httpx", "rich", "dory.index.indexer", "dory.sessions"} == set()


def _listing(group: click.Group, width: int) -> str:
    """The "Commands" section of `dory --help` at this terminal width."""
    ctx = click.Context(group, info_name="dory", terminal_width=width)
    formatter = ctx.make_formatter()
    group.format_commands(ctx, formatter)
    return formatter.getvalue()


def test_the_command_table_lists_the_commands_as_they_are() -> None:
    """`dory --help` reads the same whether the command modules are loaded or only named in the table:
    at every width (click shortens a summary to fit), and each module's COMMANDS are all in the table."""
    from dory.surfaces.cli import cli
    from dory.surfaces.command_summaries import COMMAND_MODULES
    from dory.surfaces.lazy_group import LazyGroup

    lazy = LazyGroup(name="dory")
    loaded = click.Group(name="dory")
    for module_name, summaries in COMMAND_MODULES.items():
        module = importlib.import_module(module_name)
        assert [command.name for command in module.COMMANDS] == list(summaries), module_name
        assert {c.name: c.get_short_help_str(10_000) for c in module.COMMANDS} == summaries, module_name
        for command in module.COMMANDS:
            loaded.add_command(command)
    lazy.add_lazy_commands(COMMAND_MODULES)
    for width in (50, 80, 120, 200):
        assert _listing(lazy, width) == _listing(loaded, width), width
    assert lazy.commands.pending.keys() == set(loaded.commands)  # listing them imported nothing
    assert list(cli.commands)[-len(loaded.commands) :] == list(loaded.commands)  # registration order kept


def test_a_lazy_command_loads_its_module_on_first_use() -> None:
    from dory.surfaces.command_summaries import COMMAND_MODULES
    from dory.surfaces.lazy_group import LazyGroup

    group = LazyGroup(name="dory")
    group.add_lazy_commands(COMMAND_MODULES)
    ctx = click.Context(group, info_name="dory")
    sessions = group.get_command(ctx, "sessions")
    assert isinstance(sessions, click.Group) and "search" in sessions.commands
    assert "sessions" not in group.commands.pending
    assert group.get_command(ctx, "no-such-command") is None
    with pytest.raises(click.UsageError, match="No such command 'serch'"):
        group.resolve_command(ctx, ["serch"])
