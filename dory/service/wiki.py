"""What the wiki for people reads: every note by path and title, the compiled wiki pages, and one page
ready to render (its body, where each of its wikilinks leads, its backlinks).

Wikilinks resolve as the link graph resolves them (dory/memory/graph.py), and also to the compiled
wiki and to session transcripts, which the durable index leaves out but a reader follows all the same.
"""

from __future__ import annotations

from collections.abc import Callable

from dory.config import Settings
from dory.corpus.document import Document
from dory.corpus.paths import WIKI_ROOT, IgnoreRules
from dory.corpus.scan import scan_paths
from dory.errors import DoryError
from dory.memory import graph, links
from dory.memory.outside import outside_index_target
from dory.models import LinkEdge, LinkRequest, WikiCatalogue, WikiNote, WikiPage, WikiTarget
from dory.service.notes import read_note
from dory.service.resources import Resources

BACKLINKS_SHOWN = 200
WIKI_HOME = f"{WIKI_ROOT}/index.md"  # the compiled wiki's own index comes first


class WikiService:
    def __init__(self, settings: Settings, resources: Resources, require_index: Callable[[], None]) -> None:
        self.settings = settings
        self.resources = resources
        self.require_index = require_index

    def catalogue(self) -> WikiCatalogue:
        self.require_index()
        notes = [WikiNote(path=path, title=title) for path, title in self.resources.store().titles().items()]
        return WikiCatalogue(compiled=self._compiled(), notes=notes)

    def _compiled(self) -> list[WikiNote]:
        """The pages under wiki/ on disk (the index leaves them out), its home first. An unreadable
        page is still listed, by its path."""
        output = self.settings.output_root
        if output is None:
            return []
        found = scan_paths(output, IgnoreRules(self.settings.index.ignore), [WIKI_ROOT]).files
        pages = []
        for path in sorted(found, key=lambda p: (p != WIKI_HOME, p)):
            try:
                title = read_note(self.settings, path).title or path
            except DoryError:
                title = path
            pages.append(WikiNote(path=path, title=title))
        return pages

    def page(self, path: str) -> WikiPage:
        """One note as the wiki shows it. Any note `get` serves can be shown (transcripts and wiki
        pages too), under the same path checks."""
        self.require_index()
        doc = read_note(self.settings, path)
        backlinks, total = self._backlinks(doc.path)
        return WikiPage(
            path=doc.path,
            title=doc.title,
            frontmatter=doc.frontmatter,
            frontmatter_error=doc.frontmatter_error,
            hash=doc.sha256,
            body="\n".join(doc.lines[doc.body_start :]),
            wikilinks=self._targets(doc),
            backlinks=backlinks,
            backlinks_total=total,
        )

    def _targets(self, doc: Document) -> dict[str, WikiTarget]:
        written = links.written_wikilinks("\n".join(doc.lines[doc.body_start :]))
        if not written:
            return {}
        table = graph.names(self.resources.store().conn)
        output = self.settings.output_root  # transcripts and the wiki are Dory's output
        targets = {}
        for text, link in written.items():
            path = table.resolve(doc.path, link.kind, link.target, link.key)
            if path is None and output is not None:
                path = outside_index_target(output, doc.path, link.kind, link.target)
            targets[text] = WikiTarget(target=link.target, label=link.label, heading=link.heading, path=path)
        return targets

    def _backlinks(self, path: str) -> tuple[list[LinkEdge], int]:
        conn = self.resources.store().conn
        if path not in graph.names(conn).id_of:
            return [], 0  # transcripts and wiki pages are not in the link graph
        found = graph.neighbors(conn, path, LinkRequest(path=path, direction="in", max_edges=BACKLINKS_SHOWN))
        return found.edges, found.total
