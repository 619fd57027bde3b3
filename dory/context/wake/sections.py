"""Section readers: core files, writing voice, privacy boundaries, a project, pinned decisions, recent sessions."""

from __future__ import annotations

import os
import re
from pathlib import Path

from dory.config import WakeProfile
from dory.context.wake.base import (
    _CONTROL,
    _HEADING,
    RecentSession,
    _Candidate,
    _cap_chars,
    _is_content,
    _Limits,
    _Omission,
    _one_line,
)
from dory.context.wake.privacy import _HIDDEN_VISIBILITY, _boundary_lines
from dory.context.wake.profiles import PRIVACY_BOUNDARIES, PRIVACY_PROFILE, WRITING_VOICE
from dory.corpus.document import Document, ReadProblem, frontmatter_list, read_document
from dory.corpus.paths import IgnoreRules, relpath, resolve_note
from dory.errors import DoryError, NotFound
from dory.memory.entities import slugify

MAX_FILE_BYTES = 2_000_000  # the index's default cap; a bigger core file is reported, not read

_WRITING_VOICE_PAGE = "knowledge/personal/writing-voice.md"
_PERSONAL_DIR = "knowledge/personal/"

_MIN_SHARE = 80  # the fair share of an unbudgeted profile section never drops below this
_MIN_SECTION = 20  # a dory.toml budget of 0 or less would hide the section for good

_TIMELINE = "<!-- TIMELINE"

_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s")

_RETIRED_STATUS = frozenset({"retired", "superseded", "stale", "deleted", "tombstoned"})
_RULES = IgnoreRules()


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
        rels: list[str] = []
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
