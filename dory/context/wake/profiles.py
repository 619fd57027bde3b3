"""The five built-in wake profiles, the computed sections they may name, and dory.toml overrides."""

from __future__ import annotations

from dory.config import WakeProfile, WakeSettings
from dory.errors import UsageError

PRIVACY_PROFILE = "privacy"
PRIVACY_BOUNDARIES = "privacy_boundaries"
WRITING_VOICE = "writing_voice"


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


def _resolve_profile(settings: WakeSettings, name: str) -> WakeProfile:
    profiles = {**BUILTIN_PROFILES, **settings.profiles}  # dory.toml replaces a built-in of the same name
    if name not in profiles:
        known = sorted(profiles)
        raise UsageError(
            f"unknown wake profile {name!r}; known profiles: {', '.join(known)}", profile=name, known=known
        )
    return profiles[name]


def profile_names(settings: WakeSettings) -> list[str]:
    """The built-in profiles and those dory.toml defines (active memory takes the same names)."""
    return sorted({*BUILTIN_PROFILES, *settings.profiles})
