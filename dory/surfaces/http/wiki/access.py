"""Who may read the wiki, and how a browser proves it.

The wiki takes the same tokens as the API (any token may read), and is open exactly when the API is:
with no token configured, on a loopback address, every caller is the local user. A browser cannot
send a bearer header, so besides `Authorization: Bearer …` the wiki accepts a cookie:

- open `/wiki?token=TOKEN` once (any wiki URL works): the token is checked, stored in the browser as
  the cookie `dory_wiki` (HttpOnly: no script can read it; SameSite=Strict: never sent with a request
  another site starts; Path=/wiki; Secure when served over https; gone when the browser closes), and
  the browser is redirected to the same page without the token, so it leaves the address bar and the
  history;
- the cookie is accepted on /wiki routes only: /v1 still wants the header, so the cookie can never
  write, whatever the token's scopes;
- it is checked against the token store on every request like a header: a revoked or expired token
  stops working at once, and the error page clears the cookie.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import Depends, Request
from fastapi.responses import RedirectResponse
from fastapi.security import HTTPAuthorizationCredentials

from dory.service.tokens import Principal
from dory.surfaces.http.auth import admit, bearer

COOKIE = "dory_wiki"
COOKIE_PATH = "/wiki"
TOKEN_PARAM = "token"


async def wiki_reader(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
) -> Principal:
    """A dependency: the principal of the bearer header, else of the wiki cookie (see the module)."""
    secret = credentials.credentials if credentials else request.cookies.get(COOKIE)
    return admit(request, secret, "read")


WikiReader = Annotated[Principal, Depends(wiki_reader)]


def sign_in(request: Request) -> RedirectResponse:
    """Check `?token=`, keep it as the wiki cookie and send the browser to the same URL without it."""
    token = request.query_params[TOKEN_PARAM]
    admit(request, token, "read")
    rest = [(key, value) for key, value in request.query_params.multi_items() if key != TOKEN_PARAM]
    target = request.url.path + (f"?{urlencode(rest)}" if rest else "")
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        COOKIE,
        token,
        path=COOKIE_PATH,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response
