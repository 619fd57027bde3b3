"""Context packing: what a model should see of a long session, within a token budget (SPEC §7).

`pack()` works on any list of messages (a stored session or an in-memory conversation). Messages
are cut into chunks: a short message is one chunk with the message's id, a long one (tool output,
pasted files) is cut at line ends into chunks `<id>#<n>` whose concatenation is the message, byte for
byte, so `remind` can hand back any part exactly.

Lanes. When everything fits in half the available budget, nothing is scored: the session passes
through whole. Otherwise:
1. protected, always kept: the system block, the continuation summary, the last `min_recent` messages;
2. recalled: older chunks ranked by utility = β·relevance + (1−β)·agent weight, times a recency decay,
   tool output at half value (it leaves first); relevance is BM25 over this session's chunks, scored in
   memory (a small transient set: rank-bm25, not the persistent FTS5 index); they get up to
   RECALL_SHARE of what is left when there is a query;
3. recent: whole messages newest-first, going back from the protected tail, until the budget is full;
4. every run of messages left out becomes one labelled placeholder naming its ids and a one-line gist.
The output is chronological: system, summary, then the conversation with placeholders and recalled
chunks where they were.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from rank_bm25 import BM25Okapi

from dory.models import ArchivedRange, ContextPackResponse, PackedItem
from dory.sessions.extract import STOP

TokenCounter = Callable[[str], int]
# A message longer than this is cut into chunks (tokens); a chunk is what recall can bring back.
CHUNK_TOKENS = 256
# Tokens a message costs beyond its text (role framing in a chat template).
MESSAGE_OVERHEAD = 4
PASS_THROUGH_SHARE = 0.5
RECALL_SHARE = 0.5
# The recency decay halves a chunk's utility every this many messages back from the end.
RECENCY_HALF_LIFE = 200
TOOL_FACTOR = 0.5
# Tokens set aside for placeholder labels before filling (more are freed later if needed).
PLACEHOLDER_ALLOWANCE = 120
GIST_CHARS = 90
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass
class PackMessage:
    id: str
    role: str
    text: str
    kind: str = "message"
    time: str | None = None
    weight: float = 0.0


@dataclass
class Chunk:
    id: str
    index: int  # position of its message in the conversation
    text: str
    tokens: int
    utility: float = 0.0


@dataclass
class _Plan:
    kept: set[int] = field(default_factory=set)  # whole messages shown
    recalled: dict[str, Chunk] = field(default_factory=dict)


def chunks_of(message: PackMessage, index: int, count: TokenCounter, total: int | None = None) -> list[Chunk]:
    """The message cut at line ends into pieces of at most CHUNK_TOKENS (a longer line is its own piece);
    `total` is the message's token count when the caller has it already."""
    total = count(message.text) if total is None else total
    if total <= CHUNK_TOKENS:
        return [Chunk(message.id, index, message.text, total)]
    pieces: list[str] = []
    current, tokens = "", 0
    for line in message.text.splitlines(keepends=True):
        cost = count(line)
        if current and tokens + cost > CHUNK_TOKENS:
            pieces.append(current)
            current, tokens = "", 0
        current += line
        tokens += cost
    if current:
        pieces.append(current)
    return [Chunk(f"{message.id}#{n}", index, piece, count(piece)) for n, piece in enumerate(pieces, start=1)]


def pack(
    messages: list[PackMessage],
    budget: int,
    count: TokenCounter,
    *,
    query: str | None = None,
    reserve: int = 0,
    min_recent: int = 6,
    beta: float = 0.7,
    system: str | None = None,
    summary: str | None = None,
) -> ContextPackResponse:
    available = max(budget - reserve, 0)
    head = _head(system, summary, count)
    costs = [count(m.text) + MESSAGE_OVERHEAD for m in messages]
    total = sum(item.tokens for item in head) + sum(costs)
    if total <= available * PASS_THROUGH_SHARE:
        items = head + [_item(m, "message", c) for m, c in zip(messages, costs, strict=True)]
        return _response("pass_through", budget, available, items, [], [], [])
    return _packed(messages, costs, head, budget, available, count, query, min_recent, beta)


def _packed(
    messages: list[PackMessage],
    costs: list[int],
    head: list[PackedItem],
    budget: int,
    available: int,
    count: TokenCounter,
    query: str | None,
    min_recent: int,
    beta: float,
) -> ContextPackResponse:
    warnings: list[str] = []
    room = available - sum(item.tokens for item in head)
    plan = _Plan()
    protected = list(range(max(len(messages) - min_recent, 0), len(messages)))
    for index in reversed(protected):  # newest first: a tail too big for the budget keeps its newest part
        if costs[index] <= room:
            plan.kept.add(index)
            room -= costs[index]
    if len(plan.kept) < len(protected):
        warnings.append(f"the last {min_recent} messages do not fit the budget; {len(plan.kept)} were kept")
    room = max(room - PLACEHOLDER_ALLOWANCE, 0)
    older = [
        chunk
        for i, m in enumerate(messages[: len(messages) - len(protected)])
        for chunk in chunks_of(m, i, count, costs[i] - MESSAGE_OVERHEAD)
    ]
    _score(older, messages, query, beta)
    recall_room = int(room * RECALL_SHARE) if any(c.utility > 0 for c in older) else 0
    room -= _recall(plan, older, recall_room)
    room = _fill_recent(plan, messages, costs, room)
    _recall(plan, older, room)  # what recent messages left over
    items, archived = _assemble(plan, messages, costs, head, count)
    while sum(item.tokens for item in items) > available:  # the placeholders were not planned for
        if not _give_back(plan, protected):
            warnings.append(
                "nothing more can be dropped: the budget is too small for what is protected "
                "(system block, summary, newest message) and the placeholders"
            )
            break
        items, archived = _assemble(plan, messages, costs, head, count)
    recalled = sorted(plan.recalled, key=lambda cid: (plan.recalled[cid].index, cid))
    ids = [messages[i].id for i in protected if i in plan.kept]
    return _response("packed", budget, available, items, archived, recalled, ids, warnings)


def _give_back(plan: _Plan, protected: list[int]) -> bool:
    """Free room: the oldest unprotected recent message, else the least useful recalled chunk, else the
    oldest protected message."""
    unprotected = sorted(plan.kept - set(protected))
    if unprotected:
        plan.kept.discard(unprotected[0])
        return True
    if plan.recalled:
        del plan.recalled[min(plan.recalled.values(), key=lambda c: c.utility).id]
        return True
    if plan.kept:  # last resort: protected messages, oldest first (the newest goes last)
        plan.kept.discard(min(plan.kept))
        return True
    return False


def _head(system: str | None, summary: str | None, count: TokenCounter) -> list[PackedItem]:
    items = []
    if system:
        items.append(PackedItem(kind="system", role="system", text=system, tokens=count(system) + MESSAGE_OVERHEAD))
    if summary:
        items.append(PackedItem(kind="summary", role="system", text=summary, tokens=count(summary) + MESSAGE_OVERHEAD))
    return items


def tokenize(text: str) -> list[str]:
    return [word for word in _WORD.findall(text.lower()) if word not in STOP]


def _score(chunks: list[Chunk], messages: list[PackMessage], query: str | None, beta: float) -> None:
    """utility = (β·relevance + (1−β)·weight) × recency decay × (½ for tool output)."""
    relevance = [0.0] * len(chunks)
    terms = tokenize(query or "")
    if terms and chunks:
        scores = BM25Okapi([tokenize(c.text) or ["\0"] for c in chunks]).get_scores(terms)
        top = max(float(max(scores)), 0.0)
        relevance = [max(float(s), 0.0) / top if top > 0 else 0.0 for s in scores]
    last = len(messages)
    for chunk, rel in zip(chunks, relevance, strict=True):
        message = messages[chunk.index]
        weight = message.weight / (1.0 + message.weight)  # 0 → 0, 1 → ½, large → near 1
        decay = math.pow(0.5, (last - chunk.index) / RECENCY_HALF_LIFE)
        factor = TOOL_FACTOR if message.role == "tool" or message.kind == "tool_result" else 1.0
        chunk.utility = (beta * rel + (1 - beta) * weight) * decay * factor


def _recall(plan: _Plan, chunks: list[Chunk], room: int) -> int:
    """Add the most useful chunks (utility > 0) that fit in `room`; returns the tokens used."""
    used = 0
    for chunk in sorted(chunks, key=lambda c: (-c.utility, -c.index, c.id)):
        if chunk.utility <= 0:
            break
        if chunk.index in plan.kept or chunk.id in plan.recalled:
            continue
        cost = chunk.tokens + MESSAGE_OVERHEAD
        if used + cost <= room:
            plan.recalled[chunk.id] = chunk
            used += cost
    return used


def _fill_recent(plan: _Plan, messages: list[PackMessage], costs: list[int], room: int) -> int:
    """Whole messages newest-first back from the protected tail, while they fit; returns the room left."""
    for index in range(len(messages) - 1, -1, -1):
        if index in plan.kept:
            continue
        recalled = sum(c.tokens + MESSAGE_OVERHEAD for c in plan.recalled.values() if c.index == index)
        cost = costs[index] - recalled
        if cost > room:
            break
        plan.kept.add(index)
        for cid in [cid for cid, c in plan.recalled.items() if c.index == index]:
            del plan.recalled[cid]
        room -= cost
    return room


def _assemble(
    plan: _Plan, messages: list[PackMessage], costs: list[int], head: list[PackedItem], count: TokenCounter
) -> tuple[list[PackedItem], list[ArchivedRange]]:
    items = list(head)
    archived: list[ArchivedRange] = []
    run: list[int] = []
    for index, message in enumerate(messages):
        if index in plan.kept:
            if run:
                items += _archive(run, plan, messages, costs, count, archived)
                run = []
            items.append(_item(message, "message", costs[index]))
        else:
            run.append(index)
    if run:
        items += _archive(run, plan, messages, costs, count, archived)
    return items, archived


def _archive(
    run: list[int],
    plan: _Plan,
    messages: list[PackMessage],
    costs: list[int],
    count: TokenCounter,
    archived: list[ArchivedRange],
) -> list[PackedItem]:
    """A placeholder for the run of left-out messages, followed by its recalled chunks in order."""
    first, last = messages[run[0]], messages[run[-1]]
    recalled = sorted((c for c in plan.recalled.values() if c.index in set(run)), key=lambda c: (c.index, c.id))
    gist = _gist([messages[i] for i in run])
    archived.append(
        ArchivedRange(
            first_id=first.id,
            last_id=last.id,
            messages=len(run),
            tokens=sum(costs[i] for i in run),
            gist=gist,
            recalled=[c.id for c in recalled],
        )
    )
    span = first.id if len(run) == 1 else f"{first.id} … {last.id}"
    label = (
        f"[archived: {len(run)} message{'s' if len(run) != 1 else ''} ({span}), "
        f"{archived[-1].tokens} tokens — {gist}; `dory context remind {first.id}` brings one back]"
    )
    items = [
        PackedItem(kind="placeholder", id=first.id, role="system", text=label, tokens=count(label) + MESSAGE_OVERHEAD)
    ]
    for chunk in recalled:
        message = messages[chunk.index]
        items.append(
            PackedItem(
                kind="recalled",
                id=chunk.id,
                role=message.role,
                time=message.time,
                text=chunk.text,
                tokens=chunk.tokens + MESSAGE_OVERHEAD,
            )
        )
    return items


def _gist(run: list[PackMessage]) -> str:
    """One line: the first user words of the range, else its first words."""
    source = next((m for m in run if m.role == "user" and m.text.strip()), run[0])
    words = " ".join(source.text.split())
    return words if len(words) <= GIST_CHARS else words[: GIST_CHARS - 1].rstrip() + "…"


def _item(message: PackMessage, kind: str, tokens: int) -> PackedItem:
    return PackedItem(
        kind=kind,
        id=message.id,
        role=message.role,
        time=message.time,
        text=message.text,
        tokens=tokens,
    )


def _response(
    lane: str,
    budget: int,
    available: int,
    items: list[PackedItem],
    archived: list[ArchivedRange],
    recalled: list[str],
    protected: list[str],
    warnings: list[str] | None = None,
) -> ContextPackResponse:
    tokens = sum(item.tokens for item in items)
    return ContextPackResponse(
        lane=lane,
        budget=budget,
        available=available,
        tokens=tokens,
        fill_ratio=round(tokens / available, 4) if available else 0.0,
        items=items,
        archived=archived,
        recalled=recalled,
        protected=protected,
        warnings=warnings or [],
    )


def remind(messages: list[PackMessage], ids: list[str], count: TokenCounter) -> dict[str, tuple[PackMessage, str]]:
    """The exact text of each message id or chunk id (`<message id>#<n>`) found in `messages`."""
    by_id = {m.id: (i, m) for i, m in enumerate(messages)}
    found: dict[str, tuple[PackMessage, str]] = {}
    for wanted in ids:
        message_id, _, part = wanted.partition("#")
        if message_id not in by_id:
            continue
        index, message = by_id[message_id]
        if not part:
            found[wanted] = (message, message.text)
            continue
        chunk = next((c for c in chunks_of(message, index, count) if c.id == wanted), None)
        if chunk is not None:
            found[wanted] = (message, chunk.text)
    return found
