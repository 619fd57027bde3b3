"""`/wiki` on a real `dory serve` with a reader token: the index by folder, notes with their
frontmatter, wikilinks and backlinks, search, sessions, a hostile note rendered inert, HTML errors,
refused traversal, and the browser sign-in (`?token=` → cookie). Then the same pages in a real
headless Chromium (Playwright driving the Debian `chromium` package): links navigate, the search box
works, and no script of a hostile note or transcript runs.

One server serves the module; the open local mode (no token) is checked on an app over a real service.
"""

from __future__ import annotations

import http.client
import json
import re
import shutil
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi.testclient import TestClient
from support.daemon import daemon_env
from support.server import ServerProcess, cli
from support.waiting import DEADLINE_S

from dory.models import ReindexRequest
from dory.service import DoryService
from dory.surfaces.http.app import create_app

PWNED = "window.__pwned = 1"
HOSTILE = f"""# Hostile

<script>{PWNED}</script>

<img src=x onerror="{PWNED}">

<iframe src="javascript:{PWNED}"></iframe> <svg onload="{PWNED}"></svg>

<a href="javascript:{PWNED}" onclick="{PWNED}">raw link</a> <div onmouseover="{PWNED}">hover</div>

[click me](javascript:window.__pwned=1) [data link](data:text/html,<script>{PWNED}</script>) <javascript:{PWNED}>

[tab trick](jav&#x09;ascript:window.__pwned=1) ![pic](x" onerror="{PWNED})

[["><script>{PWNED}</script>]] [[Ada Lovelace|<b onclick="{PWNED}">bold label</b>]]
"""
NOTES = {
    "notes/alpha.md": (
        "---\ntitle: Alpha\ntags: [quokka, island]\n---\n# Alpha\n\n"
        "The quokka lives on an island with [[Ada Lovelace]] and [[nowhere|a missing note]].\n"
    ),
    "people/ada-lovelace.md": (
        "---\ntitle: Ada Lovelace\naliases: [Ada Lovelace]\n---\n# Ada Lovelace\n\nMathematician.\n"
    ),
    "readme.md": "# Readme\n\nA top-level note.\n",
    "notes/hostile.md": HOSTILE,
    "wiki/index.md": "---\ntitle: Wiki\ntype: wiki\n---\n# Wiki\n\n- [[wiki/hot|Hot]]\n- [[people/ada-lovelace|Ada]]\n",
    "wiki/hot.md": "---\ntitle: Hot\ntype: wiki\n---\n# Hot\n\n- [[notes/alpha|Alpha]]\n",
    ".git/config": "[core]\n\tbare = false\n",  # notes folders are often repositories
}
TRANSCRIPT = [
    {
        "type": "user",
        "content": f"where do quokkas live? <script>{PWNED}</script>",
        "timestamp": "2026-11-20T10:00:00Z",
    },
    {"type": "assistant", "content": "On **Rottnest Island**.", "timestamp": "2026-11-20T10:00:05Z"},
]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, dory_cmd: list[str]) -> Iterator[tuple[ServerProcess, str]]:
    base = tmp_path_factory.mktemp("wiki")
    root = base / "corpus"
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    env = daemon_env()
    transcript = base / "quokka.jsonl"
    transcript.write_text("".join(json.dumps(turn) + "\n" for turn in TRANSCRIPT), encoding="utf-8")
    ingested = cli(
        dory_cmd, root, "sessions", "ingest", str(transcript), "--format", "jsonl", "--agent", "tester", env=env
    )
    assert ingested.returncode == 0, ingested.stderr
    made = cli(dory_cmd, root, "auth", "new", "person", "--scope=read", "--json", env=env)
    assert made.returncode == 0, made.stderr
    server = ServerProcess(dory_cmd, root, env).start()
    yield server, json.loads(made.stdout)["token"]
    assert server.stop() == 0


@pytest.fixture
def wiki(served: tuple[ServerProcess, str]) -> Iterator[httpx.Client]:
    server, token = served
    with server.client(token) as client:
        yield client


class Page(HTMLParser):
    """A page's elements as (tag, attributes), its links and its text."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {name: value or "" for name, value in attrs}))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def hrefs(self, css_class: str | None = None) -> list[str]:
        return [
            attrs["href"]
            for tag, attrs in self.elements
            if tag == "a" and "href" in attrs and (css_class is None or css_class in attrs.get("class", "").split())
        ]

    def with_class(self, css_class: str) -> list[dict[str, str]]:
        return [attrs for _, attrs in self.elements if css_class in attrs.get("class", "").split()]


def error_code(html: str) -> str:
    """The error code an HTML error page shows (the JSON body's `error.code`)."""
    found = re.search(r'<code class="error-code">([a-z_]+)</code>', html)
    return found.group(1) if found else ""


def _between(html: str, start: str, end: str) -> str:
    return html.split(start, 1)[1].split(end, 1)[0]


# -- pages -----------------------------------------------------------------------------------------


def test_the_index_lists_the_compiled_wiki_first_then_every_note_by_folder(wiki: httpx.Client) -> None:
    answer = wiki.get("/wiki")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/html")
    compiled = Page(_between(answer.text, '<section class="compiled">', "</section>")).hrefs()
    assert compiled == ["/wiki/n/wiki/index.md", "/wiki/n/wiki/hot.md"]
    folders = _between(answer.text, '<section class="folders">', "</section>")
    summaries = [part.split("<small>")[0].strip() for part in folders.split("<summary>")[1:]]
    assert summaries == ["(top level)", "notes", "people"]
    assert Page(folders).hrefs() == [
        "/wiki/n/readme.md",
        "/wiki/n/notes/alpha.md",
        "/wiki/n/notes/hostile.md",
        "/wiki/n/people/ada-lovelace.md",
    ]
    assert wiki.get("/wiki/").status_code == 200


def test_a_note_shows_its_frontmatter_its_text_and_where_its_wikilinks_lead(wiki: httpx.Client) -> None:
    answer = wiki.get("/wiki/n/notes/alpha.md")
    assert answer.status_code == 200
    table = _between(answer.text, '<table class="frontmatter">', "</table>")
    assert "<th>title</th><td>Alpha</td>" in table and "<th>tags</th><td>quokka, island</td>" in table
    page = Page(_between(answer.text, '<article class="note">', "</article>"))
    assert "The quokka lives on an island with " in "".join(page.text)
    assert page.hrefs("wikilink") == ["/wiki/n/people/ada-lovelace.md"]
    assert [attrs["title"] for attrs in page.with_class("unresolved")] == ['no note named "nowhere"']


def test_the_compiled_wiki_links_its_own_pages_and_the_notes(wiki: httpx.Client) -> None:
    page = Page(wiki.get("/wiki/n/wiki/index.md").text)
    assert page.hrefs("wikilink") == ["/wiki/n/wiki/hot.md", "/wiki/n/people/ada-lovelace.md"]


def test_a_note_lists_the_notes_that_link_to_it(wiki: httpx.Client) -> None:
    answer = wiki.get("/wiki/n/people/ada-lovelace.md")
    backlinks = Page(_between(answer.text, '<section class="backlinks">', "</section>")).hrefs()
    assert backlinks == ["/wiki/n/notes/alpha.md", "/wiki/n/notes/hostile.md"]
    alone = wiki.get("/wiki/n/readme.md").text
    assert "No note links here." in _between(alone, '<section class="backlinks">', "</section>")


def test_the_search_box_finds_a_note_with_its_snippet(wiki: httpx.Client) -> None:
    form = [attrs for tag, attrs in Page(wiki.get("/wiki").text).elements if tag == "form"]
    assert form == [{"class": "search", "method": "get", "action": "/wiki/search", "role": "search"}]
    answer = wiki.get("/wiki/search", params={"q": "quokka island"})
    assert answer.status_code == 200
    hits = _between(answer.text, '<ol class="hits">', "</ol>")
    assert Page(hits).hrefs() == ["/wiki/n/notes/alpha.md"]
    assert "The quokka lives on an island" in hits
    assert "Type words" in wiki.get("/wiki/search").text


def test_sessions_are_listed_and_a_transcript_is_readable(wiki: httpx.Client) -> None:
    listed = Page(_between(wiki.get("/wiki/sessions").text, '<table class="sessions">', "</table>"))
    assert len(listed.hrefs()) == 1 and listed.hrefs()[0].startswith("/wiki/sessions/")
    shown = wiki.get(listed.hrefs()[0])
    assert shown.status_code == 200
    assert "<strong>Rottnest Island</strong>" in shown.text and "where do quokkas live?" in shown.text
    _assert_inert(shown.text)


def test_a_hostile_note_renders_inert_under_a_strict_policy(wiki: httpx.Client) -> None:
    answer = wiki.get("/wiki/n/notes/hostile.md")
    assert answer.status_code == 200
    _assert_inert(answer.text)
    assert "&lt;script&gt;" in answer.text  # shown to the reader as text, not dropped silently
    note = Page(_between(answer.text, '<article class="note">', "</article>"))
    assert "bold label" in "".join(note.text) and "b" not in {tag for tag, _ in note.elements}
    policy = answer.headers["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "script-src" not in policy and "form-action 'self'" in policy
    assert answer.headers["X-Content-Type-Options"] == "nosniff"
    assert answer.headers["Referrer-Policy"] == "no-referrer" and answer.headers["Cache-Control"] == "no-store"


def _assert_inert(html: str) -> None:
    """No element that runs code, no event handler, no URL with a scheme that runs or embeds code."""
    page = Page(html)
    tags = {tag for tag, _ in page.elements}
    assert not tags & {"script", "iframe", "svg", "object", "embed", "style", "base"}
    for tag, attrs in page.elements:
        assert not [name for name in attrs if name.startswith("on")], (tag, attrs)
        assert "style" not in attrs, (tag, attrs)
        for name in ("href", "src", "action"):
            value = "".join(attrs.get(name, "").split()).lower()
            assert not value.startswith(("javascript:", "data:", "vbscript:")), (tag, attrs)


# -- errors, traversal, access ------------------------------------------------------------------------


def test_a_missing_note_or_page_is_an_html_404(wiki: httpx.Client) -> None:
    for path in ("/wiki/n/notes/nothing-here.md", "/wiki/no-such-page"):
        answer = wiki.get(path)
        assert answer.status_code == 404 and answer.headers["content-type"].startswith("text/html")
        assert error_code(answer.text) == "not_found"
        assert "Content-Security-Policy" in answer.headers


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("/wiki/n/../../etc/passwd", "path_outside_corpus"),
        ("/wiki/n/%2e%2e/%2e%2e/etc/passwd", "path_outside_corpus"),
        ("/wiki/n/..%2f..%2f..%2fetc%2fpasswd", "path_outside_corpus"),
        ("/wiki/n/notes/..%2F..%2F..%2Fetc%2Fpasswd", "path_outside_corpus"),
        ("/wiki/n//etc/passwd", "path_outside_corpus"),
        ("/wiki/n/.dory/tokens.json", "path_not_allowed"),
        ("/wiki/n/.git/config", "path_not_allowed"),
    ],
)
def test_a_path_out_of_the_notes_is_refused(served: tuple[ServerProcess, str], path: str, code: str) -> None:
    """Sent byte for byte (http.client does not normalise `..` as httpx and browsers do)."""
    server, token = served
    where = urlsplit(server.url)
    connection = http.client.HTTPConnection(where.hostname or "", where.port, timeout=DEADLINE_S)
    try:
        connection.request("GET", path, headers={"Authorization": f"Bearer {token}"})
        answer = connection.getresponse()
        body = answer.read().decode()
    finally:
        connection.close()
    assert answer.status == 400 and error_code(body) == code
    assert "root:" not in body


def test_without_a_token_the_wiki_asks_for_one(served: tuple[ServerProcess, str]) -> None:
    with served[0].client() as anonymous:
        answer = anonymous.get("/wiki/n/notes/alpha.md")
        assert answer.status_code == 401 and error_code(answer.text) == "unauthorized"
        assert "/wiki?token=YOUR_TOKEN" in answer.text and "quokka" not in answer.text
        assert anonymous.get("/wiki/style.css").status_code == 200  # the sign-in page is styled
        bad = anonymous.get("/wiki", params={"token": "dory_not_a_token"})
        assert bad.status_code == 401 and "set-cookie" not in bad.headers


def test_a_token_in_the_url_once_becomes_a_cookie_for_the_wiki_only(served: tuple[ServerProcess, str]) -> None:
    server, token = served
    with server.client() as browser:
        answer = browser.get("/wiki/search", params={"q": "quokka", "token": token})
        assert answer.status_code == 303 and answer.headers["location"] == "/wiki/search?q=quokka"
        cookie = answer.headers["set-cookie"]
        assert cookie.startswith(f"dory_wiki={token};")
        assert {"HttpOnly", "Path=/wiki", "SameSite=strict"} <= {part.strip() for part in cookie.split(";")}
        assert browser.get("/wiki/search", params={"q": "quokka"}).status_code == 200
        # The cookie is the wiki's: the API still wants the header.
        assert browser.get("/v1/notes/notes/alpha.md", headers={"Cookie": f"dory_wiki={token}"}).status_code == 401
    with server.client() as stale:
        refused = stale.get("/wiki", headers={"Cookie": "dory_wiki=dory_revoked_or_made_up"})
        assert refused.status_code == 401
        assert refused.headers["set-cookie"].startswith('dory_wiki=""') and "Max-Age=0" in refused.headers["set-cookie"]


def test_with_no_token_configured_the_wiki_is_open_like_the_api(lexical_service: Any) -> None:
    service: DoryService = lexical_service({"notes/a.md": "# A\n\nopen wiki\n"})
    service.reindex(ReindexRequest())
    with TestClient(create_app(service, lambda: {}, lambda: {}), base_url="http://127.0.0.1") as local:
        assert local.get("/wiki/n/notes/a.md").status_code == 200
        assert "open wiki" in local.get("/wiki/search", params={"q": "open"}).text


# -- a real browser -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """Chromium from the Debian package, driven by Playwright (its own browser download needs a network)."""
    from playwright.sync_api import Error, sync_playwright

    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        pytest.skip("no chromium on PATH: `apt-get install chromium` (.ci/run does)")
    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(executable_path=executable)
        except Error as exc:
            pytest.skip(f"{executable} cannot be launched here: {exc.message.splitlines()[0]}")
        yield browser
        browser.close()


@pytest.fixture
def tab(chromium: Any, served: tuple[ServerProcess, str]) -> Iterator[Any]:
    """A signed-in page: `?token=` once, then the cookie (a fresh browser context per test)."""
    server, token = served
    context = chromium.new_context(base_url=server.url)  # JavaScript on: a hostile note gets every chance
    context.set_default_timeout(DEADLINE_S * 1000)  # a hang becomes a failure; no test waits for it
    page = context.new_page()
    page.goto(f"/wiki?token={token}")
    assert urlsplit(page.url).path == "/wiki" and "token" not in page.url
    yield page
    context.close()


def test_in_a_browser_pages_load_and_links_navigate(tab: Any) -> None:
    assert tab.locator("h1").inner_text() == "Notes"
    tab.locator("section.folders").get_by_role("link", name="Alpha").click()
    tab.wait_for_url("**/wiki/n/notes/alpha.md")
    tab.locator("article.note a.wikilink").click()
    tab.wait_for_url("**/wiki/n/people/ada-lovelace.md")
    assert tab.locator("article.note h1").inner_text() == "Ada Lovelace"
    tab.locator("section.backlinks").get_by_role("link", name="notes/alpha.md").click()
    tab.wait_for_url("**/wiki/n/notes/alpha.md")
    assert tab.locator("span.unresolved").inner_text() == "a missing note"


def test_in_a_browser_the_search_box_finds_a_note(tab: Any) -> None:
    tab.get_by_role("searchbox").fill("quokka")
    tab.get_by_role("button", name="Search").click()
    tab.wait_for_url(lambda url: urlsplit(url).path == "/wiki/search" and "q=quokka" in url)
    tab.locator("ol.hits").get_by_role("link", name="Alpha").click()
    tab.wait_for_url("**/wiki/n/notes/alpha.md")


def test_in_a_browser_a_hostile_note_runs_no_script(tab: Any) -> None:
    tab.goto("/wiki/n/notes/hostile.md")
    tab.wait_for_load_state("load")
    assert tab.evaluate("1 + 1") == 2  # evaluation itself works under the page's policy
    assert tab.evaluate("window.__pwned") is None
    for text in ("raw link", "hover", "click me"):
        tab.get_by_text(text).first.click()
        assert tab.evaluate("window.__pwned") is None, text
    tab.get_by_role("link", name="tab trick").click()  # a relative link to nowhere once defused
    tab.wait_for_load_state("load")
    assert tab.evaluate("window.__pwned") is None


def test_in_a_browser_a_hostile_transcript_runs_no_script(tab: Any) -> None:
    tab.goto("/wiki/sessions")
    tab.locator("table.sessions a").first.click()
    tab.wait_for_url("**/wiki/sessions/*")
    assert tab.get_by_text("Rottnest Island").is_visible()
    assert tab.evaluate("window.__pwned") is None
