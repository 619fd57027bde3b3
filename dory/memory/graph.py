"""The link graph (being written): rows from notes, and graph queries."""

from __future__ import annotations

import sqlite3

from dory.corpus.document import Document
from dory.memory.entities import Registry


def index_links(conn: sqlite3.Connection, file_id: int, doc: Document, registry: Registry) -> None:
    return None


def refresh_mentions(conn: sqlite3.Connection, registry: Registry, changed_pages: set[str]) -> None:
    return None
