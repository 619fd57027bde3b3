"""What the indexer derives from a note besides its chunks: link rows and claim events.

The store calls these hooks inside the indexer's transaction as it writes, deletes and renames file
rows; `finish` runs at the end of each batch to update what depends on several notes at once (the
claims of an entity replayed from all its events, mentions of an entity whose page changed).
"""

from __future__ import annotations

import sqlite3

from dory.corpus.document import Document
from dory.memory import claims, graph
from dory.memory.entities import Registry, layout_family


class Derived:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._entity_pages: set[str] = set()  # canonical pages written, deleted or moved this batch
        self._claim_entities: set[str] = set()  # entities whose claim events changed this batch

    def file_written(self, file_id: int, doc: Document) -> None:
        self._claim_entities |= claims.record_events(self.conn, file_id, doc)
        if layout_family(doc.path):
            self._entity_pages.add(doc.path)
        graph.index_links(self.conn, file_id, doc)

    def file_deleted(self, file_id: int, path: str) -> None:
        self._claim_entities |= claims.entities_of_file(self.conn, file_id)
        if layout_family(path):
            self._entity_pages.add(path)

    def file_renamed(self, old: str, new: str) -> None:
        graph.rename_note(self.conn, old, new)
        for path in (old, new):
            if layout_family(path):
                self._entity_pages.add(path)

    def finish(self) -> None:
        if self._claim_entities:
            claims.rebuild(self.conn, sorted(self._claim_entities))
        if self._entity_pages:
            graph.refresh_mentions(self.conn, Registry.load(self.conn), self._entity_pages)
        self._claim_entities, self._entity_pages = set(), set()
