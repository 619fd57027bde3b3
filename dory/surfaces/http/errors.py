"""One error body for every failure of the HTTP surface: `{"error": {"code", "message", "type",
"request_id", "details"?}}`, with the status of the error's class (dory.errors). Nothing else ever
reaches a client: FastAPI's own errors (bad JSON, unknown route, wrong method) and unexpected
exceptions are turned into the same shape, so a client needs one parser. `ErrorBody` documents that
shape in /openapi.json, and `documented` lists which statuses a route can answer with it."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, ValidationError
from starlette.exceptions import HTTPException

from dory.errors import DoryError, NotFound, RateLimited, Unauthorized, UsageError, from_validation_error
from dory.surfaces.http.auth import check_caller_first

log = logging.getLogger("dory.http")

# Starlette's own statuses (a route that does not exist, a method it does not take), as codes.
_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 406: "not_acceptable", 415: "unsupported_media_type"}


class ErrorInfo(BaseModel):
    code: str = Field(description="stable machine code (dory.errors), e.g. hash_conflict")
    message: str = Field(description="for people")
    type: str = Field(description="the error's class")
    request_id: str = Field(description="the request's id, also in the X-Request-Id header")
    details: dict[str, Any] | None = Field(None, description="facts for the caller (current_hash, generation, …)")


class ErrorBody(BaseModel):
    """The answer to every failed request."""

    error: ErrorInfo


# What each error status means on this surface (its codes are in dory.errors).
_MEANINGS = {
    400: "malformed request: bad JSON, a field the models refuse (usage_error), or input Dory does not accept "
    "(validation_error, path_not_allowed, path_outside_corpus, …)",
    401: "no token, or an unknown, revoked or expired one (unauthorized)",
    403: "the token lacks the scope this route needs (forbidden), a canonical page needs allow_canonical, "
    "or the corpus is read-only (read_only_corpus: a folder added with `dory add` without --writable)",
    404: "no such note, session, proposal, token or route (not_found)",
    409: "the target moved on: hash_conflict (details.current_hash), stale_proposal, already_exists",
    413: "the body is over the server's cap (request_too_large) or the content over [write] max_bytes",
    422: "unsafe content (bidi_control, invisible_characters, tag_characters, control_characters, "
    "prompt_injection), or an Idempotency-Key already used for another request (idempotency_key_reused)",
    428: "replace and forget need the hash of the version read (If-Match or expected_hash)",
    429: "past the token's rate limit (rate_limited); Retry-After says when to try again",
    503: "the index has not reached min_generation (index_behind, details.generation), or a backend is down",
    504: "past the request's deadline (deadline_exceeded); a write may still complete: retry with its Idempotency-Key",
    507: "the disk is full (disk_full); nothing was changed",
}
# Every route behind a token can answer these.
GUARDED = (400, 401, 403, 413, 429, 504)


def documented(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a route or router: each status with the error body and its meaning."""
    return {status: {"model": ErrorBody, "description": _MEANINGS[status]} for status in statuses}


M = TypeVar("M", bound=BaseModel)


def from_parameters(model: type[M], **fields: Any) -> M:
    """A request model a route builds from path and query parameters: a value the model refuses is
    the caller's 400, as in a body (FastAPI validates a body model itself, not one built here)."""
    try:
        return model(**fields)
    except ValidationError as exc:
        raise from_validation_error(exc) from exc


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


async def _refused(request: Request) -> JSONResponse | None:
    """401 or 403 for a caller who may not use the route at all, answered before anything about what
    it sent (the body is parsed before the route's own check runs)."""
    try:
        await check_caller_first(request)
    except DoryError as refused:
        return error_response(refused, request_id_of(request))
    return None


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    problems = _problems(exc.errors())
    message = "; ".join(f"{p['field']}: {p['problem']}" for p in problems) or "the request is not valid"
    return await _refused(request) or error_response(UsageError(message, errors=problems), request_id_of(request))


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        err: DoryError = NotFound(f"no such route: {request.method} {request.url.path}")
    elif exc.status_code == 400:  # a body FastAPI could not parse (not UTF-8, say)
        err = UsageError(str(exc.detail))
    else:
        err = DoryError(str(exc.detail))
        err.code, err.http_status = _HTTP_CODES.get(exc.status_code, "http_error"), exc.status_code
    response = await _refused(request) or error_response(err, request_id_of(request))
    response.headers.update(exc.headers or {})  # e.g. the Allow of a 405 (RFC 9110 requires it)
    return response


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error in %s %s", request.method, request.url.path)
    return error_response(DoryError(f"internal error: {type(exc).__name__}"), request_id_of(request))


def install(app: FastAPI, on_error: Callable[[str], None]) -> None:
    """Route every failure to one body; `on_error` is told each Dory error's code (for metrics)."""
    app.add_exception_handler(DoryError, _dory_error(on_error))
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
