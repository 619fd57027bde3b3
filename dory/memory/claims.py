"""The claim store: what is currently believed about each entity, replayed from evidence artifacts.

Every semantic write leaves one immutable artifact under `sources/semantic/YYYY/MM/DD/` whose
frontmatter records a claim event. The indexer turns each artifact into a `claim_events` row, and
an entity's `claims` rows are recomputed from all of its events, in time order, whenever one of
them changes. The store is therefore a pure function of the markdown: delete `.dory/`, reindex,
and it comes back identical. Claims are never deleted: a replaced claim becomes `superseded`, a
forgotten one `retired`, each with `valid_to` and the claim that ended it.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from dory.corpus.document import Document, frontmatter_list

CLAIM_KINDS = ("fact", "preference", "state", "decision", "note")
EVENTS = ("added", "replaced", "retired")
ARTIFACT_ROOT = "sources/semantic/"


@dataclass(frozen=True)
class ClaimEvent:
    claim_id: str
    entity: str
    kind: str
    event: str
    statement: str
    at: str
    ends: tuple[str, ...] = ()  # claims this event supersedes (replaced) or retires (retired)
    reason: str | None = None
    agent: str | None = None
    path: str = ""  # the evidence artifact

    def frontmatter(self) -> dict[str, Any]:
        return {
            "claim_id": self.claim_id,
            "entity": self.entity,
            "kind": self.kind,
            "event": self.event,
            "statement": self.statement,
            "ends": list(self.ends),
            "reason": self.reason,
            "agent": self.agent,
            "at": self.at,
        }


@dataclass(frozen=True)
class Claim:
    claim_id: str
    entity: str
    kind: str
    statement: str
    status: str  # active | superseded | retired
    valid_from: str
    valid_to: str | None
    ended_by: str | None
    evidence: str


def parse_event(doc: Document) -> ClaimEvent | None:
    """The claim event an evidence artifact records, or None for any other note (or a malformed one)."""
    fm = doc.frontmatter
    if not doc.path.startswith(ARTIFACT_ROOT) or fm.get("source_kind") != "semantic":
        return None
    values: dict[str, str] = {}
    for key in ("claim_id", "entity", "kind", "event", "statement", "at"):
        value = fm.get(key)
        if not (isinstance(value, str) and value.strip()):
            return None
        values[key] = value
    if values["kind"] not in CLAIM_KINDS or values["event"] not in EVENTS:
        return None
    reason, agent = fm.get("reason"), fm.get("agent")
    return ClaimEvent(
        claim_id=values["claim_id"],
        entity=values["entity"],
        kind=values["kind"],
        event=values["event"],
        statement=values["statement"],
        at=values["at"],
        ends=tuple(frontmatter_list(fm.get("ends"))),
        reason=str(reason) if reason else None,
        agent=str(agent) if agent else None,
        path=doc.path,
    )


def record_events(conn: sqlite3.Connection, file_id: int, doc: Document) -> set[str]:
    """Store the artifact's event (if it is one); returns the entities whose claims must be replayed."""
    event = parse_event(doc)
    if event is None:
        return set()
    conn.execute(
        "INSERT INTO claim_events(file_id, claim_id, entity, kind, event, statement, reason, agent, at, ends) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            file_id,
            event.claim_id,
            event.entity,
            event.kind,
            event.event,
            event.statement,
            event.reason,
            event.agent,
            event.at,
            json.dumps(list(event.ends)),
        ),
    )
    return {event.entity}


def entities_of_file(conn: sqlite3.Connection, file_id: int) -> set[str]:
    return {row[0] for row in conn.execute("SELECT entity FROM claim_events WHERE file_id = ?", (file_id,))}


def events_for(conn: sqlite3.Connection, entity: str) -> list[ClaimEvent]:
    """An entity's events in the order they happened (ties broken by artifact path)."""
    rows = conn.execute(
        "SELECT e.*, f.path FROM claim_events e JOIN files f ON f.id = e.file_id WHERE e.entity = ? "
        "ORDER BY e.at, f.path",
        (entity,),
    )
    return [
        ClaimEvent(
            claim_id=r["claim_id"],
            entity=r["entity"],
            kind=r["kind"],
            event=r["event"],
            statement=r["statement"],
            at=r["at"],
            ends=tuple(json.loads(r["ends"])),
            reason=r["reason"],
            agent=r["agent"],
            path=r["path"],
        )
        for r in rows
    ]


def replay(events: list[ClaimEvent]) -> list[Claim]:
    claims: dict[str, Claim] = {}
    for event in events:
        ended_status = "superseded" if event.event == "replaced" else "retired"
        for claim_id in event.ends:
            old = claims.get(claim_id)
            if old is not None and old.status == "active":
                claims[claim_id] = Claim(
                    old.claim_id,
                    old.entity,
                    old.kind,
                    old.statement,
                    ended_status,
                    old.valid_from,
                    event.at,
                    event.claim_id,
                    old.evidence,
                )
        if event.event in ("added", "replaced") and event.claim_id not in claims:
            claims[event.claim_id] = Claim(
                event.claim_id, event.entity, event.kind, event.statement, "active", event.at, None, None, event.path
            )
    return list(claims.values())


def rebuild(conn: sqlite3.Connection, entities: list[str]) -> None:
    for entity in entities:
        conn.execute("DELETE FROM claims WHERE entity = ?", (entity,))
        for claim in replay(events_for(conn, entity)):
            conn.execute(
                "INSERT OR REPLACE INTO claims(claim_id, entity, kind, statement, status, valid_from, valid_to, "
                "ended_by, evidence) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    claim.claim_id,
                    claim.entity,
                    claim.kind,
                    claim.statement,
                    claim.status,
                    claim.valid_from,
                    claim.valid_to,
                    claim.ended_by,
                    claim.evidence,
                ),
            )


def claims_for(conn: sqlite3.Connection, entity: str, status: str | None = "active") -> list[Claim]:
    sql = "SELECT * FROM claims WHERE entity = ?" + (" AND status = ?" if status else "")
    args: tuple[str, ...] = (entity, status) if status else (entity,)
    rows = conn.execute(sql + " ORDER BY valid_from, claim_id", args)
    return [
        Claim(
            r["claim_id"],
            r["entity"],
            r["kind"],
            r["statement"],
            r["status"],
            r["valid_from"],
            r["valid_to"],
            r["ended_by"],
            r["evidence"],
        )
        for r in rows
    ]


def dump(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every claim, in a stable order: what the rebuild test compares."""
    rows = conn.execute("SELECT * FROM claims ORDER BY entity, valid_from, claim_id")
    return [dict(row) for row in rows]
