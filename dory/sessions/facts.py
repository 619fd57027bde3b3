"""Which sentences of a conversation state a durable fact, and which page it belongs on.

Used without a language model by compaction (facts flushed into proposals) and by dreaming (digest
bullets turned into proposals). Everything found here becomes a proposal a person reviews; the rules
decide what is worth proposing and where, because a wrong target is the costliest mistake: `core/`
pages (core/user.md above all) are read into every agent's context.

- A **decision** (extract.is_decision: "we decided to…", "let's go with…", "I'll use X instead of
  Y") gets its own decision page, named by the clause it decides (extract.decision_subject), when
  that name stands alone: "Chose them" or "Picked this color" name nothing outside their talk, so
  they stay in the digest, next to their context, and no page is proposed.
- A **preference** ("I prefer…", "I always…", "my favourite X is…") or an explicit note
  ("remember that…") said by the user is about the user only when it is in the first person and not
  about a repository, a path or a tool. It goes to `core/user.md` only on strong evidence: an
  explicit "remember that I…", or the same statement said by the user in another session
  (said_elsewhere). Said once, it goes to the project's page when the session worked in one (the
  user said it while working there), else it is held back until it is said again.
- A turn that names its speaker (`**Alice**: …`) is a transcript of people talking: what a speaker
  says about themselves is about that person (`people/<name>`), never about the corpus's owner.
- A fact about a thing ("remember that the staging cluster is heron-7", "this repo uses pnpm")
  goes to the session's project page when the session knows its project (its `cwd`), else to the
  page of the thing it names ("staging cluster"); with neither, it is not proposed.
- Questions, assistant preferences and tool output state nothing durable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath, PurePosixPath, PureWindowsPath

from dory.models import ClaimKind, Family
from dory.sessions import extract
from dory.sessions.store import SessionScope, SessionStore
from dory.sessions.transcript import Session

PREFERENCE = re.compile(
    r"\bi (?:really |strongly |much )?prefer\b"
    # a habit in the present: "I always use…", not a memory ("I never knew…", "I always wanted…")
    r"|\bi (?:always|never|usually|generally|tend to) (?!(?:\w+ed|knew|was|were|had|thought|did|got|went|saw|felt|"
    r"made|took|found|told|said|meant|could|would)\b)"
    r"|\bi (?:like to|don't like|do not like|dislike|hate|can't stand)\b"
    r"|\bplease (?:always|never)\b|\bdon't ever\b"
    r"|\bmy (?:preferred|favou?rite) \w+(?: \w+){0,2} (?:is|are)\b",
    re.IGNORECASE,
)
REMEMBER = re.compile(r"\b(?:remember that|note that|for the record,?|keep in mind that)\s*", re.IGNORECASE)
FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|my|me|myself|mine)\b", re.IGNORECASE)
# What makes a statement about a repository or a tool rather than about a person.
PROJECT_SPECIFIC = re.compile(
    r"\b(?:this|the|our|that) (?:repo|repository|codebase|code base|project|service|app|package|crate|module|"
    r"branch|build|pipeline|ci|server|cluster|database|schema|api|endpoint|config|deploy\w*)\b"
    r"|\b(?:in|for) (?:this|here)\b|`|--\w|\$ \w",
    re.IGNORECASE,
)
# A thing a fact is about: the words before its verb ("the staging cluster is called…").
_THING = re.compile(
    r"^(?:that\s+)?(?:(?:sometimes|usually|often|now|also|always)\s+)?(?:the\s+|our\s+|this\s+|a\s+|an\s+)?(?P<name>[\w.-]+(?:\s+[\w.-]+){0,3}?)\s+"
    r"(?:is|are|was|were|uses?|needs?|has|have|runs?|lives?|requires?|must|should|can(?:not|'t)?|won't|will|"
    r"does(?:n't)?|do(?:n't)?|only|always|never)\b",
    re.IGNORECASE,
)
_DEICTIC = frozenset(["this", "it", "them", "these", "those", "here", "there"])  # not "that": mostly relative
_PRONOUNS = frozenset(
    [
        "i",
        "we",
        "you",
        "he",
        "she",
        "it",
        "they",
        "this",
        "that",
        "there",
        "these",
        "those",
        "everything",
        "something",
        "nothing",
    ]
)
REPEAT_OVERLAP = 0.6  # share of a statement's words another session's sentence must repeat
REPEAT_CANDIDATES = 20


@dataclass(frozen=True)
class Found:
    kind: ClaimKind  # preference | fact | decision
    subject: str  # "user" (core/user.md), a person's or a project's name, a thing, or the decision's clause
    scope: Family | None  # the page family to look in (None: core, through the subject "user")
    needs_repeat: bool = False  # about the user: core/user.md only once said in another session too
    otherwise: Found | None = None  # where it goes when it was not said again: the session's project, or nowhere


def classify(text: str, role: str, speaker: str | None = None, project: str | None = None) -> Found | None:
    """What a sentence said by `role` (and `speaker`, when the transcript names one) states that is
    worth keeping beyond its session, and where it belongs; None when nothing."""
    text = " ".join(text.replace("\u2019", "'").split())
    if not text or text.endswith("?") or role not in ("user", "assistant"):
        return None
    if extract.is_decision(text):
        subject = extract.decision_subject(text)
        return Found("decision", subject, "decision") if stands_alone(subject) else None
    preference, remember = PREFERENCE.search(text), REMEMBER.search(text)
    if role != "user" or not (preference or remember):
        return None
    kind: ClaimKind = "preference" if preference else "fact"
    said = text[remember.end() :] if remember and not preference else text
    about_self = bool(preference) or bool(FIRST_PERSON.search(said))
    if speaker:
        return Found(kind, speaker, "person") if about_self else None
    if about_self and not PROJECT_SPECIFIC.search(text):
        if remember is not None:  # "remember that I…": the user asked for it
            return Found(kind, "user", None)
        held = Found(kind, project, "project") if project else None
        return Found(kind, "user", None, needs_repeat=True, otherwise=held)
    if project:
        return Found(kind, project, "project")
    thing = thing_named(said)
    return Found("fact", thing, "concept") if thing and not about_self else None


def stands_alone(subject: str) -> bool:
    """Whether a decision's name says what was decided without its conversation around it: not only
    a verb ("Chose them"), and no word that points back into the talk ("Picked this color")."""
    words = subject.lower().replace("'", " ").split()
    return len(extract.words(" ".join(words[1:]))) > 0 and not _DEICTIC.intersection(words)


def thing_named(clause: str) -> str | None:
    """The thing a statement is about, from the words before its verb; None for a pronoun."""
    match = _THING.match(clause.strip())
    if match is None:
        return None
    name = match["name"].strip(" .,")
    if name.split()[0].lower() in _PRONOUNS or not any(ch.isalpha() for ch in name):
        return None
    return name


def project_of(session: Session) -> str | None:
    """The project a session worked in: the last folder of its working directory, when recorded."""
    for key in ("project", "cwd"):
        value = session.extra.get(key)
        if isinstance(value, str) and value.strip():
            raw = value.strip().rstrip("/\\")
            path: PurePath = PureWindowsPath(raw) if "\\" in raw else PurePosixPath(raw)
            return path.name or None
    return None


def said_elsewhere(store: SessionStore, statement: str, path: str) -> str | None:
    """Where the user said the same thing about themselves in another session (`path#L<line>`), if
    anywhere: a first-person statement of the same kind sharing REPEAT_OVERLAP of its words."""
    wanted = set(extract.words(statement))
    if not wanted:
        return None
    for hit in store.search(statement, SessionScope(), REPEAT_CANDIDATES):
        if hit.role != "user" or hit.path == path:
            continue
        for sentence in extract.sentences([("user", hit.text)]):
            found = classify(sentence.text, "user", sentence.speaker)
            if found is None or found.subject != "user":
                continue
            if len(wanted & set(extract.words(sentence.text))) / len(wanted) >= REPEAT_OVERLAP:
                return f"{hit.path}#L{hit.start_line}"
    return None


def settle(found: Found, store: SessionStore | None, statement: str, path: str) -> tuple[Found | None, str | None]:
    """Where a found statement finally goes, and why: a statement about the user goes to core only
    when the user said it in another session too (the reason names where), else to its `otherwise`
    page, else nowhere (None)."""
    if not found.needs_repeat:
        return found, None
    also = said_elsewhere(store, statement, path) if store is not None else None
    if also is not None:
        return found, f"the user said it in another session too ({also})"
    return found.otherwise, None
