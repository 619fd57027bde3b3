"""MCP over streamable HTTP, mounted at /mcp by a real `dory serve`, driven by the SDK's client: the
same bearer tokens (the SDK's verifier over Dory's token store), protected-resource metadata, scopes
deciding which tools a token sees and may call, and the token's name as the agent of its sessions."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS
from support.daemon import daemon_env
from support.server import ServerProcess, cli

READ_TOOLS = {"search", "get", "wake", "active_memory", "recall", "research", "link", "proposals_list"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, dory_cmd: list[str]) -> Iterator[tuple[ServerProcess, dict]]:
    root = tmp_path_factory.mktemp("mcp-http") / "corpus"
    (root / "notes").mkdir(parents=True)
    (root / "notes/alpha.md").write_text("# Alpha\n\nthe quokka lives on an island\n", encoding="utf-8")
    tokens = {}
    for name, scope in [("reader", "read"), ("writer", "write"), ("bot-9", "sessions")]:
        made = cli(dory_cmd, root, "auth", "new", name, "--scope", scope, "--json", env=daemon_env())
        assert made.returncode == 0, made.stderr
        tokens[name] = json.loads(made.stdout)["token"]
    server = ServerProcess(dory_cmd, root).start()
    yield server, tokens
    assert server.stop() == 0


@asynccontextmanager
async def connected(url: str, token: str) -> AsyncIterator[ClientSession]:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with http, streamable_http_client(f"{url}/mcp", http_client=http) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


def test_a_read_token_sees_and_may_call_only_read_tools(served: tuple[ServerProcess, dict]) -> None:
    server, tokens = served

    async def scenario() -> None:
        async with connected(server.url, tokens["reader"]) as mcp:
            names = {tool.name for tool in (await mcp.list_tools()).tools}
            assert names == READ_TOOLS
            found = await mcp.call_tool("search", {"query": "quokka", "mode": "bm25"})
            assert [h["path"] for h in found.structured_content["hits"]] == ["notes/alpha.md"]
            refused = await mcp.call_tool("write", {"path": "notes/x.md", "kind": "create", "content": "x"})
            assert refused.is_error and json.loads(refused.content[0].text)["error"]["code"] == "forbidden"

    anyio.run(scenario)
    assert not (server.root / "notes/x.md").exists()


def test_a_write_token_writes_and_a_sessions_token_is_the_agent_of_its_sessions(
    served: tuple[ServerProcess, dict],
) -> None:
    server, tokens = served
    transcript = '{"type": "user", "content": "hello from mcp", "timestamp": "2026-11-20T10:00:00Z"}\n'

    async def scenario() -> None:
        async with connected(server.url, tokens["writer"]) as mcp:
            assert "write" in {tool.name for tool in (await mcp.list_tools()).tools}
            wrote = await mcp.call_tool("write", {"path": "notes/by-mcp.md", "kind": "create", "content": "# M\n"})
            assert not wrote.is_error, wrote.content
        async with connected(server.url, tokens["bot-9"]) as mcp:
            ingested = await mcp.call_tool("session_ingest", {"content": transcript, "format": "jsonl"})
            assert not ingested.is_error, ingested.content

    anyio.run(scenario)
    assert (server.root / "notes/by-mcp.md").exists()
    with server.client(tokens["reader"]) as http:
        sessions = http.get("/v1/sessions").json()["sessions"]
    assert [s["agent"] for s in sessions] == ["bot-9"]


def test_an_unknown_tool_prompt_or_note_is_an_invalid_params_protocol_error(
    served: tuple[ServerProcess, dict],
) -> None:
    """What the conformance suite showed: the spec answers an unknown name with -32602, not with a
    tool result (unknown tool), code 0 (unknown prompt) or an internal error (missing note)."""
    server, tokens = served
    missing = "dory://note/notes/none.md"

    async def scenario() -> None:
        async with connected(server.url, tokens["reader"]) as mcp:
            with pytest.raises(MCPError) as tool:
                await mcp.call_tool("no_such_tool", {})
            with pytest.raises(MCPError) as prompt:
                await mcp.get_prompt("no_such_prompt")
            with pytest.raises(MCPError) as note:
                await mcp.read_resource(missing)
        assert [tool.value.code, prompt.value.code, note.value.code] == [INVALID_PARAMS] * 3
        assert note.value.error.data == {"uri": missing}
        assert "notes/none.md" in note.value.error.message

    anyio.run(scenario)


def test_without_a_valid_token_mcp_is_401_pointing_at_its_resource_metadata(served: tuple[ServerProcess, dict]) -> None:
    server, _ = served
    hello = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for headers in ({}, {"Authorization": "Bearer dory_00000000_" + "x" * 43}):
        refused = httpx.post(f"{server.url}/mcp", json=hello, headers=headers, timeout=60)
        assert refused.status_code == 401
        assert "resource_metadata=" in refused.headers["WWW-Authenticate"]
    metadata = httpx.get(f"{server.url}/.well-known/oauth-protected-resource/mcp", timeout=60).json()
    assert metadata["resource"] == f"{server.url}/mcp"


def test_with_no_token_at_all_a_local_server_is_open_to_local_callers(tmp_path: Path, dory_cmd: list[str]) -> None:
    root = tmp_path / "corpus"
    (root / "notes").mkdir(parents=True)
    (root / "notes/a.md").write_text("# A\n\nkoala\n", encoding="utf-8")
    server = ServerProcess(dory_cmd, root).start()

    async def scenario() -> None:
        http = create_mcp_http_client()
        async with (
            http,
            streamable_http_client(f"{server.url}/mcp", http_client=http) as streams,
            ClientSession(streams[0], streams[1]) as mcp,
        ):
            await mcp.initialize()
            assert "write" in {tool.name for tool in (await mcp.list_tools()).tools}

    try:
        anyio.run(scenario)
    finally:
        assert server.stop() == 0
