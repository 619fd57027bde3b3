"""Compaction: one canonical `<continuation_summary>` for a session, stored next to its transcript.

Sections (always all five, in this order): Files Modified, Key Decisions, Important Values, Current
State, Pending Tasks. With an LLM configured the model writes them under a strict JSON contract; the
answer is normalised (trimmed, deduplicated, capped) before it is rendered. Without one, or when the
model fails, extraction fills the same sections (see extract.py). The whole summary stays under a
word cap: sections give up their last items in a fixed order (Current State, Key Decisions, Pending
Tasks, Files Modified) and Important Values last, since exact values are what a summary is hardest
to recover.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from dory.sessions import extract, facts
from dory.sessions.packing import PackMessage
from dory.sessions.transcript import TOOL_CALLS

SECTIONS = ("Files Modified", "Key Decisions", "Important Values", "Current State", "Pending Tasks")
OPEN, CLOSE = "<continuation_summary>", "</continuation_summary>"
ITEM_CHARS = 300
# How a message's tool calls follow its text when a session is packed or summarised (context.session_messages).
TOOL_CALLS_BLOCK = f"\n\n{TOOL_CALLS}\n"
ITEMS_PER_SECTION = 12
LLM_INPUT_CHARS = 48_000  # the transcript part handed to the model: its newest text when longer
_LIST = {"type": "array", "items": {"type": "string", "maxLength": 600}, "maxItems": 40}
SCHEMA = {
    "type": "object",
    "properties": {
        "files_modified": _LIST,
        "key_decisions": _LIST,
        "important_values": _LIST,
        "current_state": {"type": "string", "maxLength": 3000},
        "pending_tasks": _LIST,
    },
    "required": ["files_modified", "key_decisions", "important_values", "current_state", "pending_tasks"],
    "additionalProperties": False,
}
PROMPT = (
    "You compact an AI agent's working session so it can continue after its context is cleared. Fill: "
    "files_modified (paths the session created or changed), key_decisions (what was decided and why, one each), "
    "important_values (exact paths, URLs, ids, error lines and commands, copied character for character), "
    "current_state (two or three sentences: where the work stands now), pending_tasks (what is left, one each). "
    "Use only what the transcript says. The previous summary, if given, covers older turns: keep what still holds."
)


@dataclass
class Parts:
    files: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    values: list[str] = field(default_factory=list)
    state: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)

    def sections(self) -> list[list[str]]:
        return [self.files, self.decisions, self.values, self.state, self.pending]


def extractive(turns: list[PackMessage], word_cap: int = 400) -> Parts:
    texts, calls = [], []
    for message in turns:
        text, _, block = message.text.partition(TOOL_CALLS_BLOCK)
        texts.append((message.role, text))
        calls += [line[2:] for line in block.splitlines() if line.startswith("- ")]
    said = extract.sentences([(role, text) for role, text in texts if role != "tool"])
    found = extract.values([text for _, text in texts], calls, ITEMS_PER_SECTION)
    mentioned = [
        p for p in extract.paths_in([t for r, t in texts if r != "tool"], ITEMS_PER_SECTION) if p not in found["files"]
    ]
    decisions = extract.decisions(said, ITEMS_PER_SECTION)
    pending = extract.cued([s for s in said if s.turn >= len(turns) // 2], extract.PENDING, ITEMS_PER_SECTION)
    taken = {s.text for s in decisions + pending}
    values = found["urls"] + found["commands"] + found["errors"] + mentioned + found["ids"]
    parts = Parts(
        files=found["files"],
        decisions=[s.attributed() for s in decisions],
        values=values,
        pending=[s.attributed() for s in pending],
    )
    # Current State takes the words the other sections leave, with the session's most central sentences.
    room = word_cap - len(_block(parts.sections()).split())
    state = extract.central(said, ITEMS_PER_SECTION * 2, exclude=taken, max_words=room)
    parts.state = [s.attributed() for s in state]
    return parts


def llm_input(turns: list[PackMessage], previous: str | None) -> str:
    lines = [f"[{m.id}] {m.role}: {m.text}" for m in turns]
    text = "\n\n".join(lines)
    if len(text) > LLM_INPUT_CHARS:
        text = "…\n" + text[-LLM_INPUT_CHARS:]
    head = f"Previous summary:\n{previous}\n\n" if previous else ""
    return f"{head}Transcript:\n{text}"


def from_llm(answer: dict[str, object]) -> Parts:
    """The model's answer normalised: strings trimmed to one line each, duplicates and blanks dropped."""

    def clean(value: object) -> list[str]:
        items = value if isinstance(value, list) else ([] if value is None else [value])
        out: list[str] = []
        for item in items:
            text = " ".join(str(item).split())[:ITEM_CHARS]
            if text and text.lower() not in {o.lower() for o in out}:
                out.append(text)
        return out[:ITEMS_PER_SECTION]

    return Parts(
        files=clean(answer.get("files_modified")),
        decisions=clean(answer.get("key_decisions")),
        values=clean(answer.get("important_values")),
        state=clean(answer.get("current_state")),
        pending=clean(answer.get("pending_tasks")),
    )


def is_empty(parts: Parts) -> bool:
    return not any(parts.sections())


def render(parts: Parts, word_cap: int) -> str:
    """The summary block, at most `word_cap` words as a whole (headings and bullets included)."""
    sections = [list(items) for items in parts.sections()]
    trim_order = [3, 1, 4, 0, 2]  # state, decisions, pending, files, then values
    text = _block(sections)
    while len(text.split()) > word_cap and any(sections):
        sections[next(i for i in trim_order if sections[i])].pop()
        text = _block(sections)
    return text


def _block(sections: list[list[str]]) -> str:
    blocks = [OPEN]
    for title, items in zip(SECTIONS, sections, strict=True):
        blocks.append(f"## {title}")
        blocks += [f"- {item}" for item in items] or ["- (none)"]
    blocks.append(CLOSE)
    return "\n".join(blocks)


# --- durable facts flushed into proposals before summarising ---------------------------------------

MAX_FACTS = 10


@dataclass(frozen=True)
class Fact:
    found: facts.Found  # what it states and where it belongs (facts.classify)
    content: str
    message_id: str

    @property
    def kind(self) -> str:
        return self.found.kind

    @property
    def subject(self) -> str:
        return self.found.subject


def durable_facts(turns: list[PackMessage], project: str | None = None) -> list[Fact]:
    """Statements worth keeping beyond this session, each with where it belongs (facts.classify):
    decisions, and what the user says about themselves or about the project."""
    found: list[Fact] = []
    seen: set[str] = set()
    for message in turns:
        if message.role not in ("user", "assistant"):
            continue
        for sentence in extract.sentences([(message.role, message.text)]):
            fact = facts.classify(sentence.text, message.role, sentence.speaker, project)
            if fact is None or sentence.text.lower() in seen:
                continue
            seen.add(sentence.text.lower())
            content = sentence.attributed()[:ITEM_CHARS]
            found.append(Fact(fact, content, message.id))
    return found[-MAX_FACTS:]


def summary_file(
    session_id: str, covers_through: str | None, method: str, block: str, stats: dict[str, int], created: str
) -> str:
    meta = {
        "type": "session_summary",
        "session_id": session_id,
        "covers_through": covers_through,
        "method": method,
        "created": created,
        **stats,
    }
    head = "\n".join(f"{key}: {json.dumps(value)}" for key, value in meta.items())
    return f"---\n{head}\n---\n\n{block}\n"
