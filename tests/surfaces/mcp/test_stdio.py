"""`dory mcp` over stdio, driven by the MCP SDK's own client as a real subprocess: the tool surface
(annotations, output schemas), every tool called, errors as tool errors with stable codes, notes as
resources, and nothing but protocol on stdout."""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from support.daemon import daemon_env

TOOLS = {
    "search": (True, False),
    "get": (True, False),
    "write": (False, True),
    "memory_write": (False, False),
    "wake": (True, False),
    "active_memory": (True, False),
    "recall": (True, False),
    "research": (True, False),
    "link": (True, False),
    "proposals_list": (True, False),
    "proposal_apply": (False, False),
    "proposal_reject": (False, False),
    "session_ingest": (False, False),
}
NOTES = {
    "notes/alpha.md": "# Alpha\n\nthe quokka lives on an island; see [[Beta]]\n",
    "notes/beta.md": "# Beta\n\nsecond note\n",
    "people/ada-lovelace.md": "---\ntitle: Ada Lovelace\n---\n\n## Summary\n\nMathematician.\n",
}


@pytest.fixture
def corpus(tmp_path: Path, dory_cmd: list[str]) -> Path:
    root = tmp_path / "corpus"
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    indexed = subprocess.run([*dory_cmd, "--corpus", str(root), "reindex"], env=daemon_env(), capture_output=True)
    assert indexed.returncode == 0, indexed.stderr
    return root


@asynccontextmanager
async def connected(dory_cmd: list[str], root: Path, log: Path) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=dory_cmd[0], args=[*dory_cmd[1:], "--corpus", str(root), "mcp"], env=daemon_env()
    )
    with log.open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


def error_of(result: Any) -> str:
    assert result.is_error, result
    return str(json.loads(result.content[0].text)["error"]["code"])


def test_the_tools_their_hints_schemas_and_every_call(corpus: Path, dory_cmd: list[str], tmp_path: Path) -> None:
    async def scenario() -> None:
        async with connected(dory_cmd, corpus, tmp_path / "mcp.log") as mcp:
            tools = {tool.name: tool for tool in (await mcp.list_tools()).tools}
            assert set(tools) == set(TOOLS)
            for name, (read_only, destructive) in TOOLS.items():
                hints = tools[name].annotations
                assert hints is not None and hints.open_world_hint is False, name
                assert (hints.read_only_hint, hints.destructive_hint) == (read_only, destructive), name
                assert tools[name].output_schema and tools[name].description, name
                assert "agent" not in tools[name].input_schema["properties"], name

            found = await mcp.call_tool("search", {"query": "quokka", "mode": "bm25"})
            assert [h["path"] for h in found.structured_content["hits"]] == ["notes/alpha.md"]
            assert found.content[0].text.startswith("1. notes/alpha.md")
            note = await mcp.call_tool("get", {"path": "notes/alpha.md"})
            assert "quokka" in note.structured_content["content"]
            wrote = await mcp.call_tool(
                "write", {"path": "notes/new.md", "kind": "create", "content": "# N\n\nwombat\n"}
            )
            assert not wrote.is_error and wrote.structured_content["generation"] >= 1
            remembered = await mcp.call_tool(
                "memory_write", {"subject": "Ada Lovelace", "content": "Ada wrote notes.", "allow_canonical": True}
            )
            assert not remembered.is_error, remembered.content
            assert "block" in (await mcp.call_tool("wake", {})).structured_content
            active = await mcp.call_tool(
                "active_memory", {"prompt": "where does the quokka live?", "deadline_ms": 10000}
            )
            assert active.structured_content["evidence"][0]["path"] == "notes/alpha.md", active.content
            links = await mcp.call_tool("link", {"path": "notes/alpha.md", "direction": "out"})
            assert [e["target"] for e in links.structured_content["edges"]] == ["notes/beta.md"]
            transcript = '{"type": "user", "content": "remember the quokka", "timestamp": "2026-11-20T10:00:00Z"}\n'
            ingested = await mcp.call_tool("session_ingest", {"content": transcript, "format": "jsonl"})
            assert ingested.structured_content["sessions"][0]["added"] == 1
            recalled = await mcp.call_tool("recall", {"query": "quokka"})
            assert not recalled.is_error
            assert (await mcp.call_tool("proposals_list", {})).structured_content["proposals"] == []
            missing = await mcp.call_tool("proposal_apply", {"id": "no-such"})
            assert error_of(missing) == "not_found"
            resource = await mcp.read_resource("dory://note/notes/beta.md")
            assert "second note" in resource.contents[0].text

    anyio.run(scenario)
    assert (corpus / "notes/new.md").exists()


def test_errors_are_tool_errors_with_their_codes_and_damage_nothing(
    corpus: Path, dory_cmd: list[str], tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with connected(dory_cmd, corpus, tmp_path / "mcp.log") as mcp:
            assert error_of(await mcp.call_tool("get", {"path": "notes/none.md"})) == "not_found"
            assert error_of(await mcp.call_tool("get", {"path": "../../etc/passwd"})) == "path_outside_corpus"
            bidi = {"path": "notes/alpha.md", "kind": "append", "content": "x \u202e y"}
            assert error_of(await mcp.call_tool("write", bidi)) == "bidi_control"
            stale = {"path": "notes/alpha.md", "kind": "replace", "content": "new", "expected_hash": "sha256:00"}
            assert error_of(await mcp.call_tool("write", stale)) == "hash_conflict"
            assert error_of(await mcp.call_tool("search", {"query": "x", "k": 100000})) == "usage_error"
            assert (await mcp.call_tool("search", {"query": "quokka", "mode": "bm25"})).structured_content["hits"]

    anyio.run(scenario)
    assert (corpus / "notes/alpha.md").read_text(encoding="utf-8") == NOTES["notes/alpha.md"]


def test_stdout_carries_only_protocol_even_with_debug_logging(corpus: Path, dory_cmd: list[str]) -> None:
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": "quokka"}},
        },
    ]
    proc = subprocess.Popen(
        [*dory_cmd, "--corpus", str(corpus), "mcp", "--log-level", "debug"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=daemon_env(),
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
    proc.stdin.flush()
    answers = []
    while not any(a.get("id") == 3 for a in answers):  # the server answers every request; EOF would end this
        line = proc.stdout.readline()
        assert line, "the server closed stdout before answering"
        answers.append(json.loads(line))  # every line is JSON-RPC, nothing else
    proc.stdin.close()  # EOF: the server ends
    rest = proc.stdout.read()
    errors = proc.stderr.read() if proc.stderr else ""
    assert proc.wait(120) == 0
    answers += [json.loads(line) for line in rest.splitlines() if line.strip()]
    assert {a.get("id") for a in answers} >= {1, 2, 3}
    assert all(a["jsonrpc"] == "2.0" for a in answers)
    assert errors  # the debug logs went to stderr
