"""Evernote `.enex`: ENML to markdown, attachments beside their note, metadata in the frontmatter,
hostile files (malformed XML, an entity bomb, broken base64) each one problem, the real samples."""

from __future__ import annotations

import base64
import hashlib
import io
from pathlib import Path

import yaml
from support.migration import Migrate, tree_hashes
from support.wikilinks import unresolved

from dory.migrate.formats.enex import read_notes
from dory.models import GetRequest, LinkLintRequest, Scope, SearchRequest
from dory.service import DoryService

PDF = b"%PDF-1.3 heron report\n%%EOF\n"
PNG = bytes.fromhex("89504e470d0a1a0a") + b"tiny png"


def _enex(*notes: str) -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<!DOCTYPE en-export SYSTEM "http://xml.evernote.com/pub/evernote-export4.dtd">\n'
        '<en-export export-date="20240101T000000Z" application="Evernote" version="10.70">\n'
        + "\n".join(notes)
        + "\n</en-export>\n"
    )


def _note(title: str, enml: str, extra: str = "", created: str = "20230102T030405Z") -> str:
    return (
        f"<note><title>{title}</title><created>{created}</created><updated>20230304T050607Z</updated>"
        f'<content><![CDATA[<?xml version="1.0" encoding="UTF-8"?>'
        f'<!DOCTYPE en-note SYSTEM "http://xml.evernote.com/pub/enml2.dtd"><en-note>{enml}</en-note>]]></content>'
        f"{extra}</note>"
    )


def _resource(data: bytes, mime: str, name: str | None) -> str:
    attrs = f"<resource-attributes><file-name>{name}</file-name></resource-attributes>" if name else ""
    b64 = base64.encodebytes(data).decode()
    return f'<resource><data encoding="base64">{b64}</data><mime>{mime}</mime>{attrs}</resource>'


def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def _read(path: Path) -> tuple[dict[str, object], str]:
    text = path.read_text("utf-8")
    _, head, body = text.split("---\n", 2)
    return yaml.safe_load(head), body.strip("\n")


RICH = (
    "<h1>Birds</h1><div>A <b>grey</b> heron and an <i>egret</i>.</div><div><br/></div>"
    "<ul><li>first</li><li>second<ul><li>nested</li></ul></li></ul><ol><li>one</li><li>two</li></ol>"
    '<div><en-todo checked="true"/>ring the warden</div><div><en-todo checked="false"/>count the nests</div>'
    "<table><tr><th>bird</th><th>count</th></tr><tr><td>heron</td><td>3 | 4</td></tr></table>"
    '<div>See <a href="https://example.org/herons">the survey</a>.</div>'
    f'<div><en-media hash="{_md5(PDF)}" type="application/pdf"/></div>'
    f'<en-media hash="{_md5(PNG)}" type="image/png"/>'
    '<en-crypt hint="the usual" cipher="AES" length="128">U2VjcmV0</en-crypt>'
    f'<img src="data:image/png;base64,{base64.b64encode(PNG + b"2").decode()}"/>'
)
ATTRIBUTES = (
    "<tag>birds</tag><tag>field work</tag><note-attributes><author>Ada</author>"
    "<source-url>https://example.org/clip</source-url><latitude>52.5</latitude><longitude>13.4</longitude>"
    "<reminder-time>20250101T090000Z</reminder-time><reminder-order>123</reminder-order>"
    '<application-data key="color">blue</application-data></note-attributes>'
)


def test_enml_becomes_markdown_with_attachments_and_metadata(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    src = tmp_path / "Field notes.enex"
    extra = ATTRIBUTES + _resource(PDF, "application/pdf", "survey.pdf") + _resource(PNG, "image/png", None)
    src.write_text(_enex(_note("Heron survey", RICH, extra)))

    res = migrate(src)
    assert res.format == "evernote" and res.into == "knowledge/field-notes"
    assert res.items == {"note": 1, "attachment": 3} and res.problems == []
    folder = corpus / "knowledge/field-notes"
    fm, body = _read(folder / "Heron survey.md")
    assert fm["title"] == "Heron survey" and fm["source_kind"] == "imported" and fm["source"] == "evernote"
    assert (str(fm["created"]), str(fm["updated"])) == ("2023-01-02", "2023-03-04")
    assert fm["tags"] == ["birds", "field work"] and fm["author"] == "Ada"
    assert fm["source_url"] == "https://example.org/clip" and fm["location"] == [52.5, 13.4]
    assert fm["reminder_time"] == "2025-01-01T09:00:00Z" and fm["evernote_app_data"] == {"color": "blue"}
    assert fm["encrypted_blocks"] == 1

    files = folder / "attachments/Heron survey"
    png_name, inline_name = _md5(PNG) + ".png", _md5(PNG + b"2") + ".png"  # Evernote's hash names them
    assert (files / "survey.pdf").read_bytes() == PDF
    assert (files / png_name).read_bytes() == PNG
    assert (files / inline_name).read_bytes() == PNG + b"2"
    link = "knowledge/field-notes/attachments/Heron survey"
    assert body == "\n\n".join(
        [
            "# Birds",
            "A **grey** heron and an *egret*.",
            "- first\n- second\n  - nested",
            "1. one\n2. two",
            "- [x] ring the warden\n- [ ] count the nests",
            "| bird | count |\n| --- | --- |\n| heron | 3 \\| 4 |",
            "See [the survey](https://example.org/herons).",
            f"[[{link}/survey.pdf|survey.pdf]]",
            f"![[{link}/{png_name}]]",
            "**Encrypted text** (Evernote; cipher AES, 128-bit key, hint: the usual): kept as exported, "
            "not decrypted.\n\n```evernote-encrypted\nU2VjcmV0\n```",
            f"![[{link}/{inline_name}]]",
            "Reminder: 2025-01-01T09:00:00Z",
        ]
    )
    hits = service.search(SearchRequest(query="heron egret", mode="bm25", scope=Scope(tags=["field work"]))).hits
    assert [h.path for h in hits] == ["knowledge/field-notes/Heron survey.md"]


def test_tasks_take_their_group_place_and_unlinked_resources_are_listed(
    tmp_path: Path, corpus: Path, migrate: Migrate
) -> None:
    group = '<div style="--en-task-group:true; --en-id:g1;"><div>Content not supported</div></div>'
    tasks = (
        "<task><title>Call Bob</title><taskStatus>open</taskStatus><taskFlag>true</taskFlag>"
        "<taskGroupNoteLevelID>g1</taskGroupNoteLevelID><dueDate>20220528T215959Z</dueDate></task>"
        "<task><title>Done already</title><taskStatus>completed</taskStatus>"
        "<taskGroupNoteLevelID>g1</taskGroupNoteLevelID><reminder><reminderDate>20220522T070000Z</reminderDate>"
        "</reminder></task><task><title>Elsewhere</title><taskStatus>open</taskStatus></task>"
    )
    src = tmp_path / "todo.enex"
    src.write_text(
        _enex(
            _note("Todo", f"<div>before</div>{group}<div>after</div>", tasks + _resource(PDF, "application/pdf", None))
        )
    )
    migrate(src)
    _, body = _read(corpus / "knowledge/todo/Todo.md")
    pdf = _md5(PDF) + ".pdf"
    assert body == (
        "before\n\n- [ ] Call Bob (due 2022-05-28T21:59:59Z, flagged)"
        "\n- [x] Done already (reminder 2022-05-22T07:00:00Z)"
        f"\n\nafter\n\nAttachments:\n\n- [[knowledge/todo/attachments/Todo/{pdf}|{pdf}]]"
        "\n\nTasks:\n\n- [ ] Elsewhere"
    )


def test_notebooks_become_folders_and_alike_titles_keep_their_own_attachments(
    tmp_path: Path, corpus: Path, migrate: Migrate
) -> None:
    src = tmp_path / "export"
    src.mkdir()
    first = _note("Same", f'<en-media hash="{_md5(PNG)}" type="image/png"/>', _resource(PNG, "image/png", "a.png"))
    second = _note(
        "Same",
        f'<en-media hash="{_md5(PDF)}" type="image/png"/>',
        _resource(PDF, "image/png", "a.png"),
        "20230105T000000Z",
    )
    (src / "Travel.enex").write_text(_enex(first, second))
    (src / "Work.enex").write_text(_enex(_note("Plan", "<div>the plan</div>")))
    res = migrate(src)
    assert res.items == {"note": 3, "attachment": 2}
    travel = corpus / "knowledge/export/Travel"
    assert _read(travel / "Same.md")[1] == "![[knowledge/export/Travel/attachments/Same/a.png]]"
    assert _read(travel / "Same (2).md")[1] == "![[knowledge/export/Travel/attachments/Same (2)/a.png]]"
    assert (travel / "attachments/Same/a.png").read_bytes() == PNG
    assert (travel / "attachments/Same (2)/a.png").read_bytes() == PDF
    assert _read(corpus / "knowledge/export/Work/Plan.md")[0]["notebook"] == "Work"


BOMB = (
    '<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n'
    + "".join(
        f' <!ENTITY lol{n} "{("&lol" + str(n - 1) + ";") * 10 if n > 1 else "&lol;" * 10}">\n' for n in range(1, 10)
    )
    + "]>\n<en-export><note><title>&lol9;</title><content>x</content></note></en-export>\n"
)
EXTERNAL = (
    '<?xml version="1.0"?>\n<!DOCTYPE x [ <!ENTITY secret SYSTEM "file:///etc/passwd"> ]>\n'
    "<en-export><note><title>&secret;</title><content>x</content></note></en-export>\n"
)


def test_hostile_files_are_one_problem_each_and_the_rest_is_imported(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    src = tmp_path / "hostile"
    src.mkdir()
    (src / "a-good.enex").write_text(_enex(_note("Kingfisher", "<div>a blue kingfisher</div>")))
    broken = _enex(_note("Before the break", "<div>salvaged plover</div>"), "<note><title>Cut")[:-15]
    (src / "b-broken.enex").write_text(broken)
    (src / "c-bomb.enex").write_text(BOMB)
    (src / "d-external.enex").write_text(EXTERNAL)
    bad = '<resource><data encoding="base64">not*base64!</data><mime>application/pdf</mime>'
    bad += "<resource-attributes><file-name>scan.pdf</file-name></resource-attributes></resource>"
    (src / "e-bad64.enex").write_text(_enex(_note("Scan", '<en-media hash="00" type="application/pdf"/>', bad)))

    res = migrate(src)
    assert [(p.source, p.code) for p in res.problems] == [
        ("b-broken.enex", "bad_xml"),
        ("c-bomb.enex", "xml_entities_refused"),
        ("d-external.enex", "xml_entities_refused"),
        ("e-bad64.enex#Scan", "bad_attachment"),
    ]
    assert res.items == {"note": 3}
    notes = sorted(
        p.relative_to(corpus / "knowledge/hostile").as_posix() for p in (corpus / "knowledge/hostile").rglob("*.md")
    )
    assert notes == ["a-good/Kingfisher.md", "b-broken/Before the break.md", "e-bad64/Scan.md"]
    assert _read(corpus / "knowledge/hostile/e-bad64/Scan.md")[1] == "(attachment not in the export: application/pdf)"
    assert "lol" not in "".join(p.read_text() for p in corpus.rglob("*.md") if "hostile" in p.as_posix())
    assert {h.path for h in service.search(SearchRequest(query="plover", mode="bm25")).hits} == {
        "knowledge/hostile/b-broken/Before the break.md"
    }


def test_an_enex_is_read_a_note_at_a_time() -> None:
    """The first note is handed on long before the end of a large file is read."""
    body = "<div>" + "wader " * 2000 + "</div>"
    data = _enex(*[_note(f"Note {n}", body) for n in range(300)]).encode()

    class Counting(io.BytesIO):
        read_so_far = 0

        def read(self, size: int | None = -1) -> bytes:
            chunk = super().read(size)
            self.read_so_far += len(chunk)
            return chunk

    stream = Counting(data)
    notes = read_notes(stream)
    first = next(notes)
    assert first.title == "Note 0" and stream.read_so_far < len(data) // 20
    assert sum(1 for _ in notes) == 299


def test_real_evernote_samples(samples: Path, corpus: Path, migrate: Migrate, service: DoryService) -> None:
    src = samples / "evernote/obsidian-importer"
    res = migrate(src)
    assert res.format == "evernote" and res.problems == []
    assert res.items == {"note": 8, "attachment": 6}  # photo.png, sample.pdf, and 4 data-URL images
    base = corpus / "knowledge/obsidian-importer"
    fm, body = _read(base / "test-noteWithTags/test -note with text only.md")
    assert fm["tags"] == ["tag1", "tag2"] and str(fm["created"]) == "2018-10-06" and body == "This is the content"
    fm, body = _read(base / "test-note-attributes/Test.md")
    assert fm["title"] == "\\\\Test//" and fm["place_name"] == "Reichstag Building, Berlin"
    assert fm["location"] == [52.518654, 13.376102] and fm["author"] == "author@example.com"
    assert body == "Slartibartfast\n\nReminder: 2025-01-01T00:00:00+00:00 (done 2025-01-01T00:00:18+00:00)"
    assert _read(base / "test-things-to-do/Things to do.md")[1].splitlines()[:2] == ["- [ ] Simple task", "- [x] Done"]
    assert "| c1r2 | **c2r2** | C3r2 |" in _read(base / "test-table/table.md")[1]
    assert (base / "test-pdfAttachment/attachments/pdfAttachment/sample.pdf").read_bytes().startswith(b"%PDF")
    assert "sample.pdf|sample.pdf]]" in _read(base / "test-pdfAttachment/pdfAttachment.md")[1]
    assert "```evernote-encrypted\nRU5DMCR2SQ" in _read(base / "test-encryption/Encryption.md")[1]
    images = base / "test-image-dataUrl/attachments/test - image - dataUrl"
    assert sorted(p.suffix for p in images.iterdir()) == [".png", ".png", ".svg", ".svg", ".svg"]
    fm = _read(base / "source-of-webclip/Blank website. Blank site. Nothing to see here.md")[0]
    assert fm["source_url"] == "http://www.blankwebsite.com/" and fm["evernote_source"] == "web.clip7"
    hits = service.search(SearchRequest(query="Slartibartfast", mode="bm25")).hits
    assert [h.path for h in hits] == ["knowledge/obsidian-importer/test-note-attributes/Test.md"]
    assert (
        "Slartibartfast"
        in service.get(GetRequest(path="knowledge/obsidian-importer/test-note-attributes/Test.md")).content
    )
    assert service.link_lint(LinkLintRequest()).broken_total == 0
    assert unresolved(corpus, "knowledge") == []  # every attachment link finds its file

    before = tree_hashes(corpus)
    again = migrate(src)
    assert again.run is None and again.created == 0 and again.skipped_unchanged == 14
    assert tree_hashes(corpus) == before
