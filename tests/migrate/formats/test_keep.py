"""Google Keep (Takeout JSON): titles, checklists, labels, flags, dates, attachments found or
named as missing, the HTML twin skipped, odd names made safe, broken JSON one problem each."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import yaml
from support.migration import Migrate, tree_hashes
from support.wikilinks import unresolved

from dory.models import LinkLintRequest, Scope, SearchRequest
from dory.service import DoryService

PNG = bytes.fromhex("89504e470d0a1a0a") + b"drawing"
# 2023-07-26T10:38:12Z and 2023-08-01T04:35:08Z, in microseconds as Keep writes them
CREATED, EDITED = 1690367892000000, 1690864508000000


def _keep_note(**fields: object) -> str:
    note: dict[str, object] = {
        "color": "DEFAULT",
        "isTrashed": False,
        "isPinned": False,
        "isArchived": False,
        "title": "",
        "createdTimestampUsec": CREATED,
        "userEditedTimestampUsec": EDITED,
    }
    return json.dumps(note | fields)


def _read(path: Path) -> tuple[dict[str, object], str]:
    _, head, body = path.read_text("utf-8").split("---\n", 2)
    return yaml.safe_load(head), body.strip("\n")


def _takeout(tmp_path: Path) -> Path:
    """A Takeout zip as Google writes it: each note as JSON and HTML, attachments beside."""
    src = tmp_path / "takeout-20240101.zip"
    with zipfile.ZipFile(src, "w") as z:
        keep = "Takeout/Keep/"
        z.writestr(
            keep + "Shopping.json",
            _keep_note(
                title="Shopping",
                isPinned=True,
                color="YELLOW",
                listContent=[{"text": "oat milk", "isChecked": True}, {"text": "rye\nbread", "isChecked": False}],
                labels=[{"name": "home"}, {"name": "to buy"}],
            ),
        )
        z.writestr(keep + "Shopping.html", "<html><body><div class='title'>Shopping</div></body></html>")
        z.writestr(
            keep + "Heron sighting.json",
            _keep_note(
                title="Heron sighting",
                textContent="A grey heron by the canal.\nSecond line.",
                isArchived=True,
                attachments=[
                    {"filePath": "1690514441523.1361766539.jpeg", "mimetype": "image/jpeg"},
                    {"filePath": "gone.3gp", "mimetype": "audio/3gp"},
                ],
                annotations=[{"source": "WEBLINK", "title": "Herons [UK]", "url": "https://example.org/herons"}],
                sharees=[{"email": "bob@example.org", "isOwner": False}],
            ),
        )
        z.writestr(keep + "1690514441523.1361766539.jpg", PNG)  # Takeout renamed .jpeg to .jpg
        z.writestr(keep + "2023-08-01T14_29_43.842+10_00.json", _keep_note(textContent="", listContent=[]))
        z.writestr(
            keep + "Old note.html",
            "<html><head><title>Old</title></head><body><p>from an old <b>Takeout</b></p></body></html>",
        )
        z.writestr(keep + "Gone.json", _keep_note(title="Gone", textContent="thrown away", isTrashed=True))
        z.writestr(keep + "Labels.txt", "home\nto buy\n")
    return src


def test_a_takeout_zip_becomes_notes_with_their_flags_and_attachments(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    res = migrate(_takeout(tmp_path))
    assert res.format == "keep" and res.into == "knowledge/takeout-20240101" and res.problems == []
    assert res.items == {"note": 5, "attachment": 1, "evidence": 1}  # Labels.txt as evidence
    base = corpus / "knowledge/takeout-20240101"

    fm, body = _read(base / "Shopping.md")
    assert (fm["source"], fm["source_kind"], fm["source_path"]) == ("keep", "imported", "Takeout/Keep/Shopping.json")
    assert fm["pinned"] is True and fm["color"] == "yellow" and fm["tags"] == ["home", "to buy"]
    assert (str(fm["created"]), str(fm["updated"])) == ("2023-07-26", "2023-08-01")
    assert body == "- [x] oat milk\n- [ ] rye\n  bread"

    fm, body = _read(base / "Heron sighting.md")
    assert fm["archived"] is True and fm["shared_with"] == ["bob@example.org"] and "trashed" not in fm
    image = "knowledge/takeout-20240101/attachments/Heron sighting/1690514441523.1361766539.jpg"
    assert body == (
        "A grey heron by the canal.\nSecond line.\n\nLinks:\n\n- [Herons (UK)](<https://example.org/herons>)"
        f"\n\n![[{image}]]\n\nAttachment not in the export: `gone.3gp` (audio/3gp)"
    )
    assert (corpus / image).read_bytes() == PNG

    fm, _ = _read(base / "2023-08-01T14_29_43.842+10_00.md")  # untitled and empty: named by its file
    assert fm["title"] == "2023-08-01T14_29_43.842+10_00"
    fm, body = _read(base / "Trash/Gone.md")
    assert fm["trashed"] is True and fm["status"] == "superseded" and body == "thrown away"
    _, body = _read(base / "Old note.md")  # an HTML-only note from an older Takeout
    assert body == "from an old **Takeout**"
    assert not (base / "Shopping (2).md").exists()  # the HTML twin of a JSON note is not a second note

    hits = service.search(SearchRequest(query="heron canal", mode="bm25")).hits
    notes = [h.path for h in hits if not h.path.startswith("references/reports/")]  # the report names the note
    assert notes == ["knowledge/takeout-20240101/Heron sighting.md"]
    hits = service.search(SearchRequest(query="milk", mode="bm25", scope=Scope(tags=["to buy"]))).hits
    assert [h.path for h in hits] == ["knowledge/takeout-20240101/Shopping.md"]


def test_broken_notes_are_one_problem_each_and_the_rest_is_imported(
    tmp_path: Path, corpus: Path, migrate: Migrate
) -> None:
    keep = tmp_path / "export/Takeout/Keep"
    keep.mkdir(parents=True)
    (keep / "good.json").write_text(_keep_note(title="Good", textContent="a curlew"))
    (keep / "list.json").write_text('[{"title": "not a note"}]')
    (keep / "broken.json").write_text('{"title": "Broken", "textContent": ')
    (keep / "other.json").write_text('{"unrelated": 1}')
    (keep / "weird.json").write_text(
        _keep_note(title=["not", "text"], textContent=None, labels="x", attachments={"a": 1})
    )
    res = migrate(tmp_path / "export")
    assert res.format == "keep"
    assert sorted((p.source, p.code) for p in res.problems) == [
        ("Takeout/Keep/broken.json", "bad_json"),
        ("Takeout/Keep/list.json", "not_a_note"),
        ("Takeout/Keep/other.json", "not_a_note"),
    ]
    assert res.items == {"note": 2}
    assert _read(corpus / "knowledge/export/Good.md")[1] == "a curlew"
    assert _read(corpus / "knowledge/export/weird.md")[0]["title"] == "weird"  # fields of the wrong type are ignored


def test_real_keep_samples(samples: Path, corpus: Path, migrate: Migrate, service: DoryService) -> None:
    src = samples / "google-keep/obsidian-importer"
    res = migrate(src)
    assert res.format == "keep" and res.problems == []
    assert res.items == {"note": 13}  # the images and recording they name are not in the sample
    base = corpus / "knowledge/obsidian-importer"
    names = sorted(p.relative_to(base).as_posix() for p in base.rglob("*.md"))
    assert len(names) == 13 and "Trash/Deleted note.md" in names
    odd = [n for n in names if n.startswith("Invalid title")]
    assert odd == ["Invalid title characters note !@ $% & ()_+~`{} ; ' ',. -+.md"]
    fm, _ = _read(base / odd[0])
    assert fm["title"] == "Invalid title characters note !@#$%^&*()_+~`{}[]\\|;:'<>',./?/*-+"

    fm, body = _read(base / "Checklist note.md")
    assert fm["tags"] == ["labelWith!'@:$\"Symbols"] and str(fm["created"]) == "2023-07-26"
    assert body.splitlines() == [
        "- [ ] First item",
        "- [ ] Second item and #hashtag",
        "- [ ] First sub-item",
        "- [ ] Second sub-item and #labelWith!'@:$\"Symbols",
        "- [ ] Third item",
    ]
    assert _read(base / "Pinned text note.md")[0]["pinned"] is True
    assert _read(base / "Archived note.md")[0]["archived"] is True
    assert _read(base / "Background colour note.md")[0]["color"] == "red"
    assert _read(base / "Trash/Deleted note.md")[0]["status"] == "superseded"
    assert len(_read(base / "Labelled note.md")[0]["tags"]) == 6  # type: ignore[arg-type]
    fm, body = _read(base / "This note has a drawing but no title.md")
    assert fm["source_path"] == "Takeout/Keep/2023-08-01T14_29_43.842+10_00.json"
    assert "Attachment not in the export: `1690514441523.1361766539.png` (image/png)" in body
    assert _read(base / "Multiline title note Second line.md")[0]["title"] == "Multiline title note Second line"

    hits = service.search(SearchRequest(query="pinned simple text", mode="bm25")).hits
    assert hits[0].path == "knowledge/obsidian-importer/Pinned text note.md"
    assert service.link_lint(LinkLintRequest()).broken_total == 0
    assert unresolved(corpus, "knowledge") == []  # every attachment link finds its file

    before = tree_hashes(corpus)
    again = migrate(src)
    assert again.run is None and again.created == 0 and again.skipped_unchanged == 13
    assert tree_hashes(corpus) == before
