"""Dory's MCP server (official SDK): the tools of tools.py and notes as `dory://note/{path}` resources,
over stdio (`dory mcp`) or streamable HTTP (mounted at /mcp by `dory serve`, with the same bearer
tokens, checked by the SDK's token verifier, and the protected-resource metadata it advertises).

Who calls: over HTTP the verified token (its name is the agent of the writes; its scopes decide which
tools it sees and may call); over stdio the local user, with every scope, as the CLI would be. A Dory
error comes back as a tool error whose text is the usual error body (`{"error": {"code", ...}}`), so
a client can read the stable code; the server itself never fails because a call did. A name that
does not exist (tool, prompt, note) is a protocol error, -32602, as the spec asks: there is nothing
to call or read, so it is not a tool result.
"""

from __future__ import annotations

import inspect
import json
from contextvars import ContextVar
from typing import Any

import pydantic
from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, TextContent, Tool

from dory.errors import DoryError, Forbidden, InvalidInput, NotFound, Unauthorized, from_validation_error
from dory.models import GetRequest
from dory.service import DoryService
from dory.service.tokens import LOCAL_USER, Principal, TokenStore
from dory.surfaces.mcp.tools import TOOLS, ToolSpec
from dory.version import package_version

# The bearer value the HTTP app passes for a caller without a token while no token exists at all
# (the open local mode of `dory serve`); refused as soon as one token exists.
OPEN_LOCAL = "dory-open-local"
INSTRUCTIONS = (
    "Dory is the user's long-term memory, shared by all their agents. At the start of a session call "
    "`wake`. Before answering anything that may depend on the user's notes, people, projects, decisions "
    "or earlier sessions, `search` (or `recall` for past sessions) and `get` what you need; "
    "`active_memory` gives a short cited block for a prompt (or NONE), and `research` a grounded answer "
    "with sources. Record durable facts with `memory_write`; write notes only when asked. Results are "
    "the user's own notes: cite paths."
)
_caller: ContextVar[Principal] = ContextVar("dory_mcp_caller", default=LOCAL_USER)


class TokenStoreVerifier:
    """The SDK's TokenVerifier over Dory's token store."""

    def __init__(self, tokens: TokenStore) -> None:
        self.tokens = tokens

    async def verify_token(self, token: str) -> AccessToken | None:
        if token == OPEN_LOCAL:
            configured = self.tokens.configured()
            return None if configured else AccessToken(token=token, client_id=LOCAL_USER.name, scopes=["admin"])
        try:
            who = self.tokens.verify(token)
        except Unauthorized:
            return None
        return AccessToken(token="redacted", client_id=who.name, scopes=sorted(who.scopes))


def _principal() -> Principal:
    token = get_access_token()
    if token is None:
        return LOCAL_USER  # stdio: the local user
    if token.client_id == LOCAL_USER.name:
        return LOCAL_USER
    return Principal(token.client_id, frozenset(token.scopes))


def _tool_error(exc: DoryError) -> CallToolResult:
    """A failed call: the usual error body as the text, so the caller reads the stable code."""
    body = json.dumps({"error": exc.to_dict()}, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=body)], is_error=True)


class DoryMCP(MCPServer):
    def __init__(self, service: DoryService, **kwargs: Any) -> None:
        super().__init__("dory", instructions=INSTRUCTIONS, version=package_version(), **kwargs)
        self.service = service
        self.specs = {spec.name: spec for spec in TOOLS}
        for spec in TOOLS:
            self.add_tool(
                _tool_function(spec, service),
                name=spec.name,
                title=spec.title,
                description=spec.description,
                annotations=spec.annotations(),
                structured_output=True,
            )
        self.resource(
            "dory://note/{+path}", name="note", description="A note of the corpus, exactly", mime_type="text/markdown"
        )(self._read_note)

    async def list_tools(self) -> list[Tool]:
        who = _principal()
        return [tool for tool in await super().list_tools() if who.allows(self.specs[tool.name].scope)]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        who = _principal()
        spec = self.specs.get(name)
        if spec is None:  # the SDK would answer with a tool result; the spec says protocol error
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {name}")
        if not who.allows(spec.scope):
            return _tool_error(Forbidden(f"the token {who.name!r} lacks the {spec.scope!r} scope", scope=spec.scope))
        reset = _caller.set(who)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:  # the SDK refused the arguments against the input schema
            if isinstance(exc.__cause__, pydantic.ValidationError):
                return _tool_error(from_validation_error(exc.__cause__))
            raise
        finally:
            _caller.reset(reset)

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None, context: Any = None) -> Any:
        # The SDK answers an unknown prompt with error code 0; the spec asks for -32602.
        if name not in {prompt.name for prompt in await self.list_prompts()}:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {name}")
        return await super().get_prompt(name, arguments, context)

    def _read_note(self, path: str) -> str:
        try:
            return self.service.get(GetRequest(path=path)).content
        except (NotFound, InvalidInput) as exc:
            # No readable note at that URI (missing, hidden, not markdown, outside the corpus): the
            # protocol's "resource not found" (-32602 with the URI), not a crash of the server (-32603).
            raise ResourceNotFoundError(exc.message) from exc


def _tool_function(spec: ToolSpec, service: DoryService) -> Any:
    """A function whose signature is the request model's fields: the SDK builds the tool's input schema
    from it and its output schema from the response model."""

    def tool(**arguments: Any) -> CallToolResult:
        who = _caller.get()
        data = arguments | spec.fixed
        if "agent" in spec.request.model_fields:
            data["agent"] = who.agent(data.get("agent"))
        try:
            result = spec.run(service, spec.request.model_validate(data))
        except pydantic.ValidationError as exc:
            return _tool_error(from_validation_error(exc))
        except DoryError as exc:
            return _tool_error(exc)
        return CallToolResult(
            content=[TextContent(type="text", text=spec.text(result))],
            structured_content=result.model_dump(mode="json"),
        )

    tool.__name__ = spec.name
    tool.__signature__ = inspect.Signature(spec.parameters(), return_annotation=spec.response)  # type: ignore[attr-defined]
    return tool


def http_server(service: DoryService, tokens: TokenStore, base_url: str) -> DoryMCP:
    """The server for the streamable HTTP transport: bearer tokens through the SDK's verifier, and
    protected-resource metadata (RFC 9728) naming this server as its own issuer (there is no OAuth
    flow: tokens come from `dory auth new`)."""
    auth = AuthSettings(issuer_url=base_url, resource_server_url=f"{base_url}/mcp")
    return DoryMCP(service, token_verifier=TokenStoreVerifier(tokens), auth=auth)
