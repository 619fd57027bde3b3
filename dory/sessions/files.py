"""Session transcripts on disk: find one by id, save an import into it, edit its frontmatter.

Transcripts are written by the process that ingests them (they can be many megabytes, too large to
hand to the daemon), always with a compare-and-swap: a file that changed between our read and our
write is re-read and merged again, so two imports of the same session or an editor's save are never
lost. The index learns about the files afterwards, from its owner.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from dory.corpus.atomic import create_exclusive, sha256_of, swap_if_unchanged
from dory.corpus.paths import SESSIONS_ROOT, resolve_inside
from dory.errors import (
    InvalidInput,
    NotFound,
    PathNotAllowed,
    PathOutsideCorpus,
    UnreadableFile,
    UsageError,
    WriteConflict,
)
from dory.memory.exact import read_editable, set_fields
from dory.models import IngestedSession, SessionInfo, SessionUpdateRequest
from dory.sessions.store import SessionStore
from dory.sessions.transcript import SUMMARY_SUFFIX, Session, merge, parse_session, render_session, session_path

# Attempts at a compare-and-swap before a busy transcript is reported as a conflict.
SAVE_ATTEMPTS = 5
MAX_TRANSCRIPT_BYTES = 256 * 1024 * 1024


class SessionFiles:
    def __init__(self, corpus: Path, store: SessionStore) -> None:
        self.corpus = corpus  # the folder holding logs/sessions/: the corpus, or its output folder
        self.store = store

    # -- finding -----------------------------------------------------------------------------
    def resolve(self, ident: str) -> str:
        """A transcript's corpus path from a session id, a unique id prefix, or the path itself."""
        ident = ident.strip()
        if ident.endswith(".md"):
            rel, _ = resolve_inside(self.corpus, ident)
            if not rel.startswith(SESSIONS_ROOT + "/") or rel.endswith(SUMMARY_SUFFIX):
                raise InvalidInput(f"{rel} is not a session transcript (under {SESSIONS_ROOT}/)", path=rel)
            return rel
        rows = self.store.find(ident, prefix=False) or (self.store.find(ident, prefix=True) if ident else [])
        if not rows:
            raise NotFound(f"no session {ident!r}; `dory sessions list` shows them", id=ident)
        if len(rows) > 1:
            raise UsageError(
                f"{ident!r} matches several sessions; give more of the id", candidates=[row[1] for row in rows]
            )
        return str(rows[0][0])

    def load(self, rel: str) -> tuple[Session, bytes]:
        path = self.corpus / rel
        try:
            data = path.read_bytes()
        except FileNotFoundError as exc:
            raise NotFound(f"the transcript {rel} is gone; run `dory reindex`", path=rel) from exc
        return parse_session(rel, data), data

    def summary_path(self, rel: str) -> str:
        return rel[: -len(".md")] + SUMMARY_SUFFIX

    # -- writing -----------------------------------------------------------------------------
    def save(self, incoming: Session, dry_run: bool = False) -> IngestedSession:
        """Create the session's transcript or merge the import into it (idempotent)."""
        for _ in range(SAVE_ATTEMPTS):
            rel = self._existing(incoming.session_id) or session_path(incoming)
            path = self._writable(rel)
            before = _read_if_there(path, rel)
            existing = parse_session(rel, before) if before is not None else None
            if existing is not None and existing.session_id != incoming.session_id:
                raise WriteConflict(
                    f"{rel} holds another session ({existing.session_id}); nothing was written", path=rel
                )
            session = merge(existing, incoming) if existing is not None else incoming
            after = render_session(session)
            report = _report(rel, session, existing, after == before)
            if dry_run or after == before:
                return report
            try:
                if before is None:
                    create_exclusive(path, after)
                else:
                    swap_if_unchanged(path, after, sha256_of(before))
            except WriteConflict:
                continue  # someone else wrote it meanwhile: read and merge again
            except OSError as exc:
                raise UnreadableFile(
                    f"cannot write {rel}: {exc.strerror or exc}", path=rel, reason="unwritable"
                ) from exc
            return report
        raise WriteConflict(
            f"session {incoming.session_id} kept changing while it was saved; try again", session_id=incoming.session_id
        )

    def _writable(self, rel: str) -> Path:
        """The transcript's path, refused when it (or a folder on the way) leads outside the corpus."""
        path = self.corpus / rel
        if path.is_symlink():
            raise PathNotAllowed(f"{rel} is a symlink; Dory does not write transcripts through links", path=rel)
        root = self.corpus.resolve()
        if path.parent.exists() and not path.parent.resolve().is_relative_to(root):
            raise PathOutsideCorpus(f"{rel} leads outside the corpus through a symlinked folder", path=rel)
        return path

    def _existing(self, session_id: str) -> str | None:
        found = self.store.find(session_id, prefix=False)
        return found[0][0] if found and (self.corpus / found[0][0]).is_file() else None

    def update(self, req: SessionUpdateRequest) -> str:
        """Rename, delete (a tombstone: status deleted, the text stays) or restore a session."""
        rel = self.resolve(req.id)
        session, _ = self.load(rel)
        if req.action == "rename":
            if not req.title or not req.title.strip():
                raise UsageError("rename needs a title")
            return self.set_fields(rel, {"title": " ".join(req.title.split())})
        if req.action == "delete":
            if session.status == "deleted":
                return rel
            stamp = dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
            fields = {"status": "deleted", "deleted_at": stamp, "status_before_delete": session.status}
            return self.set_fields(rel, fields)
        if session.status != "deleted":
            return rel
        return self.set_fields(rel, {"status": str(session.extra.get("status_before_delete") or "done")})

    def set_fields(self, rel: str, updates: dict[str, Any]) -> str:
        """Edit frontmatter keys in place (every other byte kept), with a compare-and-swap."""
        for _ in range(SAVE_ATTEMPTS):
            doc = read_editable(self.corpus, rel, MAX_TRANSCRIPT_BYTES)
            body = "\n".join(doc.lines[doc.body_start :])
            try:
                swap_if_unchanged(self.corpus / rel, set_fields(doc, updates, body), doc.sha256)
            except WriteConflict:
                continue
            return rel
        raise WriteConflict(f"{rel} kept changing while it was edited; try again", path=rel)


def _read_if_there(path: Path, rel: str) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:  # a folder where the transcript belongs, a file where a folder does, …
        raise UnreadableFile(f"cannot read {rel}: {exc.strerror or exc}", path=rel, reason="unreadable") from exc


def _report(rel: str, session: Session, existing: Session | None, same: bool) -> IngestedSession:
    if existing is None:
        action, added = "created", len(session.messages)
    elif existing.status == "deleted":
        action, added = "kept_deleted", 0
    elif same:
        action, added = "unchanged", 0
    else:
        added = len(session.messages) - len(existing.messages)
        action = "appended" if added else "updated"  # only the frontmatter moved (status, source)
    return IngestedSession(
        path=rel,
        session_id=session.session_id,
        title=session.title,
        status=session.status,
        action=action,
        messages=len(session.messages),
        added=max(added, 0),
    )


def info(rel: str, session: Session) -> SessionInfo:
    return SessionInfo(
        path=rel,
        session_id=session.session_id,
        agent=session.agent,
        device=session.device,
        title=session.title,
        status=session.status,
        started=session.started,
        updated=session.updated,
        date=session.date(),
        messages=len(session.turns()),
    )
