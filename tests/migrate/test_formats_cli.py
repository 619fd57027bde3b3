"""`dory migrate formats` lists every reader, with the first line of its docstring when it has one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dory.surfaces.cli import cli


def test_formats_lists_every_reader(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DORY_EMBEDDER_BACKEND", "none")
    result = CliRunner().invoke(cli, ["--corpus", str(corpus), "migrate", "formats", "--json"], prog_name="dory")
    assert result.exit_code == 0, result.output + repr(result.exception)
    listed = json.loads(result.stdout)
    assert {"chatgpt", "claude-ai", "sessions-jsonl", "generic"} <= set(listed)
    assert listed["chatgpt"].startswith("ChatGPT data export")
