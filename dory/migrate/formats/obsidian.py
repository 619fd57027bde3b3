"""Obsidian vaults: a folder of markdown notes linked by `[[wikilinks]]` and `![[embeds]]`, with
attachments anywhere in it and a `.obsidian/` settings folder (its signature; never imported).

Decisions:
- Notes are copied as written, frontmatter included (aliases, tags and `[[wikilink]]` values kept as
  Obsidian wrote them), to their relative path in the vault under the destination folder
  (`knowledge/<vault name>` by default). Only links that would not find their target after the
  import are rewritten (obsidian_links.py says how Obsidian finds them):
  - a link to a note is rewritten to the note's full corpus path only when Dory would not reach that
    note from what is written (the file got a safe name, cut to 120 bytes, or its name met another
    file's and took a ` (2)` suffix, or another note would win the name);
  - a link or embed of an attachment (image, PDF, `.base`, `.canvas`, any file that is not a note)
    always points at the copied file by its full corpus path, so it renders wherever the corpus is
    opened (Obsidian finds attachments by bare file name; Dory does not index attachment links);
  - a markdown link `[x](path)` is rewritten when the relative path to its target changed;
  - a link to something the vault does not hold stays as written (Obsidian shows it as a note not
    yet created; it is broken in the vault itself).
- `.base` (Obsidian Bases) and `.canvas` files are copied unchanged as attachments: embeds of them
  (`![[X.base#View]]`) keep working in Obsidian, and Dory's link graph counts attachments neither
  as notes nor as broken links.
- A note whose frontmatter is not valid YAML (templates with `{{date}}` placeholders are) is copied as
  written too, and reported as `bad_frontmatter`: the index reads such a note whole, as Obsidian shows it.
- Every other file goes through the generic reader (attachments copied, JSON/CSV/… as evidence,
  the rest reported as `unknown_format`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from dory.corpus.document import ReadProblem, parse_document
from dory.migrate.formats.generic import EVIDENCE, MARKDOWN, read_file, target_path
from dory.migrate.formats.obsidian_links import LINK, VaultLinks
from dory.migrate.formats.prose import substitute
from dory.migrate.model import Item, ItemProblem, Output, ReadContext, SourceFile, SourceTreeLike, Yielded, digest_of
from dory.migrate.names import with_suffix
from dory.migrate.text import NotText, decode

SETTINGS = ".obsidian"
KEPT_AS_ATTACHMENTS = ("base", "canvas")  # Obsidian's own file types: copied, embeds point at them


class ObsidianReader:
    name = "obsidian"
    folder = "knowledge"

    def detect(self, tree: SourceTreeLike) -> int:
        return 20 if vault_root(tree) is not None else 0

    def read(self, tree: SourceTreeLike, ctx: ReadContext) -> Iterator[Yielded]:
        root = vault_root(tree) or ""
        vault = VaultLinks(_proposed(tree, root, ctx.into))
        for file in tree.files():
            rel = file.rel.removeprefix(root)
            if file.suffix in MARKDOWN:
                yield from _note(file, rel, vault)
            elif file.suffix in KEPT_AS_ATTACHMENTS:
                yield _kept(file, vault.proposed[rel])
            else:
                found = read_file(file if rel == file.rel else SourceFile(rel, file.size, file.opener), ctx.into, ctx)
                yield _moved(found, vault.proposed[rel])


def vault_root(tree: SourceTreeLike) -> str | None:
    """The folder holding the vault's `.obsidian/` (`""` at the top, `Vault/` inside a wrapping
    folder), or None when the tree is no vault. The shallowest one wins."""
    roots = sorted(
        (path[: -len(SETTINGS)] for path in tree.hidden_dirs if posixpath.basename(path) == SETTINGS),
        key=lambda root: (root.count("/"), root),
    )
    return roots[0] if roots else None


def _proposed(tree: SourceTreeLike, root: str, into: str) -> dict[str, str]:
    """Vault path → the corpus path its copy is proposed at, for every file a link can point to.
    Two files whose safe names meet (`What?.md`, `What*.md`) get distinct paths here, so that a
    link to either has a path of its own to be written with."""
    found: dict[str, str] = {}
    taken: set[str] = set()
    for file in tree.files():
        rel = file.rel.removeprefix(root)
        if file.suffix in MARKDOWN:
            path = target_path(into, rel, ".md")
        elif file.suffix in EVIDENCE:
            path = target_path(into, rel, f".{file.suffix}.md")
        else:
            path = target_path(into, rel)
        n, free = 1, path
        while free.casefold() in taken:
            n += 1
            free = with_suffix(path, n)
        taken.add(free.casefold())
        found[rel] = free
    return found


def _kept(file: SourceFile, path: str) -> Yielded:
    try:
        data = file.read()
    except (OSError, ValueError) as exc:
        return ItemProblem(file.rel, "unreadable", str(exc))
    return Item(f"file:{file.rel}", "attachment", file.rel, digest_of(data), [Output(path, data, "attachment")])


def _moved(found: Yielded, path: str) -> Yielded:
    """A generic reader's item at the path the vault gave its file (the same, unless two met)."""
    if isinstance(found, ItemProblem) or [out.path for out in found.outputs] == [path]:
        return found
    found.outputs = [Output(path, out.data, out.role) for out in found.outputs]
    return found


def _note(file: SourceFile, rel: str, vault: VaultLinks) -> Iterator[Yielded]:
    try:
        data = file.read()
        text, how = decode(data)
        doc = parse_document(rel, text.encode("utf-8"))
    except (OSError, ValueError) as exc:
        code = "bad_encoding" if isinstance(exc, NotText) else "unreadable"
        yield ItemProblem(file.rel, code, str(exc))
        return
    except ReadProblem as exc:
        yield ItemProblem(file.rel, "bad_encoding", exc.detail)
        return
    if doc.frontmatter_error is not None:  # indexed as written, like the vault shows it
        yield ItemProblem(file.rel, "bad_frontmatter", f"imported as written; {doc.frontmatter_error}")
    lines = text.split("\n")
    source = vault.proposed[rel]
    rewritten = substitute(lines, doc.body_start, LINK, lambda match: vault.rewrite(match, rel, source))
    unchanged = rewritten == lines and how is None and not data.startswith(b"\xef\xbb\xbf")
    body = data if unchanged else "\n".join(rewritten).encode("utf-8")
    yield Item(f"file:{file.rel}", "note", file.rel, digest_of(data), [Output(source, body, "note")], note=how or "")
