"""`/wiki`: the corpus as read-only HTML for people, rendered on the server, no JavaScript.

Pages: the index (the compiled wiki first, then every note by folder), one note (frontmatter as a
table, wikilinks as links, backlinks), search, and the agent sessions with their transcripts. Service
calls and markdown rendering run in the thread pool within the request deadline, like the API's.
Who may read is in access.py; the HTML, the errors and the security headers in pages.py; what makes a
note's markdown safe in render.py.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from importlib.resources import files
from typing import Annotated, Any, TypeVar

import pydantic
from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import HTMLResponse

from dory.errors import NotFound, from_validation_error
from dory.models import SearchRequest, SessionListRequest, WikiNote
from dory.service import DoryService
from dory.surfaces.http.wiki.access import WikiReader
from dory.surfaces.http.wiki.pages import WikiRoute, page
from dory.surfaces.http.wiki.render import to_html

router = APIRouter(prefix="/wiki", route_class=WikiRoute, include_in_schema=False)
SEARCH_HITS = 20
SESSIONS_LISTED = 500
TOP_LEVEL = "(top level)"
T = TypeVar("T")
_STYLE = files("dory.surfaces.http.wiki").joinpath("templates", "wiki.css").read_bytes()


async def _run(request: Request, fn: Callable[..., T], *args: Any, expensive: bool = False) -> T:
    result: T = await request.app.state.limits.run(fn, *args, expensive=expensive)
    return result


def _service(request: Request) -> DoryService:
    service: DoryService = request.app.state.service
    return service


@router.get("/style.css")
async def style() -> Response:
    """The one stylesheet (no auth: it holds nothing private, and styles the sign-in page)."""
    return Response(_STYLE, media_type="text/css")


@router.get("")
@router.get("/")
async def index(request: Request, who: WikiReader) -> HTMLResponse:
    catalogue = await _run(request, _service(request).wiki.catalogue)
    return page("index.html", compiled=catalogue.compiled, folders=_by_folder(catalogue.notes))


def _by_folder(notes: list[WikiNote]) -> list[tuple[str, list[WikiNote]]]:
    """Notes by folder, folders in path order (notes keep the catalogue's path order)."""
    folders: dict[str, list[WikiNote]] = {}
    for shown in notes:
        folders.setdefault(posixpath.dirname(shown.path) or TOP_LEVEL, []).append(shown)
    return sorted(folders.items())


@router.get("/n/{path:path}")
async def note(path: str, request: Request, who: WikiReader) -> HTMLResponse:
    return page("note.html", **await _run(request, _note_view, _service(request), path))


def _note_view(service: DoryService, path: str) -> dict[str, Any]:
    shown = service.wiki.page(path)
    return {"note": shown, "body": to_html(shown.body, shown.wikilinks)}


@router.get("/search")
async def search(request: Request, who: WikiReader, q: Annotated[str, Query(max_length=4000)] = "") -> HTMLResponse:
    if not q.strip():
        return page("search.html", query=q, found=None)
    settings = request.app.state.settings
    mode = "hybrid" if settings.embedder.backend != "none" else "bm25"
    try:
        # Not recorded: a person browsing is not an agent recalling (dreaming promotes what agents recall).
        req = SearchRequest(query=q, mode=mode, record=False, k=SEARCH_HITS)
    except pydantic.ValidationError as exc:
        raise from_validation_error(exc) from exc
    found = await _run(request, _service(request).search, req, expensive=mode == "hybrid")
    return page("search.html", query=q, found=found)


@router.get("/sessions")
async def sessions(request: Request, who: WikiReader) -> HTMLResponse:
    listed = await _run(request, _service(request).sessions.list, SessionListRequest(limit=SESSIONS_LISTED))
    return page("sessions.html", listed=listed)


@router.get("/sessions/{ident}")
async def session(ident: str, request: Request, who: WikiReader) -> HTMLResponse:
    return page("session.html", **await _run(request, _session_view, _service(request), ident))


def _session_view(service: DoryService, ident: str) -> dict[str, Any]:
    shown = service.sessions.show(ident)
    turns = [(turn, to_html(turn.text)) for turn in shown.turns]
    summary = to_html(shown.summary) if shown.summary else None
    return {"shown": shown, "turns": turns, "summary": summary}


@router.get("/{rest:path}")
async def unknown(request: Request) -> HTMLResponse:
    raise NotFound(f"no such wiki page: {request.url.path}")
