"""Source policy: which pages a profile's active memory may quote (SPEC §5: coding never sees personal pages).

A *personal page* is, from the corpus layout of SPEC §2:
- anything under `people/` (canonical person pages, any depth), or a page whose frontmatter `type` is `person`;
- the personal core files `core/user.md`, `core/soul.md` and `core/identity.md` (who the user is). The work
  core files `core/env.md`, `core/active.md` and `core/defaults.md` are not personal: wake's coding profile
  reads exactly those;
- a page whose frontmatter says `visibility: personal`.

Rules per profile: `coding` and `privacy` never quote personal pages; `privacy` also drops pages marked
`visibility: sensitive` or with any `sensitivity` other than `none`. No profile quotes a page marked
`visibility: private` (as in wake, a private page is shown only where it is asked for by name). Other profiles
(default, writing, casual, and those defined in dory.toml) may quote any other page.

The search `Scope` can only narrow to a folder, never leave one out, so the policy is applied as a filter on
the search's hits: active memory asks for more hits than it shows, so a personal page that ranks first is
dropped and the next admissible hits still fill the block. Session hits (the agent's own transcripts) are
never personal pages.
"""

from __future__ import annotations

from dataclasses import dataclass

PERSONAL_FOLDERS = ("people/",)
PERSONAL_CORE = frozenset({"core/user.md", "core/soul.md", "core/identity.md"})
_SENSITIVE_VISIBILITY = frozenset({"sensitive", "personal", "private"})
NO_PERSONAL_PROFILES = frozenset({"coding", "privacy"})


@dataclass(frozen=True)
class PageMeta:
    """What the index knows of a page's frontmatter, for the policy."""

    doc_type: str | None = None
    visibility: str | None = None
    sensitivity: str | None = None


@dataclass(frozen=True)
class SourcePolicy:
    profile: str
    no_personal: bool
    no_sensitive: bool

    def excludes(self, path: str, meta: PageMeta) -> str | None:
        """Why the page may not be quoted under this profile, or None when it may."""
        visibility = (meta.visibility or "").strip().lower()
        if visibility == "private":
            return "visibility: private"
        if self.no_personal and is_personal(path, meta):
            return f"personal page ({self.profile} profile)"
        sensitivity = (meta.sensitivity or "none").strip().lower()
        if self.no_sensitive and (visibility in _SENSITIVE_VISIBILITY or sensitivity != "none"):
            return f"sensitive page ({self.profile} profile)"
        return None


def is_personal(path: str, meta: PageMeta) -> bool:
    folded = path.replace("\\", "/").lstrip("./").lower()
    return (
        folded.startswith(PERSONAL_FOLDERS)
        or folded in PERSONAL_CORE
        or (meta.doc_type or "").strip().lower() == "person"
        or (meta.visibility or "").strip().lower() == "personal"
    )


def policy_for(profile: str) -> SourcePolicy:
    return SourcePolicy(profile, no_personal=profile in NO_PERSONAL_PROFILES, no_sensitive=profile == "privacy")
