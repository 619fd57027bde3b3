"""The daily digest: one day's agent sessions → `digests/daily/YYYY-MM-DD.md`.

A session belongs to every day it has turns on (a turn's own time, local; a turn without one takes
the session's last update), and a day's digest reads only that day's turns, so a session that runs
past midnight is digested in two parts and never twice. A session written to in the last
`[digest] quiet_minutes` may still be going on: it waits, the digest is written without it, and the
run is deferred so the daemon runs the day again once the session is quiet.

Sections: Sessions (one line each), Decisions, Work Done, Open Loops and TODOs, Important Values,
Follow-ups. Every bullet cites its session turn. With an LLM configured the model writes the prose
sections under a strict JSON contract, a batch of turns per call; a bullet that does not cite a turn
of its batch is dropped, and a failed, empty or unusable answer falls back to extraction with a
warning. Important Values always come from extraction: values are copied, never paraphrased.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dory import llm
from dory.config import Settings
from dory.corpus.paths import SESSIONS_ROOT
from dory.corpus.roots import output_root, read_root
from dory.errors import BackendUnavailable, DoryError, LlmBadOutput
from dory.jobs import digest_late, generated
from dory.jobs.digest import Bullet, Source, one_line, section
from dory.jobs.job import JobContext, JobResult
from dory.jobs.schedule import local_zone
from dory.sessions import extract
from dory.sessions.compaction import TOOL_CALLS_BLOCK
from dory.sessions.store import SessionStore
from dory.sessions.transcript import Message, Session, parse_session, time_key

FOLDER = "digests/daily"
SECTIONS = ("Sessions", "Decisions", "Work Done", "Open Loops and TODOs", "Important Values", "Follow-ups")
PER_SESSION = 5  # decisions, open loops, follow-ups and values kept per session and section
FOLLOW_UP = re.compile(
    r"\b(?:follow[- ]up|tomorrow|next (?:time|week|session)|check back|remind me|get back to|revisit)\b", re.IGNORECASE
)


@dataclass
class DaySession:
    path: str
    session: Session
    turns: list[Message]  # the day's turns only

    def label(self) -> str:
        """The session's line in Sessions, before its gist: title (agent · time span · turns)."""
        return (
            f"**{one_line(self.session.title, 120)}** ({self.session.agent} · {_span(self.turns)} · "
            f"{len(self.turns)} turns)"
        )

    def source(self, turn: int) -> Source:
        message = self.turns[turn]
        return Source(self.path, message.id, message.start_line)


@dataclass
class Day:
    date: dt.date
    sessions: list[DaySession] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)  # sessions still being written
    skipped: list[str] = field(default_factory=list)  # "path: reason"


@dataclass
class Digest:
    sessions: list[Bullet] = field(default_factory=list)
    decisions: list[Bullet] = field(default_factory=list)
    work: list[Bullet] = field(default_factory=list)
    loops: list[Bullet] = field(default_factory=list)
    values: list[Bullet] = field(default_factory=list)
    followups: list[Bullet] = field(default_factory=list)

    def sections(self) -> list[list[Bullet]]:
        return [self.sessions, self.decisions, self.work, self.loops, self.values, self.followups]


def path_for(day: dt.date) -> str:
    return f"{FOLDER}/{day.isoformat()}.md"


# -- collecting the day ----------------------------------------------------------------------------
def local_day(stamp: str | None) -> dt.date | None:
    moment = time_key(stamp)
    return None if moment is None else moment.astimezone(local_zone()).date()


def collect(settings: Settings, day: dt.date, now: dt.datetime) -> Day:
    """The day's sessions from the session plane, each re-read from its transcript."""
    out = Day(day)
    if not settings.sessions_db_path.exists():
        return out
    store = SessionStore(settings.sessions_db_path, settings.index.tokenizer, readonly=True)
    try:  # the index keeps UTC days; a local day can reach into the UTC day on either side
        rows = store.overlapping((day - dt.timedelta(days=1)).isoformat(), (day + dt.timedelta(days=1)).isoformat())
    finally:
        store.close()
    quiet = dt.timedelta(minutes=settings.digest.quiet_minutes)
    for row in rows:
        rel = row["path"]
        try:
            session = parse_session(rel, (read_root(settings, rel) / rel).read_bytes())
        except (OSError, ValueError, DoryError) as exc:  # changed since it was indexed: report it, go on
            out.skipped.append(f"{rel}: {exc}")
            continue
        fallback = session.updated or session.started
        turns = [m for m in session.turns() if local_day(m.time or fallback) == day]
        if not turns:
            continue
        if _still_written(read_root(settings, rel) / rel, session, now, quiet):
            out.waiting.append(rel)
            continue
        out.sessions.append(DaySession(rel, session, turns))
    return out


def _still_written(path: Path, session: Session, now: dt.datetime, quiet: dt.timedelta) -> bool:
    try:
        touched = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC)
    except OSError:
        return False
    updated = time_key(session.updated)
    latest = max(touched, updated) if updated is not None else touched
    return now - latest < quiet


# -- extraction --------------------------------------------------------------------------------------
def extractive(day: Day, per_session: int) -> Digest:
    digest = Digest()
    for ds in day.sessions:
        _extract_session(ds, digest, per_session)
    return digest


def _extract_session(ds: DaySession, digest: Digest, per_session: int) -> None:
    said = [s for s in _sentences(ds) if s.role != "tool"]
    gist = extract.salient(said, 1, max_words=40)
    summary = ds.label()
    if gist:
        summary += f": {one_line(gist[0].attributed(), 300)}"
    digest.sessions.append(Bullet(summary, ds.source(gist[0].turn if gist else 0)))
    decisions = extract.decisions(said, per_session)
    later = [s for s in said if s.turn >= len(ds.turns) // 2]
    loops = [s for s in extract.cued(later, extract.PENDING, per_session) if s not in decisions]
    followups = [
        s
        for s in said
        if (FOLLOW_UP.search(s.text) or extract.PLAN.search(s.text)) and s not in decisions and s not in loops
    ][-per_session:]
    taken = {s.text for s in decisions + loops + followups + gist}
    work = extract.salient(said, per_session, exclude=taken)
    digest.decisions += [Bullet(one_line(s.attributed()), ds.source(s.turn)) for s in decisions]
    digest.loops += [Bullet(one_line(s.attributed()), ds.source(s.turn)) for s in loops]
    digest.followups += [Bullet(one_line(s.attributed()), ds.source(s.turn)) for s in followups]
    digest.work += _touched(ds) + [Bullet(one_line(s.attributed()), ds.source(s.turn)) for s in work]
    digest.values += _values(ds, per_session * 3)


def _sentences(ds: DaySession) -> list[extract.Sentence]:
    return extract.sentences([(m.role, m.text.partition(TOOL_CALLS_BLOCK)[0]) for m in ds.turns])


def _span(turns: list[Message]) -> str:
    times = [t for t in (time_key(m.time) for m in turns) if t is not None]
    if not times:
        return "time not recorded"
    first, last = (t.astimezone(local_zone()).strftime("%H:%M") for t in (min(times), max(times)))
    return first if first == last else f"{first}–{last}"


def _touched(ds: DaySession) -> list[Bullet]:
    """Files the session edited (from its tool calls) and the project it worked in."""
    out: list[Bullet] = []
    seen: set[str] = set()
    cwd = ds.session.extra.get("cwd")
    if isinstance(cwd, str) and cwd.strip():
        project = Path(cwd.strip()).name or cwd.strip()
        out.append(Bullet(f"Worked in project `{project}` (`{one_line(cwd, 200)}`)", ds.source(0)))
    for index, message in enumerate(ds.turns):
        files = extract.values([], message.tool_calls, 20)["files"]
        for path in files:
            if path not in seen:
                seen.add(path)
                out.append(Bullet(f"Edited `{path}`", ds.source(index)))
    return out


def _values(ds: DaySession, limit: int) -> list[Bullet]:
    """Exact values, each cited at the turn where it first appears."""
    out: list[Bullet] = []
    seen: set[str] = set()
    labels = {"urls": "URL", "commands": "command", "errors": "error", "ids": "id"}
    for index, message in enumerate(ds.turns):
        text = message.text.partition(TOOL_CALLS_BLOCK)[0]
        found = extract.values([text], message.tool_calls, limit)
        found["paths"] = [p for p in extract.paths_in([text], limit) if p not in found["files"]]
        for kind in ("urls", "commands", "errors", "paths", "ids"):
            for value in found[kind]:
                if value not in seen and len(out) < limit:
                    seen.add(value)
                    out.append(Bullet(f"{labels.get(kind, 'path')}: `{value.replace('`', chr(39))}`", ds.source(index)))
    return out


# -- the LLM contract -------------------------------------------------------------------------------
_ITEMS = {
    "type": "array",
    "maxItems": 40,
    "items": {
        "type": "object",
        "additionalProperties": False,
        "required": ["text", "source"],
        "properties": {"text": {"type": "string", "maxLength": 600}, "source": {"type": "string", "maxLength": 20}},
    },
}
SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["sessions", "decisions", "work_done", "open_loops", "follow_ups"],
    "properties": {
        "sessions": {
            "type": "array",
            "maxItems": 40,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["session", "summary"],
                "properties": {
                    "session": {"type": "string", "maxLength": 300},
                    "summary": {"type": "string", "maxLength": 600},
                },
            },
        },
        "decisions": _ITEMS,
        "work_done": _ITEMS,
        "open_loops": _ITEMS,
        "follow_ups": _ITEMS,
    },
}
PROMPT = (
    "You write the daily digest of a person's AI agent sessions. Each turn of the transcript starts with its id "
    "in brackets, e.g. [m-0123456789ab]. Fill: sessions (one summary sentence per session id), decisions (what was "
    "decided and why), work_done (what was done: files, features, fixes, events), open_loops (unfinished work and "
    "TODOs), follow_ups (what someone should do or check next). Every item's source is the id of the turn that "
    "says it. Use only what the transcript says; never invent, never include secrets."
)


def batches(day: Day, limit: int) -> list[tuple[str, set[str], set[str]]]:
    """The day's turns as LLM inputs of at most `limit` characters: (text, turn ids, session ids)."""
    out: list[tuple[str, set[str], set[str]]] = []
    parts: list[str] = []
    ids: set[str] = set()
    sessions: set[str] = set()
    for ds in day.sessions:
        header = f"## session {ds.session.session_id} ({ds.session.agent}): {ds.session.title}"
        for message in ds.turns:
            line = f"[{message.id}] {message.role}: {message.text[: limit // 2]}"
            if parts and sum(len(p) + 1 for p in parts) + len(header) + len(line) > limit:
                out.append(("\n".join(parts), ids, sessions))
                parts, ids, sessions = [], set(), set()
            if ds.session.session_id not in sessions:
                parts.append(header)
                sessions.add(ds.session.session_id)
            parts.append(line)
            ids.add(message.id)
    if parts:
        out.append(("\n".join(parts), ids, sessions))
    return out


def from_llm(day: Day, answers: list[tuple[dict[str, Any], set[str], set[str]]]) -> tuple[Digest, int]:
    """The model's answers as a digest; items citing no turn of their batch are dropped (counted)."""
    where = {m.id: (ds, i) for ds in day.sessions for i, m in enumerate(ds.turns)}
    by_session = {ds.session.session_id: ds for ds in day.sessions}
    digest, dropped = Digest(), 0
    keys = (
        ("decisions", digest.decisions),
        ("work_done", digest.work),
        ("open_loops", digest.loops),
        ("follow_ups", digest.followups),
    )
    lines: dict[str, str] = {}
    for answer, ids, sessions in answers:
        for item in answer.get("sessions", []):
            if item["session"] in sessions and item["summary"].strip():
                lines.setdefault(item["session"], one_line(item["summary"], 300))
        for key, bucket in keys:
            for item in answer.get(key, []):
                text, source = one_line(item["text"]), item["source"].strip()
                if not text or source not in ids:
                    dropped += 1
                elif text.lower() not in {b.text.lower() for b in bucket}:
                    ds, index = where[source]
                    bucket.append(Bullet(text, ds.source(index)))
    for session_id, ds in by_session.items():
        line = f"{ds.label()}: {lines[session_id]}" if session_id in lines else ds.label()
        digest.sessions.append(Bullet(line, ds.source(0)))
    return digest, dropped


def with_llm(day: Day, settings: Settings, warnings: list[str]) -> tuple[Digest, str, dict[str, int] | None]:
    """The digest written by the model, or by extraction when there is none or it fails."""
    fallback = extractive(day, settings.digest.sentences_per_session)
    client = llm.from_settings(settings)
    if client is None or not day.sessions:
        return fallback, "extractive", None
    answers = []
    try:
        for text, ids, sessions in batches(day, settings.digest.llm_batch_chars):
            answers.append((client.complete_json(PROMPT, text, SCHEMA, "daily digest"), ids, sessions))
        digest, dropped = from_llm(day, answers)
        if dropped:
            warnings.append(f"the model gave {dropped} items without a valid source turn; they were dropped")
        if not (digest.decisions or digest.work or digest.loops or digest.followups):
            client.counters.reclassify_empty()
            raise LlmBadOutput("daily digest: the model returned no cited items", reason="empty")
    except BackendUnavailable as exc:
        warnings.append(f"{exc.message}; the digest was extracted without the model")
        return fallback, "extractive", client.counters.as_dict()
    digest.values = fallback.values
    return digest, "llm", client.counters.as_dict()


# -- the page -----------------------------------------------------------------------------------------
def render(day: Day, digest: Digest, method: str) -> bytes:
    meta = {
        "title": f"Daily digest {day.date.isoformat()}",
        "type": "digest-daily",
        "status": "active",
        "date": day.date.isoformat(),
        "method": method,
        "sessions": [ds.session.session_id for ds in day.sessions],
        "agents": sorted({ds.session.agent for ds in day.sessions}),
        "source_paths": [ds.path for ds in day.sessions],
    }
    blocks = [f"# Daily digest {day.date.isoformat()}"]
    blocks += [
        section(title, [b.render() for b in bullets])
        for title, bullets in zip(SECTIONS, digest.sections(), strict=True)
    ]
    return generated.render(meta, "\n\n".join(blocks), "daily-digest")


def run(ctx: JobContext) -> JobResult:
    day_date = dt.date.fromisoformat(ctx.period)
    now = dt.datetime.now(dt.UTC)
    if not ctx.dry_run:  # transcripts written since the last sync count
        ctx.api.index_paths([SESSIONS_ROOT])
    # What this run covers: a later change of the day's turns makes the day due again (digest_late).
    covered = digest_late.fingerprint(ctx.settings, day_date)
    day = collect(ctx.settings, day_date, now)
    warnings = [f"skipped {item}" for item in day.skipped]
    outputs: dict[str, Any] = {
        digest_late.FINGERPRINT: covered,
        "sessions": len(day.sessions),
        "turns": sum(len(ds.turns) for ds in day.sessions),
        "waiting": len(day.waiting),
        "skipped": len(day.skipped),
    }
    if not day.sessions:
        return JobResult(outputs={**outputs, "written": 0}, warnings=warnings, defer=_deferral(day, now))
    digest, method, counters = with_llm(day, ctx.settings, warnings)
    files = generated.GeneratedFiles(output_root(ctx.settings, "digests"), ctx.dry_run)
    rel = path_for(day_date)
    files.write(rel, render(day, digest, method))
    if files.written and not ctx.dry_run:
        ctx.api.index_paths([rel])
    outputs.update(
        files.counts(),
        path=rel,
        method=method,
        bullets={t: len(b) for t, b in zip(SECTIONS, digest.sections(), strict=True)},
    )
    if counters is not None:
        outputs["llm"] = counters
    return JobResult(outputs=outputs, warnings=warnings + files.warnings, defer=_deferral(day, now))


def _deferral(day: Day, now: dt.datetime) -> str | None:
    """Why the day must be digested again later: sessions still being written, or a day not over yet."""
    if day.waiting:
        return f"{len(day.waiting)} sessions still being written: {', '.join(day.waiting[:5])}"
    if day.date >= now.astimezone(local_zone()).date():
        return "the day is not over yet"
    return None
