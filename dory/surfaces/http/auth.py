"""Who is calling, and may they: bearer tokens checked against the token store, scopes per route.

With no active token at all the server is open, but only on a loopback address (`dory serve`
refuses anything else without tokens): every caller is then the local user, "local", with every
scope, as the CLI would be. As soon as one token exists, every route but /healthz, /readyz and the
wiki's stylesheet needs one. The caller's token name is the agent recorded on its writes and
sessions. The /wiki routes also take the token from a cookie, for browsers (wiki/access.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from dory.models import TokenScope
from dory.service.tokens import LOCAL_USER, Principal, TokenStore

LOCAL = LOCAL_USER
bearer = HTTPBearer(auto_error=False, description="a token from `dory auth new NAME --scope …`")


class Gate:
    def __init__(self, tokens: TokenStore) -> None:
        self.tokens = tokens

    def authenticate(self, secret: str | None) -> Principal:
        if secret is None and not self.tokens.configured():
            return LOCAL
        return self.tokens.verify(secret)


def admit(request: Request, secret: str | None, scope: TokenScope) -> Principal:
    """The principal a token stands for, refused (403) without `scope`, rate-limited per token, and
    recorded as the request's caller."""
    principal: Principal = request.app.state.gate.authenticate(secret)
    principal.require(scope)
    request.app.state.limits.rate.check(principal.name)
    request.state.caller = principal.name
    return principal


def caller(scope: TokenScope) -> Callable[..., Awaitable[Principal]]:
    """A dependency: the principal of the request's bearer token (see `admit`)."""

    async def dependency(
        request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
    ) -> Principal:
        return admit(request, credentials.credentials if credentials else None, scope)

    return dependency


Reader = Annotated[Principal, Depends(caller("read"))]
Writer = Annotated[Principal, Depends(caller("write"))]
SessionWriter = Annotated[Principal, Depends(caller("sessions"))]
Admin = Annotated[Principal, Depends(caller("admin"))]
