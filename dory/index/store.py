"""Rows of the index: files, chunks and their FTS entries, skipped files, metadata.

All SQL that touches these tables lives here, so the indexer and the searchers share one
definition of what a file row and a chunk row mean.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from dory.corpus.document import Document, frontmatter_list
from dory.corpus.scan import Skip
from dory.errors import ConfigError
from dory.index import db

if TYPE_CHECKING:
    from dory.corpus.chunking import Chunk  # markdown-it: for the indexer, not for a search (SPEC §11)

_TOKENIZER_OK = re.compile(r"^[A-Za-z0-9_ ]+$")
DATE_KEYS = ("date", "updated", "created")


@dataclass(frozen=True, slots=True)
class IndexedFile:
    id: int
    path: str
    size: int
    mtime_ns: int
    sha256: str


def now_iso(timespec: str = "seconds") -> str:
    """UTC now as ISO 8601 with a Z, to the second (or e.g. timespec="microseconds")."""
    return dt.datetime.now(dt.UTC).isoformat(timespec=timespec).replace("+00:00", "Z")


def title_context(title: str, frontmatter: dict[str, Any], path: str) -> str | None:
    """The title worth giving the embedder: not one made up from the file name (a rename would
    then change every chunk's vector)."""
    if "title" not in frontmatter and title == Path(path).stem:
        return None
    return title


def embed_text(context_title: str | None, heading_path: tuple[str, ...] | list[str], text: str) -> str:
    """What the embedder sees: document context (title and heading path) plus the chunk text."""
    context = list(heading_path)
    if context_title and (not context or context[0] != context_title):
        context.insert(0, context_title)
    prefix = " > ".join(context)
    return f"{prefix}\n\n{text}" if prefix else text


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def input_hash(context_title: str | None, heading_path: tuple[str, ...] | list[str], text: str) -> str:
    """A chunk's `content_hash`: the hash of exactly what the embedder is given, so that a vector is
    reused (embedding cache) or kept (`vector_hash`) only while that input is the same."""
    return content_hash(embed_text(context_title, heading_path, text))


def path_words(path: str) -> str:
    """What of a path is searchable: the file name and its folder. Deeper folders would turn a folder
    name into a term of every chunk below it, which costs every query using that word dearly."""
    parts = path.rsplit("/", 2)[-2:]
    parts[-1] = parts[-1].removesuffix(".md")
    return " ".join(parts)


def doc_date(frontmatter: dict[str, Any]) -> str | None:
    for key in DATE_KEYS:
        value = frontmatter.get(key)
        if isinstance(value, str) and re.match(r"^\d{4}-\d{2}-\d{2}", value):
            return value[:10]
    return None


class DerivedRows(Protocol):
    """What the store tells the layer above as it writes file rows (links and claim events, kept by
    dory.memory.derived), inside the same transaction; `finish` ends a batch."""

    def file_written(self, file_id: int, doc: Document) -> None: ...

    def file_deleted(self, file_id: int, path: str) -> None: ...

    def file_renamed(self, old: str, new: str) -> None: ...

    def finish(self) -> None: ...


class _ReadOnly:
    """The hooks of a read-only store: it never writes a file row."""

    def file_written(self, file_id: int, doc: Document) -> None:
        raise AssertionError("a read-only index store does not write")

    def file_deleted(self, file_id: int, path: str) -> None:
        raise AssertionError("a read-only index store does not write")

    def file_renamed(self, old: str, new: str) -> None:
        raise AssertionError("a read-only index store does not write")

    def finish(self) -> None:
        pass


class IndexStore:
    def __init__(
        self,
        path: Path,
        tokenizer: str,
        trigram: bool = False,
        readonly: bool = False,
        derived: Callable[[sqlite3.Connection], DerivedRows] | None = None,
    ) -> None:
        """A connection to the index. A writable store needs `derived`, the factory of the hooks
        that keep links and claims in step with the file rows (the layer above supplies them)."""
        if not readonly and derived is None:
            raise ValueError("a writable index store needs its derived-row hooks")
        if not _TOKENIZER_OK.match(tokenizer):
            raise ConfigError(f"invalid FTS tokenizer setting: {tokenizer!r}")
        self.path = path
        self.trigram = trigram
        self.conn = db.connect(path, readonly=readonly)
        if not readonly:
            db.migrate(self.conn, tokenizer)
            self._ensure_tokenizer(tokenizer)
            if trigram:
                self.conn.execute(db.TRIGRAM_TABLE)
        self.has_trigram = self._table_exists("chunks_tri")
        self.derived: DerivedRows = derived(self.conn) if derived is not None else _ReadOnly()

    def close(self) -> None:
        self.conn.close()

    def _table_exists(self, name: str) -> bool:
        row = self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone()
        return row is not None

    def _ensure_tokenizer(self, tokenizer: str) -> None:
        """A changed tokenizer setting recreates the FTS table; the indexer then refills it."""
        current = db.get_meta(self.conn, "fts_tokenizer")
        if current == tokenizer:
            return
        with self.conn:
            if current is not None:
                self.conn.execute("DROP TABLE chunks_fts")
                self.conn.execute(
                    "CREATE VIRTUAL TABLE chunks_fts USING fts5(title, aliases, headings, path, body, "
                    f"tokenize = '{tokenizer}')"
                )
                self.conn.execute("DELETE FROM files")
            db.set_meta(self.conn, "fts_tokenizer", tokenizer)

    # -- reads -------------------------------------------------------------------------------
    def indexed_files(self, scope: tuple[str, ...] | None = None) -> dict[str, IndexedFile]:
        """Every file row, or only those at or below the given corpus-relative paths."""
        rows = self._in_scope("SELECT id, path, size, mtime_ns, sha256 FROM files", scope)
        return {row["path"]: IndexedFile(*row) for row in rows}

    def titles(self) -> dict[str, str]:
        """Every indexed note's title, by path, in path order."""
        return {row[0]: row[1] for row in self.conn.execute("SELECT path, title FROM files ORDER BY path")}

    def skipped_files(self, scope: tuple[str, ...] | None = None) -> dict[str, Skip]:
        rows = self._in_scope("SELECT path, reason, detail, size, mtime_ns FROM skipped", scope)
        return {row[0]: Skip(*row) for row in rows}

    def _in_scope(self, select: str, scope: tuple[str, ...] | None) -> list[sqlite3.Row]:
        if scope is None:
            return self.conn.execute(select).fetchall()
        rows: dict[str, sqlite3.Row] = {}
        for root in scope:
            # "root/" <= path < "root0" selects everything below root ('0' follows '/' in ASCII).
            for row in self.conn.execute(
                f"{select} WHERE path = ? OR (path >= ? AND path < ?)", (root, root + "/", root + "0")
            ):
                rows[row["path"]] = row
        return list(rows.values())

    def meta(self, key: str) -> str | None:
        return db.get_meta(self.conn, key)

    def counts(self) -> dict[str, int]:
        row = self.conn.execute(
            "SELECT (SELECT count(*) FROM files) AS files, (SELECT count(*) FROM chunks) AS chunks, "
            "(SELECT count(*) FROM chunks WHERE vector_hash IS NOT NULL) AS vectors, "
            "(SELECT count(*) FROM chunks WHERE vector_hash IS NOT content_hash) AS vectors_pending, "
            "(SELECT count(*) FROM chunks WHERE vector_hash != content_hash) AS vectors_stale, "
            "(SELECT count(*) FROM skipped) AS skipped, "
            "(SELECT count(*) FROM files WHERE frontmatter_error IS NOT NULL) AS broken_frontmatter"
        ).fetchone()
        return dict(row)

    # -- writes (callers own the transaction) ------------------------------------------------
    def upsert_file(self, doc: Document, mtime_ns: int, chunks: list[Chunk]) -> list[int]:
        """Replace a file's rows; returns the chunk ids that were removed (their vectors must go)."""
        fm = doc.frontmatter
        old = self.conn.execute("SELECT id FROM files WHERE path = ?", (doc.path,)).fetchone()
        removed = self.delete_file(doc.path) if old else []
        values = (
            doc.path,
            doc.size,
            mtime_ns,
            doc.sha256,
            doc.title,
            _scalar(fm.get("type")),
            _scalar(fm.get("status")),
            int(fm.get("canonical") is True),
            _scalar(fm.get("source_kind")),
            json.dumps(frontmatter_list(fm.get("tags"))),
            json.dumps(frontmatter_list(fm.get("aliases"))),
            doc_date(fm),
            json.dumps(fm, ensure_ascii=False),
            doc.frontmatter_error,
            len(doc.lines),
            now_iso(),
        )
        cursor = self.conn.execute(
            "INSERT INTO files(path, size, mtime_ns, sha256, title, doc_type, status, canonical, source_kind, "
            "tags, aliases, doc_date, frontmatter, frontmatter_error, line_count, indexed_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            values,
        )
        file_id = int(cursor.lastrowid or 0)
        context_title = title_context(doc.title, fm, doc.path)
        aliases = " ".join(frontmatter_list(fm.get("aliases")) + frontmatter_list(fm.get("tags")))
        for chunk in chunks:
            chunk_id = self.conn.execute(
                "INSERT INTO chunks(file_id, ordinal, start_line, end_line, heading_path, text, tokens, "
                "content_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    file_id,
                    chunk.ordinal,
                    chunk.start_line,
                    chunk.end_line,
                    json.dumps(chunk.heading_path),
                    chunk.text,
                    chunk.tokens,
                    input_hash(context_title, chunk.heading_path, chunk.text),
                ),
            ).lastrowid
            self._insert_fts(
                chunk_id, doc.title, aliases, " ".join(chunk.heading_path), path_words(doc.path), chunk.text
            )
        self.conn.execute("DELETE FROM skipped WHERE path = ?", (doc.path,))
        self.derived.file_written(file_id, doc)
        return removed

    def _insert_fts(self, chunk_id: int | None, title: str, aliases: str, headings: str, path: str, body: str) -> None:
        self.conn.execute(
            "INSERT INTO chunks_fts(rowid, title, aliases, headings, path, body) VALUES (?, ?, ?, ?, ?, ?)",
            (chunk_id, title, aliases, headings, path, body),
        )
        if self.has_trigram:
            self.conn.execute("INSERT INTO chunks_tri(rowid, body) VALUES (?, ?)", (chunk_id, body))

    def delete_file(self, path: str) -> list[int]:
        row = self.conn.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
        if row is None:
            return []
        self.derived.file_deleted(row[0], path)
        ids = [r[0] for r in self.conn.execute("SELECT id FROM chunks WHERE file_id = ?", (row[0],))]
        self._delete_fts(ids)
        self.conn.execute("DELETE FROM files WHERE path = ?", (path,))
        return ids

    def _delete_fts(self, ids: list[int]) -> None:
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            self.conn.execute(f"DELETE FROM chunks_fts WHERE rowid IN ({marks})", part)
            if self.has_trigram:
                self.conn.execute(f"DELETE FROM chunks_tri WHERE rowid IN ({marks})", part)

    def touch_file(self, path: str, size: int, mtime_ns: int) -> None:
        self.conn.execute("UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?", (size, mtime_ns, path))

    def rename_file(self, old: str, new: str, size: int, mtime_ns: int, new_title: str | None) -> None:
        """Move a file's rows to a new path; chunk ids (and so vectors) stay, FTS path/title follow."""
        row = self.conn.execute("SELECT id, title, frontmatter FROM files WHERE path = ?", (old,)).fetchone()
        title = new_title if new_title is not None else row["title"]
        self.conn.execute(
            "UPDATE files SET path = ?, size = ?, mtime_ns = ?, title = ? WHERE id = ?",
            (new, size, mtime_ns, title, row["id"]),
        )
        self._rekey_chunks(row["id"], title_context(title, json.loads(row["frontmatter"]), new))
        self.conn.execute(
            "UPDATE chunks_fts SET path = ?, title = ? WHERE rowid IN (SELECT id FROM chunks WHERE file_id = ?)",
            (path_words(new), title, row["id"]),
        )
        self.conn.execute("DELETE FROM skipped WHERE path = ?", (new,))
        self.derived.file_renamed(old, new)

    def _rekey_chunks(self, file_id: int, context_title: str | None) -> None:
        """A rename can change what the embedder is given: a title that came from the file name is
        left out of it, so a heading title equal to the old or the new name goes out or comes in.
        Such a chunk gets the hash of its new input; its vector stays searchable, counted as stale,
        until the vector pass replaces it."""
        rows = self.conn.execute(
            "SELECT id, heading_path, text, content_hash FROM chunks WHERE file_id = ?", (file_id,)
        )
        for row in rows.fetchall():
            new_hash = input_hash(context_title, json.loads(row["heading_path"]), row["text"])
            if new_hash != row["content_hash"]:
                self.conn.execute("UPDATE chunks SET content_hash = ? WHERE id = ?", (new_hash, row["id"]))

    def record_skip(self, skip: Skip) -> None:
        self.conn.execute(
            "INSERT INTO skipped(path, size, mtime_ns, reason, detail, seen_at) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(path) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns, "
            "reason = excluded.reason, detail = excluded.detail, seen_at = excluded.seen_at",
            (skip.path, skip.size, skip.mtime_ns, skip.reason, skip.detail, now_iso()),
        )

    def forget_skips(self, keep: set[str], scope: tuple[str, ...] | None = None) -> None:
        for path in self.skipped_files(scope):
            if path not in keep:
                self.conn.execute("DELETE FROM skipped WHERE path = ?", (path,))

    def set_meta(self, key: str, value: str) -> None:
        db.set_meta(self.conn, key, value)


def _scalar(value: Any) -> str | None:
    if value is None or isinstance(value, dict | list):
        return None
    return str(value)
