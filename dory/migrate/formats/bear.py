"""Bear backups (`.bear2bk`): a zip of TextBundles, `X.textbundle/{info.json, text.md, assets/}`.

The text is Bear's markdown, kept as written; `info.json` holds Bear's metadata under
`net.shinyfrog.bear` (creationDate, modificationDate, pinned, archived, trashed, encrypted,
uniqueIdentifier). Plain TextBundle folders (other apps write them too) read the same way.
Decisions:
- The title is the text's first line without its `#`s; an empty one takes the bundle's name
  (Bear names a bundle by its title, by its time when there is none).
- Bear tags (`#tag`, `#nested/tag`, `#multi word tag#`) go to the frontmatter with their text as
  Bear shows it; the body keeps them. Code is not searched for tags; nor are `#` inside words or
  URLs, all-digit words (`#123`), or headings (`# Title`).
- Assets are copied beside the note (noteapp.py) and the text's links to `assets/…` become
  wikilinks to the copies; assets the text does not link are listed at the end.
- An encrypted note (its text is not in the backup) is imported as a marked note: title, dates,
  `encrypted: true`, a line saying so and Bear's ciphertext in a fence, never decrypted.
- Trashed notes go to `Trash/` (noteapp.py); archived and pinned ones are flagged.
- A `.bear2bk` that is not a readable zip (truncated) is a `bad_zip` problem; other backups and
  files go on. The backup's own `tags.json` (Bear's tag list) is not a note and is skipped.
"""

from __future__ import annotations

import json
import posixpath
import re
import urllib.parse
from collections.abc import Iterator
from typing import Any

from dory.migrate.formats import noteapp
from dory.migrate.formats.generic import read_file
from dory.migrate.model import Item, ItemProblem, ReadContext, SourceFile, SourceTreeLike, Yielded, digest_of, wikilink
from dory.migrate.text import NotText, decode, fence

BUNDLE = ".textbundle"
TEXT_NAMES = ("text.md", "text.markdown", "text.txt")
_CODE = re.compile(r"^(```|~~~).*?^\1[^\n]*$|`[^`\n]+`", re.MULTILINE | re.DOTALL)
_MULTI_TAG = re.compile(r"(?<!\S)#([^\s#](?:[^#\n]*[^\s#])?)#(?=\s|$|[.,;:!?)\]])")
_TAG = re.compile(r"(?<!\S)#([\w/-]+)")
_ASSET_LINK = re.compile(r"(!?)\[([^\]\n]*)\]\((<[^>\n]+>|[^)\s]+)\)")


class BearReader:
    name = "bear"

    def detect(self, tree: SourceTreeLike) -> int:
        for file in tree.files():
            if file.suffix == "bear2bk" or ".bear2bk!/" in file.rel or _bundle_of(file.rel):
                return 30
        return 0

    def read(self, tree: SourceTreeLike, ctx: ReadContext) -> Iterator[Yielded]:
        names = noteapp.Names()
        current: str | None = None
        files: list[SourceFile] = []
        for file in tree.files():  # sorted by path, so a bundle's files come together
            bundle = _bundle_of(file.rel)
            if bundle != current and files:
                yield from _bundle(str(current), files, names, ctx)
                files = []
            current = bundle
            if bundle is not None:
                files.append(file)
            elif file.suffix == "bear2bk":
                yield ItemProblem(file.rel, "bad_zip", "a Bear backup that is not a readable zip (truncated?)")
            elif not (file.name == "tags.json" and ".bear2bk" in file.rel):
                yield read_file(file, ctx.into, ctx)
        if files:
            yield from _bundle(str(current), files, names, ctx)


def _bundle_of(rel: str) -> str | None:
    """The bundle folder a file is in (`…/X.textbundle`), or None."""
    parts = rel.split("/")
    for n, part in enumerate(parts[:-1]):
        if part.lower().endswith(BUNDLE):
            return "/".join(parts[: n + 1])
    return None


def _bundle(folder: str, files: list[SourceFile], names: noteapp.Names, ctx: ReadContext) -> Iterator[Yielded]:
    inside = {f.rel[len(folder) + 1 :]: f for f in files}
    stem = posixpath.basename(folder)[: -len(BUNDLE)]
    meta, info_bytes, problem = _info(inside.get("info.json"))
    if problem is not None:
        yield problem
    text_file = next((inside[n] for n in TEXT_NAMES if n in inside), None)
    try:
        raw = text_file.read() if text_file is not None else b""
        text, _ = decode(raw)
    except (OSError, ValueError, NotText) as exc:
        yield ItemProblem(text_file.rel if text_file else folder, "unreadable", f"the note's text: {exc}")
        return
    encrypted = bool(meta.get("encrypted"))
    title = str(meta.get("title") or "") if encrypted else _title(text)
    title = " ".join(title.split()) or stem or "Untitled"
    trashed = bool(meta.get("trashed"))
    path = names.note(posixpath.join(ctx.into, noteapp.TRASH) if trashed else ctx.into, title)
    key = f"bear:{meta.get('uniqueIdentifier') or folder}"
    assets = {name: f for name, f in sorted(inside.items()) if name.startswith("assets/")}
    items, targets = _assets(key, path, assets, names)
    yield from (i for i in items if isinstance(i, ItemProblem))
    body = _encrypted_body(meta) if encrypted else _link_assets(text, targets)
    linked = set() if encrypted else _linked_assets(text)
    unlinked = [target for name, target in targets.items() if name not in linked]
    if unlinked:
        body = (
            body.rstrip("\n")
            + "\n\nAttachments:\n\n"
            + "\n".join(f"- {noteapp.link(p, posixpath.basename(p))}" for p in unlinked)
        )
    fm = _frontmatter(meta, title, text, folder, ctx)
    digest = digest_of(info_bytes, raw)
    yield noteapp.note_item(key, folder, digest, path, fm, body, "encrypted in Bear" if encrypted else "")
    yield from (i for i in items if isinstance(i, Item))


def _info(file: SourceFile | None) -> tuple[dict[str, Any], bytes, ItemProblem | None]:
    """Bear's metadata; a note whose info.json is unreadable is still imported, without it."""
    if file is None:
        return {}, b"", None
    try:
        data = file.read()
        info = json.loads(decode(data)[0])
    except (OSError, ValueError, NotText, RecursionError) as exc:
        message = f"Bear's metadata is unreadable ({str(exc)[:200]}); the note was imported without it"
        return {}, b"", ItemProblem(file.rel, "bad_json", message)
    meta = info.get("net.shinyfrog.bear") if isinstance(info, dict) else None
    return (meta if isinstance(meta, dict) else {}), data, None


def _title(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip().lstrip("#").strip()
    return ""


def _assets(
    key: str, note_path: str, assets: dict[str, SourceFile], names: noteapp.Names
) -> tuple[list[Yielded], dict[str, str]]:
    """The assets as attachment items, and where each went (by its `assets/…` name)."""
    items: list[Yielded] = []
    targets: dict[str, str] = {}
    for name, file in assets.items():
        try:
            data = file.read()
        except (OSError, ValueError) as exc:
            items.append(ItemProblem(file.rel, "unreadable", str(exc)))
            continue
        target = names.attachment(note_path, name.removeprefix("assets/").replace("/", " "))
        targets[name] = target
        items.append(noteapp.attachment(f"{key}/{name}", file.rel, target, data))
    return items, targets


def _linked_assets(text: str) -> set[str]:
    """The `assets/…` names the text links to."""
    return {_asset_name(m.group(3)) for m in _ASSET_LINK.finditer(text)}


def _asset_name(target: str) -> str:
    return urllib.parse.unquote(target.strip("<>"))


def _link_assets(text: str, targets: dict[str, str]) -> str:
    def swap(match: re.Match[str]) -> str:
        target = targets.get(_asset_name(match.group(3)))
        if target is None:
            return match.group(0)
        if match.group(1):
            return noteapp.link(target, posixpath.basename(target))
        return wikilink(target, match.group(2) or posixpath.basename(target))

    return _ASSET_LINK.sub(swap, text)


def _encrypted_body(meta: dict[str, Any]) -> str:
    line = (
        "**Encrypted in Bear**: the text is not in the backup and was not decrypted. "
        "Decrypt the note in Bear and back up again to import its text."
    )
    cipher = meta.get("encryptedData")
    return line + ("\n\n" + fence(str(cipher), "bear-encrypted") if isinstance(cipher, str) and cipher else "")


def bear_tags(text: str) -> list[str]:
    """Bear's tags in a note, in order of first use, as Bear shows them."""
    text = _CODE.sub(" ", text)
    found: list[str] = []
    for match in _MULTI_TAG.finditer(text):
        found.append(" ".join(match.group(1).split()))
    text = _MULTI_TAG.sub(" ", text)
    for match in _TAG.finditer(text):
        tag = match.group(1).strip("/")
        if tag and not tag.isdigit():
            found.append(tag)
    return list(dict.fromkeys(found))


def _frontmatter(meta: dict[str, Any], title: str, text: str, folder: str, ctx: ReadContext) -> dict[str, Any]:
    created = noteapp.day_of_iso(meta.get("creationDate"))
    updated = noteapp.day_of_iso(meta.get("modificationDate"))
    fm = noteapp.base_frontmatter(title, "bear", folder, created or updated, updated, ctx.now)
    listed = (
        [str(t) for t in meta.get("tags") or [] if isinstance(t, str)] if isinstance(meta.get("tags"), list) else []
    )
    fm["tags"] = list(dict.fromkeys(bear_tags(text) + listed))
    fm["pinned"] = True if meta.get("pinned") else None
    fm["archived"] = True if meta.get("archived") else None
    fm["encrypted"] = True if meta.get("encrypted") else None
    fm["bear_id"] = meta.get("uniqueIdentifier") if isinstance(meta.get("uniqueIdentifier"), str) else None
    return noteapp.trashed(fm) if meta.get("trashed") else fm
