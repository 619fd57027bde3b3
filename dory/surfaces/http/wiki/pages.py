"""Every answer of the wiki is a page: HTML from the Jinja2 templates (autoescaped), errors included,
with headers that keep a hostile note inert even if something got past the sanitiser.

The Content-Security-Policy allows no script at all (default-src 'none' and no script-src), styles
and images from this server only (not even inline styles), forms that submit only here, no framing
and no <base>. Pages are never cached (they show private notes) and send no referrer.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import quote

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse
from fastapi.routing import APIRoute
from jinja2 import Environment, PackageLoader, StrictUndefined

from dory.errors import DoryError, Unauthorized, UsageError
from dory.surfaces.http.errors import error_headers, request_id_of
from dory.surfaces.http.wiki import access
from dory.surfaces.http.wiki.render import note_url

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def session_url(session_id: str) -> str:
    return "/wiki/sessions/" + quote(session_id, safe="")


_TEMPLATES = Environment(
    loader=PackageLoader("dory.surfaces.http.wiki", "templates"),
    autoescape=True,
    undefined=StrictUndefined,  # a name missing from a page's context is a bug, not an empty string
    trim_blocks=True,
    lstrip_blocks=True,
)
_TEMPLATES.globals.update(note_url=note_url, session_url=session_url)


def page(template: str, status: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(_TEMPLATES.get_template(template).render(**context), status_code=status)


def error_page(request: Request, exc: DoryError) -> HTMLResponse:
    request_id = request_id_of(request)
    shown = page("error.html", exc.http_status, error=exc, request_id=request_id)
    shown.headers.update(error_headers(exc, request_id))
    if isinstance(exc, Unauthorized) and access.COOKIE in request.cookies:
        shown.delete_cookie(access.COOKIE, path=access.COOKIE_PATH)  # revoked or expired: ask again
    return shown


class WikiRoute(APIRoute):
    """A wiki route: `?token=` signs a browser in (access.py); a Dory error, raised by the handler or
    by a dependency (auth), becomes an HTML error page with its status; every answer gets the
    security headers."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def guarded(request: Request) -> Response:
            response: Response
            try:
                if access.TOKEN_PARAM in request.query_params:
                    response = access.sign_in(request)
                else:
                    response = await handle(request)
            except DoryError as exc:
                response = error_page(request, exc)
            except RequestValidationError as exc:
                problems = "; ".join(str(err.get("msg")) for err in exc.errors())
                response = error_page(request, UsageError(f"the request is not valid: {problems}"))
            response.headers.update(SECURITY_HEADERS)
            return response

        return guarded
