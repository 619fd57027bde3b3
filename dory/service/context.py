"""`dory context pack|remind|mark` over stored sessions (the packing itself is in packing.py)."""

from __future__ import annotations

from pathlib import Path

from dory.errors import NotFound, UsageError
from dory.models import (
    ContextPackRequest,
    ContextPackResponse,
    MarkRequest,
    MarkResponse,
    PackInput,
    RemindItem,
    RemindRequest,
    RemindResponse,
    WakeRequest,
)
from dory.service.session_deps import SessionDeps
from dory.sessions import compaction, packing
from dory.sessions.store import WEIGHTS_KEY, parse_weights, render_weights
from dory.sessions.transcript import Session, message_id

# Below this many tokens left after the reserve, a pack could hold nothing useful: refused, not guessed.
MIN_AVAILABLE = 128


class ContextService:
    def __init__(self, deps: SessionDeps) -> None:
        self.deps = deps

    def pack(self, req: ContextPackRequest) -> ContextPackResponse:
        cfg = self.deps.settings.context
        reserve = cfg.reserve if req.reserve is None else req.reserve
        if req.budget - reserve < MIN_AVAILABLE:
            raise UsageError(
                f"a budget of {req.budget} tokens leaves {max(req.budget - reserve, 0)} for the context: {reserve} "
                f"are reserved for the answer ({'--reserve' if req.reserve is not None else '[context] reserve'}); "
                f"give a budget of at least {reserve + MIN_AVAILABLE} or a smaller --reserve",
                budget=req.budget,
                reserve=reserve,
            )
        summary = None
        if req.session is not None:
            files = self.deps.session_files()
            rel = files.resolve(req.session)
            session, _ = files.load(rel)
            messages = session_messages(session)
            summary = read_summary(files.corpus / files.summary_path(rel))
        else:
            messages = input_messages(req.messages or [])
        system = req.system
        if req.wake_profile:
            block = self.deps.wake(WakeRequest(profile=req.wake_profile)).block
            system = f"{block}\n\n{system}" if system else block
        return packing.pack(
            messages,
            req.budget,
            self.deps.resources.token_counter().count,
            query=req.query,
            reserve=reserve,
            min_recent=cfg.min_recent if req.min_recent is None else req.min_recent,
            beta=cfg.beta if req.beta is None else req.beta,
            system=system,
            summary=summary,
        )

    def remind(self, req: RemindRequest) -> RemindResponse:
        """The archived text of each message or chunk id, exactly as the transcript holds it."""
        items, missing = [], []
        count = self.deps.resources.token_counter().count
        for wanted in req.ids:
            found = None
            for rel in self._paths_holding(wanted.partition("#")[0], req.session):
                session, _ = self.deps.session_files().load(rel)
                found = packing.remind(session_messages(session), [wanted], count).get(wanted)
                if found is not None:
                    message, text = found
                    items.append(
                        RemindItem(
                            id=wanted,
                            session_id=session.session_id,
                            path=rel,
                            role=message.role,
                            time=message.time,
                            text=text,
                        )
                    )
                    break
            if found is None:
                missing.append(wanted)
        return RemindResponse(items=items, missing=missing)

    def mark(self, req: MarkRequest) -> MarkResponse:
        """Record an agent's weight for a message in its transcript's frontmatter (it survives reindex)."""
        paths = self._paths_holding(req.id, req.session)
        if not paths:
            raise NotFound(f"no message {req.id!r} in the session index", id=req.id)
        rel = paths[0]
        session, _ = self.deps.session_files().load(rel)
        weights = parse_weights(session.extra.get(WEIGHTS_KEY)) | {req.id: req.weight}
        self.deps.session_files().set_fields(rel, {WEIGHTS_KEY: render_weights(weights)})
        self.deps.index_paths([rel])
        return MarkResponse(id=req.id, session_id=session.session_id, path=rel, weight=req.weight)

    def _paths_holding(self, wanted_message: str, session: str | None) -> list[str]:
        path = self.deps.session_files().resolve(session) if session is not None else None
        return self.deps.resources.session_store().paths_holding(wanted_message, path)


def session_messages(session: Session) -> list[packing.PackMessage]:
    weights = parse_weights(session.extra.get(WEIGHTS_KEY))
    return [
        packing.PackMessage(m.id, m.role, _with_calls(m.text, m.tool_calls), m.kind, m.time, weights.get(m.id, 0.0))
        for m in session.turns()
    ]


def _with_calls(text: str, calls: list[str]) -> str:
    return text if not calls else text + compaction.TOOL_CALLS_BLOCK + "\n".join(f"- {call}" for call in calls)


def input_messages(inputs: list[PackInput]) -> list[packing.PackMessage]:
    """An in-memory conversation; messages without an id get a stable one from their content."""
    seen: dict[str, int] = {}
    out = []
    for item in inputs:
        key = f"{item.role}\n{item.time}\n{item.content}"
        seen[key] = seen.get(key, 0) + 1
        ident = item.id or message_id("inline", item.role, item.time, item.content, seen[key])
        out.append(packing.PackMessage(ident, item.role, item.content, item.kind, item.time, item.weight))
    return out


def read_summary(file: Path) -> str | None:
    """The `<continuation_summary>` block of a summary file, or None."""
    if not file.is_file():
        return None
    text = file.read_text(encoding="utf-8", errors="replace")
    start, end = text.find(compaction.OPEN), text.rfind(compaction.CLOSE)
    if start < 0 or end < start:
        return None
    return text[start : end + len(compaction.CLOSE)]
