"""Shortening text for one-line bullets, titles, slugs and ids without cutting a word in half.

A cut text ends at the last whole word that fits, followed by an ellipsis, so a reader never sees
"the gaming tea…" for "the gaming team". A single word longer than the limit is the one case where
a cut inside a word is unavoidable (a URL, a hash): it is cut at the limit. Slugs are cut at their
last `-` that fits, for the same reason, and never end with one.
"""

from __future__ import annotations

ELLIPSIS = "…"


def shorten(text: str, limit: int) -> str:
    """`text` on one line, at most `limit` characters, cut after a whole word with `…` when too long."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    room = max(limit - len(ELLIPSIS), 1)
    head = flat[: room + 1]  # one more character: is the cut between two words?
    if head[-1] == " ":
        kept = head.rstrip()
    elif " " in head:
        kept = head.rsplit(" ", 1)[0].rstrip()
    else:
        kept = head[:room]  # one word longer than the limit: nothing better to do
    return kept.rstrip(" ,;:-–—") + ELLIPSIS


def shorten_slug(slug: str, limit: int) -> str:
    """A `-`-separated slug at most `limit` characters, cut at a `-` (whole words only)."""
    if len(slug) <= limit:
        return slug.strip("-")
    head = slug[: limit + 1]
    kept = head.rsplit("-", 1)[0] if "-" in head else head[:limit]
    return kept.strip("-") or slug[:limit].strip("-")
