"""Bear backups (`.bear2bk`): TextBundles to notes, Bear's metadata and tags to frontmatter, assets
beside with links rewritten, encrypted notes marked, a truncated backup one problem."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import yaml
from support.migration import Migrate, tree_hashes
from support.wikilinks import unresolved

from dory.migrate.formats.bear import bear_tags
from dory.models import LinkLintRequest, Scope, SearchRequest
from dory.service import DoryService

JPEG = b"\xff\xd8\xff\xe0 acorn"
PDF = b"%PDF-1.4 map"


def _info(**meta: object) -> str:
    bear = {
        "creationDate": "2023-10-11T05:43:33Z",
        "modificationDate": "2023-11-02T08:09:57Z",
        "uniqueIdentifier": "ID-" + str(meta.pop("id", "1")),
        "pinned": 0,
        "archived": 0,
        "trashed": 0,
    }
    return json.dumps({"type": "net.daringfireball.markdown", "version": 2, "net.shinyfrog.bear": bear | meta})


def _read(path: Path) -> tuple[dict[str, object], str]:
    _, head, body = path.read_text("utf-8").split("---\n", 2)
    return yaml.safe_load(head), body.strip("\n")


def _backup(path: Path) -> Path:
    top = "Bear Notes 2024-01-01 at 10.00.bear2bk/"
    with zipfile.ZipFile(path, "w") as z:
        b = top + "Acorns.textbundle/"
        z.writestr(b + "info.json", _info(id="A", pinned=1))
        z.writestr(
            b + "text.md",
            "# Acorns\n\nOak seeds, see #botany/trees and #field work# here.\n\n"
            "![](assets/acorn%20big.jpeg)\n\n[the map](assets/map.pdf)\n\n```\n#not-a-tag in code\n```\n",
        )
        z.writestr(b + "assets/acorn big.jpeg", JPEG)
        z.writestr(b + "assets/map.pdf", PDF)
        z.writestr(b + "assets/unlinked.jpeg", JPEG + b"2")
        z.writestr(top + "Old.textbundle/info.json", _info(id="B", archived=1))
        z.writestr(top + "Old.textbundle/text.md", "# Old\nkept for later #archive")
        z.writestr(top + "Bin.textbundle/info.json", _info(id="C", trashed=1))
        z.writestr(top + "Bin.textbundle/text.md", "# Bin\nthrown away")
        z.writestr(
            top + "Secret.textbundle/info.json", _info(id="D", encrypted=1, title="Secret", encryptedData="QUJD")
        )
        z.writestr(top + "Secret.textbundle/text.md", "")
        z.writestr(top + "Plain.textbundle/info.json", "{not json")
        z.writestr(top + "Plain.textbundle/text.md", "# Plain\nno metadata")
        z.writestr(top + "tags.json", json.dumps({"tags": [{"title": "botany"}]}))
    return path


def test_bear_tags_in_the_forms_bear_writes() -> None:
    text = (
        "# Heading is not a tag\n#one #nested/tag/ #two words# #with-dash, #中文，标签 #bad!tag\n"
        "url http://x.org/#frag and a#b and #123 and `#code` here\n```\n#fenced\n```\n#last"
    )
    assert bear_tags(text) == ["two words", "one", "nested/tag", "with-dash", "中文", "bad", "last"]


def test_a_backup_becomes_notes_with_metadata_tags_and_assets(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    res = migrate(_backup(tmp_path / "Notes.bear2bk"))
    assert res.format == "bear" and res.into == "knowledge/notes"
    assert res.items == {"note": 5, "attachment": 3}
    assert [(p.source, p.code) for p in res.problems] == [
        ("Bear Notes 2024-01-01 at 10.00.bear2bk/Plain.textbundle/info.json", "bad_json")
    ]
    base = corpus / "knowledge/notes"
    fm, body = _read(base / "Acorns.md")
    assert (fm["source"], fm["source_kind"], fm["bear_id"], fm["pinned"]) == ("bear", "imported", "ID-A", True)
    assert (str(fm["created"]), str(fm["updated"])) == ("2023-10-11", "2023-11-02")
    assert fm["tags"] == ["field work", "botany/trees"]
    files = "knowledge/notes/attachments/Acorns"
    assert body == (
        "# Acorns\n\nOak seeds, see #botany/trees and #field work# here.\n\n"
        f"![[{files}/acorn big.jpeg]]\n\n[[{files}/map.pdf|the map]]\n\n```\n#not-a-tag in code\n```"
        f"\n\nAttachments:\n\n- ![[{files}/unlinked.jpeg]]"
    )
    assert (corpus / files / "acorn big.jpeg").read_bytes() == JPEG
    assert (corpus / files / "map.pdf").read_bytes() == PDF

    assert _read(base / "Old.md")[0]["archived"] is True
    fm, body = _read(base / "Trash/Bin.md")
    assert fm["trashed"] is True and fm["status"] == "superseded" and body == "# Bin\nthrown away"
    fm, body = _read(base / "Secret.md")
    assert fm["encrypted"] is True and fm["title"] == "Secret"
    assert body.startswith("**Encrypted in Bear**") and body.endswith("```bear-encrypted\nQUJD\n```")
    fm, body = _read(base / "Plain.md")  # unreadable metadata: the text is imported all the same
    assert body == "# Plain\nno metadata" and "bear_id" not in fm

    hits = service.search(SearchRequest(query="oak seeds", mode="bm25", scope=Scope(tags=["botany/trees"]))).hits
    assert [h.path for h in hits] == ["knowledge/notes/Acorns.md"]


def test_an_asset_whose_name_is_taken_moves_and_its_link_follows(
    tmp_path: Path, corpus: Path, migrate: Migrate
) -> None:
    mine = corpus / "knowledge/notes/attachments/Acorns/map.pdf"
    mine.parent.mkdir(parents=True)
    mine.write_bytes(b"my own map")
    res = migrate(_backup(tmp_path / "Notes.bear2bk"))
    assert [(c.wanted, c.used) for c in res.clashes] == [
        (mine.relative_to(corpus).as_posix(), "knowledge/notes/attachments/Acorns/map (2).pdf")
    ]
    assert mine.read_bytes() == b"my own map"
    assert (mine.parent / "map (2).pdf").read_bytes() == PDF
    assert (
        "[[knowledge/notes/attachments/Acorns/map (2).pdf|the map]]" in _read(corpus / "knowledge/notes/Acorns.md")[1]
    )


def test_a_truncated_backup_is_one_problem_and_the_others_are_imported(
    tmp_path: Path, corpus: Path, migrate: Migrate
) -> None:
    src = tmp_path / "backups"
    src.mkdir()
    good = _backup(src / "good.bear2bk")
    (src / "truncated.bear2bk").write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    res = migrate(src)
    assert res.format == "bear"
    assert sorted((p.source, p.code) for p in res.problems) == [
        ("good.bear2bk!/Bear Notes 2024-01-01 at 10.00.bear2bk/Plain.textbundle/info.json", "bad_json"),
        ("truncated.bear2bk", "bad_zip"),
    ]
    assert res.items == {"note": 5, "attachment": 3}
    assert (corpus / "knowledge/backups/Acorns.md").is_file()


def test_real_bear_samples(samples: Path, corpus: Path, migrate: Migrate, service: DoryService) -> None:
    src = samples / "bear/obsidian-importer"
    res = migrate(src)
    assert res.format == "bear" and res.problems == []
    assert res.items == {"note": 8, "attachment": 1}
    base = corpus / "knowledge/obsidian-importer"
    names = sorted(p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file())
    assert names == [
        "2023-10-11T081102Z.md",
        "Archived File.md",
        "Encrypted File.md",
        "File with asset, content, and a tag.md",
        "File with heading only, no content.md",
        "Tag forms Bear writes.md",
        "Tags in other scripts.md",
        "Trash/Trashed file.md",
        "attachments/File with asset, content, and a tag/acorn.jpeg",
    ]
    fm, body = _read(base / "File with asset, content, and a tag.md")
    assert fm["tags"] == ["Test-Tag"] and str(fm["created"]) == "2023-10-11"
    assert body.endswith("![[knowledge/obsidian-importer/attachments/File with asset, content, and a tag/acorn.jpeg]]")
    assert _read(base / "Tag forms Bear writes.md")[0]["tags"] == ["two words", "项目 计划", "中文", "bad"]
    tags = _read(base / "Tags in other scripts.md")[0]["tags"]
    assert tags == ["中文", "标签/子标签", "仕事", "일정", "Ελλάδα", "русский"]
    fm, body = _read(base / "Encrypted File.md")
    assert fm["encrypted"] is True and "```bear-encrypted\nAAEBQAwAAAAQ" in body
    assert _read(base / "Trash/Trashed file.md")[0]["trashed"] is True
    assert _read(base / "2023-10-11T081102Z.md")[1].endswith(
        "Has no file heading, only content in the body of the file"
    )

    hits = service.search(SearchRequest(query="heading content body", mode="bm25")).hits
    assert "knowledge/obsidian-importer/2023-10-11T081102Z.md" in [h.path for h in hits]
    assert service.link_lint(LinkLintRequest()).broken_total == 0
    assert unresolved(corpus, "knowledge") == []  # every attachment link finds its file

    before = tree_hashes(corpus)
    again = migrate(src)
    assert again.run is None and again.created == 0 and again.skipped_unchanged == 9
    assert tree_hashes(corpus) == before
