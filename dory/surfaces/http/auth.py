"""Who is calling, and may they: bearer tokens checked against the token store, scopes per route.

With no active token at all the server is open, but only on a loopback address (`dory serve`
refuses anything else without tokens): every caller is then the local user, "local", with every
scope, as the CLI would be. As soon as one token exists, every route but /healthz, /readyz and the
wiki's stylesheet needs one. The caller's token name is the agent recorded on its writes and
sessions. The /wiki routes also take the token from a cookie, for browsers (wiki/access.py).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from dory.models import TokenScope
from dory.service.tokens import LOCAL_USER, Principal, TokenStore

bearer = HTTPBearer(auto_error=False, description="a token from `dory auth new NAME --scope …`")


class Gate:
    def __init__(self, tokens: TokenStore) -> None:
        self.tokens = tokens

    def authenticate(self, secret: str | None) -> Principal:
        if secret is None and not self.tokens.configured():
            return LOCAL_USER
        return self.tokens.verify(secret)


def admit(request: Request, secret: str | None, scope: TokenScope) -> Principal:
    """The principal a token stands for, refused (403) without `scope`, rate-limited per token, and
    recorded as the request's caller."""
    principal: Principal = request.app.state.gate.authenticate(secret)
    principal.require(scope)
    request.app.state.limits.rate.check(principal.name)
    request.state.caller = principal.name
    return principal


class Caller:
    """A route's dependency: the principal of the request's bearer token (see `admit`)."""

    def __init__(self, scope: TokenScope) -> None:
        self.scope = scope

    async def __call__(
        self, request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
    ) -> Principal:
        return admit(request, credentials.credentials if credentials else None, self.scope)


async def check_caller_first(request: Request) -> None:
    """Check the caller of a request refused before its route's dependencies ran. FastAPI parses a
    JSON body before them, so without this a caller with no token (or without the scope) would be
    told what is wrong with its body (400) rather than 401 or 403."""
    if hasattr(request.state, "caller"):
        return  # the route's own check ran and passed
    dependant = getattr(request.scope.get("route"), "dependant", None)
    for dependency in dependant.dependencies if dependant is not None else ():
        if isinstance(dependency.call, Caller):
            await dependency.call(request, await bearer(request))


Reader = Annotated[Principal, Depends(Caller("read"))]
Writer = Annotated[Principal, Depends(Caller("write"))]
SessionWriter = Annotated[Principal, Depends(Caller("sessions"))]
Admin = Annotated[Principal, Depends(Caller("admin"))]
