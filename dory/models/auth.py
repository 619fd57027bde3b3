"""Bearer tokens for the HTTP and MCP surfaces: create, list, revoke (SPEC §9)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from dory.models.common import _Model

# read: every read operation. write: exact and semantic writes, proposals. sessions: ingest and
# change sessions and context marks. admin: everything, plus tokens, reindex and jobs.
TokenScope = Literal["read", "write", "sessions", "admin"]
TOKEN_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


def _read_only() -> list[TokenScope]:
    return ["read"]


class TokenCreateRequest(_Model):
    name: str = Field(..., pattern=TOKEN_NAME_PATTERN, description="who uses it; recorded as the agent of its writes")
    scopes: list[TokenScope] = Field(default_factory=_read_only, min_length=1, max_length=4)
    expires: str | None = Field(
        None, max_length=40, description="a lifetime (30d, 12h, 90m) or an ISO date/time; none: never"
    )


class TokenInfo(_Model):
    name: str
    scopes: list[TokenScope]
    created_at: str
    expires_at: str | None = None
    revoked_at: str | None = None
    active: bool = True


class TokenCreated(_Model):
    token: str = Field(description="the secret, shown this once; Dory keeps only a salted hash")
    info: TokenInfo


class TokenListResponse(_Model):
    tokens: list[TokenInfo]


class TokenRevokeRequest(_Model):
    name: str = Field(..., pattern=TOKEN_NAME_PATTERN)
