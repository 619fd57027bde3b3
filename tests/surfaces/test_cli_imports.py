"""A one-shot `dory` loads only what its command needs (SPEC §11: `--help` near the cost of importing
click, a bm25 search well under a second). Checked on what the process imported, never on time:
each probe runs the real entry point (dory.surfaces.launch:main) in a fresh interpreter and reports
the top-level packages in sys.modules once the command has finished."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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
