"""`dory wake`: the frozen block an agent reads at the start of a session (SPEC §5).

The block comes from core files in a per-profile order, an optional project state page, pinned
decisions and recent finished sessions. Sections are packed by priority (the order above): a section
over its own budget is cut line by line and says how to get the rest; a section with no room left is
listed in `omitted` and named on the block's last line. Whatever the corpus holds, the returned block
stays within the token budget and the character cap, because hooks silently cut what is over
(Claude Code keeps 10,000 characters of a SessionStart payload, field notes §3.12). The block
depends only on the files and the recent-session list, so the same corpus gives the same bytes.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dory.config import WakeProfile, WakeSettings
from dory.corpus.document import Document, ReadProblem, frontmatter_list, read_document
from dory.corpus.paths import IgnoreRules, relpath, resolve_note
from dory.errors import DoryError, NotFound, UsageError
from dory.memory.entities import slugify
from dory.models import WakeRequest, WakeResponse, WakeSection

MAX_BUDGET = 1500
MAX_CHARS = 10_000
MAX_FILE_BYTES = 2_000_000  # the index's default cap; a bigger core file is reported, not read

PRIVACY_PROFILE = "privacy"
PRIVACY_BOUNDARIES = "privacy_boundaries"
WRITING_VOICE = "writing_voice"
_WRITING_VOICE_PAGE = "knowledge/personal/writing-voice.md"
_PERSONAL_DIR = "knowledge/personal/"

_MIN_SHARE = 80  # the fair share of an unbudgeted profile section never drops below this
_MIN_SECTION = 20  # a dory.toml budget of 0 or less would hide the section for good
_MIN_PARTIAL = 40  # characters: a later section cut inside its first line must keep at least this many
_MAX_FOOTER_PATHS = 12

_SEPARATOR = "\n\n"
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t#]*$")
_TIMELINE = "<!-- TIMELINE"
# C0 and C1 control characters except tab: invisible in a prompt, and a stray CR rewinds a terminal line.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s")

_BOUNDARY = re.compile(r"boundar|private|privacy|sensitive|public|redact|do not|don['’]t|avoid", re.IGNORECASE)
# Lines naming or holding a personal identifier never reach a privacy block, even under a boundary heading.
_IDENTIFIER = re.compile(
    r"e-?mail|phone|mobile|telegram|whatsapp|birth|\bborn\b|\bdob\b|passport|\bssn\b|social security"
    r"|address|orcid|\biban\b|\S@\S|\+?\d[\d \t().-]{6,}\d",
    re.IGNORECASE,
)
_HIDDEN_VISIBILITY = frozenset({"private", "personal", "sensitive"})
_RETIRED_STATUS = frozenset({"retired", "superseded", "stale", "deleted", "tombstoned"})
_RULES = IgnoreRules()


def _profile(sections: list[str], **budgets: int) -> WakeProfile:
    return WakeProfile(sections=sections, budgets=budgets)


BUILTIN_PROFILES: dict[str, WakeProfile] = {
    "default": _profile(
        ["core/user.md", "core/soul.md", "core/env.md", "core/active.md", "core/identity.md", "core/defaults.md"],
        user=160,
        soul=120,
        env=100,
        active=140,
        identity=100,
        defaults=80,
        project=300,
    ),
    "casual": _profile(
        ["core/user.md", "core/soul.md", "core/identity.md", "core/defaults.md", "core/active.md", "core/env.md"],
        user=200,
        soul=160,
        identity=120,
        defaults=100,
        active=120,
        env=80,
        project=240,
    ),
    "coding": _profile(
        ["core/active.md", "core/env.md", "core/defaults.md"],
        active=480,
        env=340,
        defaults=260,
        project=360,
    ),
    "writing": _profile(
        ["core/soul.md", WRITING_VOICE, "core/defaults.md", "core/active.md"],
        soul=520,
        writing_voice=420,
        defaults=180,
        active=180,
        project=260,
    ),
    "privacy": _profile(
        [PRIVACY_BOUNDARIES, "core/defaults.md", "core/soul.md"],
        privacy_boundaries=420,
        defaults=260,
        soul=180,
        project=220,
    ),
}


@dataclass(frozen=True)
class RecentSession:
    """A finished agent session the service found in the session plane."""

    path: str
    title: str
    agent: str
    updated: str | None


@dataclass(frozen=True)
class _Candidate:
    """A section before packing: its full lines (heading first) and its own token budget."""

    name: str
    source: str
    lines: list[str]
    budget: int
    get_path: str | None = None  # what `dory get` fetches for the rest
    items: list[str] | None = None  # a list section: the path behind each line after the heading
    # Whether left-out list items are named on the last line: a session's path costs about as much
    # as its line, so sessions that do not fit are only reported in `omitted`.
    name_left_out: bool = True


@dataclass(frozen=True)
class _Placed:
    cand: _Candidate
    text: str
    kept: int  # lines of cand.lines kept whole
    truncated: bool


@dataclass(frozen=True)
class _Omission:
    source: str
    reason: str
    gettable: bool = False  # named on the block's last line (the file exists)


@dataclass(frozen=True)
class _Limits:
    count: Callable[[str], int]
    budget: int
    max_chars: int

    def fits(self, text: str) -> bool:
        return len(text) <= self.max_chars and self.count(text) <= self.budget


def build_wake(
    corpus: Path,
    settings: WakeSettings,
    req: WakeRequest,
    count_tokens: Callable[[str], int],
    recent: list[RecentSession],
    now: dt.datetime | None = None,
) -> WakeResponse:
    """The wake block for `req`; raises UsageError for a profile neither built in nor in dory.toml."""
    profile = _resolve_profile(settings, req.profile)
    limits = _Limits(
        count_tokens,
        min(req.budget or settings.budget, MAX_BUDGET),
        min(req.max_chars or settings.max_chars, MAX_CHARS),
    )
    gather = _Gatherer(corpus, req.profile, profile, limits)
    cands = gather.profile_sections()
    if req.project:
        project = gather.project(req.project)
        if project:
            cands.insert(min(1, len(cands)), project)  # an asked-for project comes right after the first section
    pinned = gather.pinned(settings.pinned_decisions)
    if pinned:
        cands.append(pinned)
    sessions = gather.sessions(recent, settings.recent_sessions)
    if sessions:
        cands.append(sessions)
    placed = _pack(cands, limits)
    block, placed, omissions = _finish(placed, cands, gather.omissions, limits)
    now = now or dt.datetime.now(dt.UTC)
    return WakeResponse(
        profile=req.profile,
        block=block,
        tokens=count_tokens(block),
        chars=len(block),
        budget=limits.budget,
        max_chars=limits.max_chars,
        sections=[
            WakeSection(name=p.cand.name, source=p.cand.source, tokens=count_tokens(p.text), truncated=p.truncated)
            for p in placed
        ],
        omitted=[f"{o.source}: {o.reason}" for o in omissions],
        frozen_at=now.isoformat(),
        warnings=gather.warnings,
    )


def _resolve_profile(settings: WakeSettings, name: str) -> WakeProfile:
    profiles = {**BUILTIN_PROFILES, **settings.profiles}  # dory.toml replaces a built-in of the same name
    if name not in profiles:
        known = sorted(profiles)
        raise UsageError(
            f"unknown wake profile {name!r}; known profiles: {', '.join(known)}", profile=name, known=known
        )
    return profiles[name]


class _Gatherer:
    """Reads the sources of one wake request into candidates, recording what it leaves out and why."""

    def __init__(self, corpus: Path, profile_name: str, profile: WakeProfile, limits: _Limits) -> None:
        self.root = corpus
        self.privacy = profile_name == PRIVACY_PROFILE
        self.profile = profile
        self.max_chars = limits.max_chars
        self.total = limits.budget
        self.share = max(limits.budget // max(len(profile.sections), 1), _MIN_SHARE)
        self.omissions: list[_Omission] = []
        self.warnings: list[str] = []

    def omit(self, source: str, reason: str) -> None:
        self.omissions.append(_Omission(_one_line(source, 200), reason))

    def budget_of(self, name: str, source: str, default: int) -> int:
        value = self.profile.budgets.get(name, self.profile.budgets.get(source, default))
        return max(value, _MIN_SECTION)

    def profile_sections(self) -> list[_Candidate]:
        cands = []
        for source in self.profile.sections:
            if source == PRIVACY_BOUNDARIES:
                cand = self.privacy_boundaries()
            elif source == WRITING_VOICE:
                cand = self.writing_voice()
            else:
                cand = self.path_section(source)
            if cand:
                cands.append(cand)
        return cands

    def path_section(self, source: str) -> _Candidate | None:
        # A bare name in dory.toml ("active") means the core file of that name.
        rel = source if "/" in source or source.lower().endswith(".md") else f"core/{source}.md"
        doc = self.read(rel)
        if doc is None or self.hidden(doc, explicit=True):
            return None
        name = Path(doc.path).stem
        return self.page_candidate(doc, name, self.budget_of(name, source, self.share))

    def read(self, rel: str, report_missing: bool = True, raw: bool = True) -> Document | None:
        """The note at `rel` if it is inside the corpus and readable; otherwise records why not.
        `raw=False` is for computed sections, which may read core/user.md to filter it."""
        try:
            rel, resolved = resolve_note(self.root, rel, _RULES)
            real = {rel.lower(), relpath(self.root.resolve(), resolved).lower()}  # a symlink has two names
            if self.privacy and any(path.startswith(_PERSONAL_DIR) for path in real):
                self.omit(rel, "personal page (privacy profile)")
                return None
            if self.privacy and raw and "core/user.md" in real:
                self.omit(rel, "personal page; the privacy profile uses only its boundary lines")
                return None
            return read_document(self.root, rel, MAX_FILE_BYTES)
        except NotFound:
            if report_missing:
                self.omit(rel, "missing")
        except DoryError as exc:
            self.omit(rel, exc.message)
            self.warnings.append(f"wake source {rel!r} skipped: {exc.message}")
        except ReadProblem as exc:
            self.omit(rel, f"unreadable ({exc.detail})")
        return None

    def hidden(self, doc: Document, explicit: bool) -> bool:
        """True (and recorded) when the page's frontmatter keeps it out of this profile."""
        visibility = str(doc.frontmatter.get("visibility") or "").strip().lower()
        sensitivity = str(doc.frontmatter.get("sensitivity") or "none").strip().lower()
        reason = None
        if self.privacy and doc.frontmatter_error:
            reason = "frontmatter unreadable, so its visibility is unknown (privacy profile)"
        elif self.privacy and visibility in _HIDDEN_VISIBILITY:
            reason = f"visibility: {visibility} (privacy profile)"
        elif self.privacy and sensitivity != "none":
            reason = f"sensitivity: {sensitivity} (privacy profile)"
        elif visibility == "private" and not explicit:
            reason = "visibility: private (list the page in the profile to include it)"
        if reason:
            self.omit(doc.path, reason)
        return reason is not None

    def page_candidate(self, doc: Document, name: str, budget: int, label: str | None = None) -> _Candidate | None:
        """The page's body under its own heading, or under `# <label>` replacing a leading H1."""
        lines = _body_lines(doc)
        if not any(_is_content(line) for line in lines):
            self.omit(doc.path, "no body text")
            return None
        heading = _HEADING.match(lines[0])
        if label:
            lines = [f"# {_one_line(label, 200)}", *(lines[1:] if heading and heading.group(1) == "#" else lines)]
        elif not heading:
            lines = [f"# {_one_line(doc.title, 200)}", *lines]
        return _Candidate(name, doc.path, _cap_chars(lines, self.max_chars + 1), budget, get_path=doc.path)

    def privacy_boundaries(self) -> _Candidate | None:
        lines: list[str] = []
        for rel in ("core/user.md", "core/identity.md"):
            doc = self.read(rel, report_missing=False, raw=False)
            if doc:
                lines.extend(_boundary_lines(_body_lines(doc)))
        lines = _dedupe(lines)
        if not any(_is_content(line) for line in lines):
            self.omit(PRIVACY_BOUNDARIES, "no boundary headings in core/user.md or core/identity.md")
            return None
        budget = self.budget_of(PRIVACY_BOUNDARIES, PRIVACY_BOUNDARIES, self.share)
        lines = _cap_chars(["# Privacy Boundaries", *lines], self.max_chars + 1)
        return _Candidate(PRIVACY_BOUNDARIES, PRIVACY_BOUNDARIES, lines, budget)

    def writing_voice(self) -> _Candidate | None:
        if self.privacy:
            self.omit(WRITING_VOICE, "personal page (privacy profile)")
            return None
        rel = _voice_page(self.root)
        if rel is None:
            self.omit(WRITING_VOICE, f"missing (no {_WRITING_VOICE_PAGE} nor knowledge/personal/*voice*.md)")
            return None
        doc = self.read(rel)
        if doc is None or self.hidden(doc, explicit=False):
            return None
        return self.page_candidate(doc, WRITING_VOICE, self.budget_of(WRITING_VOICE, rel, self.share))

    def project(self, handle: str) -> _Candidate | None:
        text = handle.strip()
        if text.lower().startswith("project:"):
            text = text[len("project:") :].strip()
        slug = slugify(text)
        rel = _find_project(self, slug) if slug else None
        if rel is None:
            self.warnings.append(
                f"project {handle!r} not found: no projects/<slug>/state.md or project page "
                "with that slug, title or alias"
            )
            return None
        doc = self.read(rel)
        # Asking for the project by name is explicit, so only the privacy profile's rules hide it.
        if doc is None or self.hidden(doc, explicit=True):
            return None
        # The label tells the agent that this is the project's state, not another core file.
        return self.page_candidate(
            doc, "project", self.budget_of("project", rel, self.share), label=f"Project: {doc.title} ({doc.path})"
        )

    def pinned(self, limit: int) -> _Candidate | None:
        if limit <= 0:
            return None
        docs = [doc for doc in self.decision_pages() if _is_pinned(doc) and not self.hidden(doc, explicit=False)]
        docs.sort(key=lambda doc: doc.path)
        docs.sort(
            key=lambda doc: str(doc.frontmatter.get("updated") or doc.frontmatter.get("created") or ""), reverse=True
        )  # a stable sort: equal dates stay in path order
        docs = docs[:limit]
        if not docs:
            return None
        lines = ["## Pinned decisions", *(_decision_line(doc) for doc in docs)]
        # A list section is bounded by its count, so only the whole block's budget cuts it by default.
        budget = self.budget_of("pinned_decisions", "pinned_decisions", self.total)
        return _Candidate("pinned_decisions", "decisions/", lines, budget, items=[doc.path for doc in docs])

    def decision_pages(self) -> list[Document]:
        base = self.root / "decisions"
        rels = []
        for folder, dirs, files in os.walk(base):  # os.walk does not follow symlinked folders
            folder_rel = relpath(self.root, Path(folder))
            dirs[:] = sorted(d for d in dirs if not _RULES.skips_dir(d, f"{folder_rel}/{d}"))
            rels.extend(
                f"{folder_rel}/{name}"
                for name in files
                if name.lower().endswith(".md") and not _RULES.skips_file(name, f"{folder_rel}/{name}")
            )
        docs = (self.read(rel) for rel in sorted(rels))
        return [doc for doc in docs if doc is not None]

    def sessions(self, recent: list[RecentSession], limit: int) -> _Candidate | None:
        if self.privacy or limit <= 0 or not recent:
            return None  # the privacy profile never shows what was worked on
        chosen = sorted(recent, key=lambda s: s.path)
        chosen.sort(key=lambda s: s.updated or "", reverse=True)
        chosen = chosen[:limit]
        lines = ["## Recent sessions", *(_session_line(s) for s in chosen)]
        budget = self.budget_of("recent_sessions", "recent_sessions", self.total)
        return _Candidate(
            "recent_sessions",
            "sessions",
            lines,
            budget,
            items=[_one_line(s.path, 300) for s in chosen],
            name_left_out=False,
        )


def _find_project(gather: _Gatherer, slug: str) -> str | None:
    """`projects/<slug>/state.md` (or `projects/<slug>.md`), else the first project page whose folder,
    title or alias has the same slug."""
    root = gather.root
    for rel in (f"projects/{slug}/state.md", f"projects/{slug}.md"):
        if (root / rel).is_file():
            return rel
    folder = root / "projects"
    if not folder.is_dir():
        return None
    entries = [p for p in folder.iterdir() if not p.name.startswith(".")]
    pages = [(p.name, f"projects/{p.name}/state.md") for p in entries if (p / "state.md").is_file()]
    pages += [(p.stem, f"projects/{p.name}") for p in entries if p.is_file() and p.suffix.lower() == ".md"]
    for name, rel in sorted(pages, key=lambda page: page[1]):
        doc = gather.read(rel)
        if doc is None:
            continue
        names = [name, doc.title, *frontmatter_list(doc.frontmatter.get("aliases"))]
        if slug in {slugify(n) for n in names}:
            return rel
    return None


def _voice_page(root: Path) -> str | None:
    if (root / _WRITING_VOICE_PAGE).is_file():
        return _WRITING_VOICE_PAGE
    folder = root / _PERSONAL_DIR
    if not folder.is_dir():
        return None
    names = sorted(
        p.name for p in folder.iterdir() if p.is_file() and p.name.lower().endswith(".md") and "voice" in p.name.lower()
    )
    return f"{_PERSONAL_DIR}{names[0]}" if names else None


def _is_pinned(doc: Document) -> bool:
    fm = doc.frontmatter
    pinned = fm.get("pinned") is True or str(fm.get("pinned")).strip().lower() in ("true", "yes")
    status = str(fm.get("status") or "").strip().lower()
    return pinned and status not in _RETIRED_STATUS and not fm.get("superseded_by")


def _decision_line(doc: Document) -> str:
    line = f"- {_one_line(doc.title, 120)} ({_one_line(doc.path, 200)})"
    sentence = next(
        (
            _LIST_MARKER.sub("", text)
            for text in _body_lines(doc)
            if _is_content(text) and not text.lstrip().startswith("<!--")
        ),
        "",
    )
    sentence = _one_line(_SENTENCE_END.split(sentence, maxsplit=1)[0], 160)
    return f"{line}: {sentence}" if sentence else line


def _session_line(session: RecentSession) -> str:
    date = _one_line(session.updated or "", 10) or "undated"
    agent = _one_line(session.agent, 40) or "agent"
    return f"- {date} {agent}: {_one_line(session.title, 100)} ({_one_line(session.path, 300)})"


def _body_lines(doc: Document) -> list[str]:
    """The body without frontmatter, above the canonical TIMELINE marker, blank runs collapsed."""
    lines = doc.lines
    start = _after_broken_fence(lines) if doc.frontmatter_error else doc.body_start
    body: list[str] = []
    for line in lines[start:]:
        if line.lstrip().startswith(_TIMELINE):
            break  # the append-only timeline and evidence are history, not context
        clean = _CONTROL.sub("", line).rstrip()
        if clean or (body and body[-1]):
            body.append(clean)
    while body and not body[-1]:
        body.pop()
    return body


def _after_broken_fence(lines: list[str]) -> int:
    """Broken YAML is still frontmatter: it is skipped, not shown to the agent."""
    if lines and lines[0].rstrip() == "---":
        for index in range(1, len(lines)):
            if lines[index].rstrip() in ("---", "..."):
                return index + 1
    return 0


def _boundary_lines(lines: list[str]) -> list[str]:
    """Headings that name a boundary and the lines under them, minus personal identifiers.

    A sub-heading about an identifier ("### Phone") hides its whole subsection, whose lines (a bare
    street name, a number) may not say what they are."""
    out: list[str] = []
    level: int | None = None  # depth of the boundary heading we are under
    skip: int | None = None  # depth of the identifier sub-heading we are under
    for line in lines:
        heading = _HEADING.match(line)
        if heading:
            depth, text = len(heading.group(1)), heading.group(2) or ""
            if skip is not None and depth <= skip:
                skip = None
            if level is not None and depth <= level:
                level = None
            if level is None and _BOUNDARY.search(text):
                level = depth
            elif level is not None and skip is None and _IDENTIFIER.search(text):
                skip = depth
        if level is not None and skip is None and not _IDENTIFIER.search(line):
            out.append(line)
    return out


def _dedupe(lines: list[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for line in lines:
        key = " ".join(line.split()).casefold()
        if key and key in seen:
            continue
        seen.add(key)
        if key or (out and out[-1]):
            out.append(line)
    return out


def _is_content(line: str) -> bool:
    return bool(line.strip()) and not _HEADING.match(line)


def _one_line(text: str, limit: int) -> str:
    return " ".join(_CONTROL.sub(" ", text).split())[:limit]


def _cap_chars(lines: list[str], limit: int) -> list[str]:
    """Lines whose joined length reaches at most `limit`; nothing past the character cap can fit."""
    kept: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) > limit:
            kept.append(line[: max(limit - used, 0)])
            break
        kept.append(line)
        used += len(line) + 1
    return kept


def _marker(cand: _Candidate) -> str:
    if cand.get_path:
        return f"<!-- wake: truncated; run `dory get {_one_line(cand.get_path, 200)}` for the rest -->"
    return "<!-- wake: truncated; a larger --budget shows more -->"


def _largest(lo: int, hi: int, ok: Callable[[int], bool]) -> int:
    """The largest n in [lo, hi) with ok(n), by bisection; ok(lo) must hold. Token counts are not
    strictly monotonic in a prefix's length, so this keeps the invariant rather than trusting it."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _render(cand: _Candidate, fits: Callable[[str], bool], first: bool) -> _Placed | None:
    """The longest form of `cand` that `fits`: whole, cut by lines, cut inside a line; None if
    nothing useful fits. The first section always shows something while one character fits."""
    lines = cand.lines
    full = "\n".join(lines)
    if fits(full):
        return _Placed(cand, full, len(lines), False)
    tail = [] if cand.items is not None else [_marker(cand)]
    if fits("\n".join([*lines[:1], *tail])):
        kept = _largest(1, len(lines), lambda k: fits("\n".join([*lines[:k], *tail])))
        if any(_is_content(line) for line in lines[:kept]):
            return _Placed(cand, "\n".join([*lines[:kept], *tail]), kept, True)
        if cand.items is None:
            partial = _cut_inside(lines, kept, tail, fits, 1 if first else _MIN_PARTIAL)
            if partial is not None:
                return _Placed(cand, partial, kept, True)
    if first:
        size = _largest(0, len(full), lambda n: fits(full[:n]))
        if size > 0:
            return _Placed(cand, full[:size], 0, True)
    return None


def _cut_inside(
    lines: list[str], kept: int, tail: list[str], fits: Callable[[str], bool], min_chars: int
) -> str | None:
    """Headings fit but no content line does: keep the start of the first content line (a paragraph
    written as one long line, or a file with no newline at all, is still shown)."""
    index = kept
    while index < len(lines) and not lines[index].strip():
        index += 1  # blank lines between the heading and the text carry nothing
    if index == len(lines):
        return None
    line = lines[index]

    def text(n: int) -> str:
        return "\n".join([*lines[:kept], line[:n].rstrip(), *tail])

    size = _largest(0, len(line), lambda n: fits(text(n)))
    if size < min(min_chars, len(line)) or not line[:size].strip():
        return None
    return text(size)


def _join(parts: list[str]) -> str:
    return _SEPARATOR.join(part for part in parts if part)


def _section_fits(cand: _Candidate, limits: _Limits, text: str) -> bool:
    return len(text) <= limits.max_chars and limits.count(text) <= cand.budget


def _pack(cands: list[_Candidate], limits: _Limits) -> list[_Placed]:
    """Each candidate in priority order, as much of it as fits its own budget and the room left."""
    placed: list[_Placed] = []
    for cand in cands:
        before = [p.text for p in placed]

        def fits(text: str, cand: _Candidate = cand, before: list[str] = before) -> bool:
            return _section_fits(cand, limits, text) and limits.fits(_join([*before, text]))

        result = _render(cand, fits, first=cand is cands[0])
        if result is not None:
            placed.append(result)
    return placed


def _finish(
    placed: list[_Placed], cands: list[_Candidate], static: list[_Omission], limits: _Limits
) -> tuple[str, list[_Placed], list[_Omission]]:
    """Add the last line naming what was left out, shrinking the last sections until it fits.
    Every block returned here was measured whole against both caps."""
    placed = list(placed)
    while True:
        omissions = static + _left_out(cands, placed)
        body = _join([p.text for p in placed])
        footers = _footers([o.source for o in omissions if o.gettable])
        for footer in footers or [""]:
            block = _join([body, footer])
            if limits.fits(block):
                return block, placed, omissions
        shortest = footers[-1] if footers else ""
        if not _shrink_last(placed, cands, shortest, limits):
            # Not even the first section fits beside the shortest last line: the section wins.
            return _cut_to_fit(_join([body, shortest]), limits), placed, omissions


def _shrink_last(placed: list[_Placed], cands: list[_Candidate], footer: str, limits: _Limits) -> bool:
    """Make the last placed section strictly shorter so that `footer` fits after it, or drop it.
    False when only the first section is left and it cannot shrink."""
    if not placed:
        return False
    last = placed.pop()
    before = [p.text for p in placed]

    def fits(text: str) -> bool:
        return (
            len(text) < len(last.text)
            and _section_fits(last.cand, limits, text)
            and limits.fits(_join([*before, text, footer]))
        )

    first = last.cand is cands[0]
    result = _render(last.cand, fits, first=first)
    if result is not None:
        placed.append(result)
        return True
    if first:
        placed.append(last)
        return False
    return True


def _left_out(cands: list[_Candidate], placed: list[_Placed]) -> list[_Omission]:
    """Sections (or list items) that were found but had no room, in priority order."""
    by_cand = {id(p.cand): p for p in placed}
    out: list[_Omission] = []
    for cand in cands:
        done = by_cand.get(id(cand))
        if cand.items is not None:
            kept = max(done.kept - 1, 0) if done else 0  # the heading is line 0
            out.extend(_Omission(path, "no room in the budget", cand.name_left_out) for path in cand.items[kept:])
        elif done is None:
            out.append(_Omission(cand.get_path or cand.source, "no room in the budget", cand.get_path is not None))
    return out


def _footers(paths: list[str]) -> list[str]:
    """The block's last line, longest first: every path, then fewer with a count of the rest."""
    out = []
    for shown in range(min(len(paths), _MAX_FOOTER_PATHS), 0, -1):
        names = ", ".join(_one_line(path, 200) for path in paths[:shown])
        rest = len(paths) - shown
        more = f" (+{rest} more in `dory wake --json`)" if rest else ""
        out.append(f"<!-- wake: left out {names}{more}; run `dory get <path>` for each -->")
    return out


def _cut_to_fit(text: str, limits: _Limits) -> str:
    if limits.fits(text):
        return text
    return text[: _largest(0, len(text), lambda n: limits.fits(text[:n]))]
