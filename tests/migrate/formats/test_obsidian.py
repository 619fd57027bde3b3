"""The Obsidian reader: a vault found by its `.obsidian/` folder (in a folder or a zip), notes copied
as written, only the links that would not resolve rewritten, attachments and Bases copied beside,
hostile notes reported one by one; and the real kepano vault, whose links resolve after import."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from support.migration import Migrate, tree_hashes
from support.migration_links import attachment_links, note_links

from dory.models import LinkLintRequest, SearchRequest
from dory.service import DoryService

PNG = b"\x89PNG\r\n\x1a\n\x00\x00fake"
HOME = """---
aliases:
  - Start
tags:
  - hub
related: "[[Plan]]"
cover: "[[photo.png]]"
---
# Home

See [[Plan]], [[Plan|the plan]] and [[Plan#Goals]]; also [[Same]] and [[Missing note]].
![[photo.png]]
![[photo.png|300]]
![[Board.base#Table]] and ![[Map.canvas]]
A [report](Attachments/report.pdf) and [the plan](Projects/Plan.md).
| a | [[Plan\\|p]] |
`[[photo.png]]` stays code.
```
![[photo.png]]
```
"""
HOME_AFTER = """---
aliases:
  - Start
tags:
  - hub
related: "[[Plan]]"
cover: "[[photo.png]]"
---
# Home

See [[Plan]], [[Plan|the plan]] and [[Plan#Goals]]; also [[Same]] and [[Missing note]].
![[knowledge/vault/Attachments/photo.png]]
![[knowledge/vault/Attachments/photo.png|300]]
![[knowledge/vault/Bases/Board.base#Table]] and ![[knowledge/vault/Map.canvas]]
A [report](Attachments/report.pdf) and [the plan](Projects/Plan.md).
| a | [[Plan\\|p]] |
`[[photo.png]]` stays code.
```
![[photo.png]]
```
"""


def _vault(tmp_path: Path) -> Path:
    src = tmp_path / "vault"
    files: dict[str, bytes] = {
        ".obsidian/app.json": b"{}",
        ".trash/Old.md": b"deleted note",
        "Home.md": HOME.encode(),
        "Projects/Plan.md": b"# Plan\n\n## Goals\n\nShip it. Back to [[Home]].\n",
        "A/Same.md": b"the shorter one\n",
        "B/Deeper/Same.md": b"the deeper one\n",
        "Attachments/photo.png": PNG,
        "Attachments/report.pdf": b"%PDF-1.4 fake",
        "Bases/Board.base": b"views:\n  - type: table\n    name: Table\n",
        "Map.canvas": b'{"nodes": [], "edges": []}',
        "Broken.md": b"---\ntags: [a\n---\nbody links [[Plan]]\n",
        "Latin.md": "caf\u00e9 cr\u00e8me, see [[Plan]]\n".encode("cp1252"),
        "Bin.md": b"\x00\x01\x02 not text",
        "LICENSE": b"MIT",
    }
    for rel, data in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(data)
    return src


def test_vault_notes_are_copied_and_only_attachment_links_change(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    src = _vault(tmp_path)
    res = migrate(src)
    assert (res.format, res.into) == ("obsidian", "knowledge/vault")
    assert res.items == {"note": 6, "attachment": 4, "evidence": 1}  # LICENSE: text without an extension
    assert sorted((p.source, p.code) for p in res.problems) == [
        ("Bin.md", "bad_encoding"),
        ("Broken.md", "bad_frontmatter"),
    ]
    out = corpus / "knowledge/vault"
    assert (out / "Home.md").read_text() == HOME_AFTER
    for rel in ("Projects/Plan.md", "A/Same.md", "Broken.md", "Attachments/photo.png", "Bases/Board.base"):
        assert (out / rel).read_bytes() == (src / rel).read_bytes(), rel
    assert (out / "Latin.md").read_text("utf-8") == "caf\u00e9 cr\u00e8me, see [[Plan]]\n"
    assert not list(corpus.rglob(".obsidian")) and not list(corpus.rglob("Old.md"))

    links = note_links(service, "knowledge/vault/")
    assert links.broken_targets == {"Missing note": 1}
    # Home: Plan x3, Same, the table's Plan, the markdown link to Plan; Plan: Home; Broken (read
    # whole, frontmatter included) and Latin: Plan.
    assert links.resolved == 9
    attachments = attachment_links(corpus, "knowledge/vault/")
    assert (attachments.resolved, attachments.broken) == (5, 0)
    lint = service.link_lint(LinkLintRequest(max_items=1000))
    assert [(b.source, b.target) for b in lint.broken] == [("knowledge/vault/Home.md", "Missing note")]
    hits = service.search(SearchRequest(query="crème", mode="bm25")).hits
    assert [h.path for h in hits] == ["knowledge/vault/Latin.md"]

    before = tree_hashes(corpus)
    again = migrate(src)
    assert again.run is None and again.created == 0 and again.skipped_unchanged == 11
    assert tree_hashes(corpus) == before


def test_a_zipped_vault_in_a_folder_with_a_300_byte_note_name(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    long_name = "Ω" * 150  # 300 bytes of UTF-8: over every file system's name limit
    archive = tmp_path / "My Vault.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("My Vault/.obsidian/app.json", "{}")
        zf.writestr(f"My Vault/Notes/{long_name}.md", "the long one\n")
        zf.writestr(f"My Vault/{long_name}.png", PNG)
        zf.writestr("My Vault/Index.md", f"[[{long_name}]] and [[{long_name}#Part|part]] ![[{long_name}.png]]\n")
    res = migrate(archive)
    assert (res.format, res.into, res.items, res.problems) == (
        "obsidian",
        "knowledge/my-vault",
        {"note": 2, "attachment": 1},
        [],
    )
    short = "Ω" * 58  # cut before the extension, the whole name at most 120 bytes
    assert (corpus / f"knowledge/my-vault/Notes/{short}.md").read_text() == "the long one\n"
    assert (corpus / f"knowledge/my-vault/{short}.png").read_bytes() == PNG
    target = f"knowledge/my-vault/Notes/{short}"
    assert (corpus / "knowledge/my-vault/Index.md").read_text() == (
        f"[[{target}|{long_name}]] and [[{target}#Part|part]] ![[knowledge/my-vault/{short}.png]]\n"
    )
    links = note_links(service, "knowledge/my-vault/")
    assert (links.resolved, links.broken) == (2, 0)


def test_two_notes_whose_safe_names_meet_keep_their_own_links(tmp_path: Path, corpus: Path, migrate: Migrate) -> None:
    src = tmp_path / "v"
    (src / ".obsidian").mkdir(parents=True)
    (src / "What?.md").write_text("first\n")
    (src / "What*.md").write_text("second\n")
    (src / "Links.md").write_text("[[What?]] [[What*]]\n")
    res = migrate(src)
    assert res.clashes == [] and res.problems == []
    assert (corpus / "knowledge/v/What (2).md").read_text() == "first\n"  # `*` sorts before `?`
    assert (corpus / "knowledge/v/What.md").read_text() == "second\n"
    assert (
        corpus / "knowledge/v/Links.md"
    ).read_text() == "[[knowledge/v/What (2)|What?]] [[knowledge/v/What|What*]]\n"


def test_obsidian_is_not_claimed_without_its_settings_folder(tmp_path: Path, migrate: Migrate) -> None:
    src = tmp_path / "plain"
    src.mkdir()
    (src / "a.md").write_text("[[b]]\n")
    assert migrate(src, dry_run=True).format == "generic"


def test_kepano_vault_counts_in_a_dry_run(samples: Path, migrate: Migrate) -> None:
    res = migrate(samples / "obsidian/kepano-obsidian", dry_run=True)
    assert (res.format, res.into) == ("obsidian", "knowledge/kepano-obsidian")
    # 103 notes (98 + Templates), 1 image, 30 .base files; LICENSE is text evidence; the 28 templates
    # hold `{{date}}` placeholders, not YAML, in their frontmatter.
    assert res.items == {"note": 103, "attachment": 31, "evidence": 1}
    codes = [p.code for p in res.problems]
    assert codes.count("bad_frontmatter") == 28 and len(codes) == 28


@pytest.mark.slow
def test_kepano_vault_links_resolve_after_import(
    samples: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    src = samples / "obsidian/kepano-obsidian"
    res = migrate(src)
    assert res.created == 135
    links = note_links(service, "knowledge/kepano-obsidian/")
    vault_stems = {p.stem.lower() for p in src.rglob("*.md")}
    # Every broken link names a note the vault itself does not hold (Obsidian shows them as
    # "not created yet"); every link to a note it holds resolves.
    assert not [t for t in links.broken_targets if t.lower() in vault_stems]
    assert (links.resolved, links.broken) == (23, 22)
    embeds = attachment_links(corpus, "knowledge/kepano-obsidian/")
    assert (embeds.resolved, embeds.broken) == (61, 0)  # `![[X.base#View]]` embeds, all to the copies
    again = migrate(src)
    assert again.created == 0 and again.skipped_unchanged == 135
