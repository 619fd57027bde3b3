"""One error body for every failure of the HTTP surface: `{"error": {"code", "message", "type",
"request_id", "details"?}}`, with the status of the error's class (dory.errors). Nothing else ever
reaches a client: FastAPI's own errors (bad JSON, unknown route, wrong method) and unexpected
exceptions are turned into the same shape, so a client needs one parser."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from dory.errors import DoryError, NotFound, RateLimited, Unauthorized, UsageError

log = logging.getLogger("dory.http")

# Starlette's own statuses (a route that does not exist, a method it does not take), as codes.
_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 406: "not_acceptable", 415: "unsupported_media_type"}


def request_id_of(request: Request) -> str:
    return str(getattr(request.state, "request_id", ""))


def error_headers(exc: DoryError, request_id: str) -> dict[str, str]:
    """The headers an error answer carries, whatever its body (JSON here, HTML in the wiki)."""
    headers = {"X-Request-Id": request_id}
    if isinstance(exc, RateLimited):
        headers["Retry-After"] = str(max(1, round(float(exc.details.get("retry_after_s", 1)))))
    if type(exc) is Unauthorized:
        headers["WWW-Authenticate"] = 'Bearer realm="dory"'
    return headers


def error_response(exc: DoryError, request_id: str) -> JSONResponse:
    body = exc.to_dict() | {"request_id": request_id}
    return JSONResponse({"error": body}, status_code=exc.http_status, headers=error_headers(exc, request_id))


def _problems(errors: Any) -> list[dict[str, str]]:
    """FastAPI's validation errors as {"field", "problem", "type"}, without the offending input."""
    found = []
    for err in errors:
        loc = [str(part) for part in err.get("loc", ()) if part not in ("body", "query", "path", "header")]
        field = "body" if err.get("type") == "json_invalid" else ".".join(loc) or "input"
        found.append({"field": field, "problem": str(err.get("msg")), "type": str(err.get("type"))})
    return found


def _dory_error(on_error: Callable[[str], None]) -> Callable[[Request, Exception], Awaitable[JSONResponse]]:
    async def handler(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, DoryError)
        on_error(exc.code)
        return error_response(exc, request_id_of(request))

    return handler


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    problems = _problems(exc.errors())
    message = "; ".join(f"{p['field']}: {p['problem']}" for p in problems) or "the request is not valid"
    return error_response(UsageError(message, errors=problems), request_id_of(request))


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        err: DoryError = NotFound(f"no such route: {request.method} {request.url.path}")
    else:
        err = DoryError(str(exc.detail))
        err.code, err.http_status = _HTTP_CODES.get(exc.status_code, "http_error"), exc.status_code
    return error_response(err, request_id_of(request))


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error in %s %s", request.method, request.url.path)
    return error_response(DoryError(f"internal error: {type(exc).__name__}"), request_id_of(request))


def install(app: FastAPI, on_error: Callable[[str], None]) -> None:
    """Route every failure to one body; `on_error` is told each Dory error's code (for metrics)."""
    app.add_exception_handler(DoryError, _dory_error(on_error))
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
