"""The Notion reader on exports built here (nested pages, links with %20 and ../, a dangling link,
database CSVs with a BOM, `_all.csv` twins, rows sharing the title 'Untitled', a zip inside a zip,
`__MACOSX` noise, an image) and on the real samples: note counts, no id left in a path, every link
of the created notes resolving in the index, and a second run that creates nothing."""

from __future__ import annotations

import datetime as dt
import io
import re
import unicodedata
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from support.migration import Migrate, tree_hashes

from dory.config import load_settings
from dory.migrate import formats
from dory.migrate.source import open_source
from dory.models import LinkLintRequest, MigrateRequest, MigrateUndoRequest, SearchRequest
from dory.service import DoryService

EXPORT = "Export-99d4faad-5bc1-4fef-82ac-5f6c7a957b12"
HOME, SUB, DEEP, OTHER, GONE = (
    "104d4deadd2c803a935ef9917447529e",  # time-ordered ids, as Notion writes since 2024
    "7dd41ab5869e464a88fc21637efb50f3",  # random v4-like ids
    "103d4deadd2c8081976ecdba4ede35a7",
    "cccb69fd6ef54192a5581bc501571112",
    "e396beaaddfd49599c43e9cfb3a7e5f5",
)
TASKS, PROJECTS, WRITE, UNT1, UNT2, LAUNCH, GHOST = (
    "76aaf8a4637542ed8175259692ca08bb",
    "58b8977d6e4444a98ec4d64176a071e5",
    "9ab9309ceae34f6f8dc19b2eeda8f8f2",
    "78f8987203714c0ebaaf7f9825180ed7",
    "dac8ebfe144e481e82e397ff5946f2c9",
    "6d28c38ede8641c1bbd241cea82810c9",
    "0ff2fef58850461f9668e42e7a7e5667",
)
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
BOM = "\ufeff"
HEX_ID = re.compile(r"[0-9a-f]{32}")


def _pages() -> dict[str, bytes]:
    """Nested pages: Home with a subpage (and its image), a page in another subtree linking back."""
    return {
        f"Home {HOME}.md": (
            f"# Home\n\nSee [Sub Page](Home%20{HOME}/Sub%20Page%20{SUB}.md) and [Gone](Gone%20{GONE}.md).\n\n"
            f"[Deep](Other%20{OTHER}/Deep%20{DEEP}.md) · [web](https://example.org/a%20b) · [top](#home)\n\n"
            f"```\n[code](Home%20{HOME}/Sub%20Page%20{SUB}.md)\n```\n"
        ).encode(),
        f"Home {HOME}/Sub Page {SUB}.md": (
            f"# Sub Page\n\nUp to [Home](../Home%20{HOME}.md).\n\n"
            f"![Sub%20Page%20{SUB}/pic.png](Sub%20Page%20{SUB}/pic.png)\n\n"
            f"![Sub%20Page%20{SUB}/lost.png](Sub%20Page%20{SUB}/lost.png)\n"
        ).encode(),
        f"Home {HOME}/Sub Page {SUB}/pic.png": PNG,
        f"Other {OTHER}.md": b"# Other\n",
        f"Other {OTHER}/Deep {DEEP}.md": (
            f"# Deep\n\nAcross: [Sub Page](../Home%20{HOME}/Sub%20Page%20{SUB}.md), "
            f"by URL: [Home](https://www.notion.so/{HOME}?pvs=21).\n\nOut: [escape](../../../../etc/passwd).\n"
        ).encode(),
        "index.html": b"<html>Notion's own index</html>",
    }


def _zip_bytes(files: dict[str, bytes], prefix: str = "") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(prefix + name, data)
    return buffer.getvalue()


def _write_zip(path: Path, files: dict[str, bytes], prefix: str = "") -> Path:
    path.write_bytes(_zip_bytes(files, prefix))
    return path


def _with_noise(files: dict[str, bytes]) -> dict[str, bytes]:
    """What a zip re-made on a Mac adds."""
    noise = {f"__MACOSX/{EXPORT}/._{name}": b"\x00\x05\x16\x07resource fork" for name in list(files)[:3]}
    return files | noise | {".DS_Store": b"\x00\x00\x00\x01Bud1"}


def _created(corpus: Path, into: str) -> dict[str, str]:
    return {p.relative_to(corpus).as_posix(): p.read_text("utf-8") for p in (corpus / into).rglob("*.md")}


def _broken_in(service: DoryService, into: str) -> list[str]:
    lint = service.link_lint(LinkLintRequest(max_items=10_000))
    return [f"{b.source}:{b.line}: {b.target} ({b.reason})" for b in lint.broken if b.source.startswith(into + "/")]


def _frontmatter(text: str) -> dict[str, object]:
    data = yaml.safe_load(text.split("---\n", 2)[1])
    assert isinstance(data, dict)
    return data


# -- pages and links -----------------------------------------------------------------------------
def test_nested_pages_keep_their_nesting_and_their_links_resolve(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    src = _write_zip(tmp_path / f"{EXPORT}.zip", _with_noise({f"{EXPORT}/{k}": v for k, v in _pages().items()}))
    res = migrate(src)
    assert (res.format, res.into) == ("notion", "knowledge/notion")
    assert res.items == {"note": 4, "attachment": 1} and res.problems == []
    into = "knowledge/notion"
    notes = _created(corpus, into)
    assert sorted(notes) == [f"{into}/Home.md", f"{into}/Home/Sub Page.md", f"{into}/Other.md", f"{into}/Other/Deep.md"]
    assert (corpus / into / "Home/Sub Page/pic.png").read_bytes() == PNG
    assert not [p for p in (corpus / into).rglob("*") if HEX_ID.search(p.name)]

    home = notes[f"{into}/Home.md"]
    assert _frontmatter(home) == {"title": "Home", "source_kind": "imported", "source": "notion", "notion_id": HOME}
    assert f"See [[{into}/Home/Sub Page|Sub Page]] and Gone (not in the export)." in home
    assert f"[[{into}/Other/Deep|Deep]] · [web](https://example.org/a%20b) · [top](#home)" in home
    assert f"```\n[code](Home%20{HOME}/Sub%20Page%20{SUB}.md)\n```" in home  # code is left alone
    sub = notes[f"{into}/Home/Sub Page.md"]
    assert f"Up to [[{into}/Home|Home]]." in sub
    assert f"![[{into}/Home/Sub Page/pic.png]]" in sub
    assert "lost.png (image not in the export)" in sub
    deep = notes[f"{into}/Other/Deep.md"]
    assert f"Across: [[{into}/Home/Sub Page|Sub Page]], by URL: [[{into}/Home|Home]]." in deep
    assert "Out: escape (not in the export)." in deep

    assert _broken_in(service, into) == []
    before = tree_hashes(corpus)
    again = migrate(src)
    assert again.created == 0 and again.skipped_unchanged == 5
    assert tree_hashes(corpus) == before


def test_names_a_mac_zip_stores_decomposed_still_meet_the_links_to_them(
    tmp_path: Path, corpus: Path, migrate: Migrate
) -> None:
    page = f"Caf\u00e9 {HOME}"
    files = {
        f"{page}.md": f"# Caf\u00e9\n\n![photo](Caf%C3%A9%20{HOME}/cr%C3%A8me.png)\n".encode(),
        unicodedata.normalize("NFD", f"{page}/cr\u00e8me.png"): PNG,
    }
    migrate(_write_zip(tmp_path / "mac.zip", files))
    text = (corpus / "knowledge/mac/Caf\u00e9.md").read_text()
    assert "![[knowledge/mac/Caf\u00e9/cr\u00e8me.png]]" in text
    assert (corpus / "knowledge/mac/Caf\u00e9/cr\u00e8me.png").read_bytes() == PNG


def test_a_taken_name_gets_a_suffix_and_the_links_to_it_follow_in_later_runs_too(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    mine = corpus / "knowledge/export/Home.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("# my own Home\n")
    pages = _pages()
    first = _folder(tmp_path / "v1" / "export", {k: v for k, v in pages.items() if not k.startswith("Other")})
    res = migrate(first)
    assert [(c.wanted, c.used) for c in res.clashes] == [("knowledge/export/Home.md", "knowledge/export/Home (2).md")]
    assert mine.read_text() == "# my own Home\n"
    assert "Up to [[knowledge/export/Home (2)|Home]]." in (corpus / "knowledge/export/Home/Sub Page.md").read_text()
    # A later, larger export: the new page links to the imported Home where it is, not to mine.
    again = migrate(_folder(tmp_path / "v2" / "export", pages))
    assert again.created == 2 and again.skipped_unchanged == 3
    assert "by URL: [[knowledge/export/Home (2)|Home]]." in (corpus / "knowledge/export/Other/Deep.md").read_text()
    assert _broken_in(service, "knowledge/export") == []


def _folder(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def test_a_zip_inside_a_zip_reads_as_the_export_it_holds(tmp_path: Path, migrate: Migrate, corpus: Path) -> None:
    inner = _zip_bytes(_pages(), prefix=f"{EXPORT}/")
    src = _write_zip(tmp_path / "workspace.zip", {f"{EXPORT}-Part-1.zip": inner})
    res = migrate(src)
    assert res.into == "knowledge/workspace" and res.items == {"note": 4, "attachment": 1}
    assert (corpus / "knowledge/workspace/Home/Sub Page/pic.png").read_bytes() == PNG

    (tmp_path / "other").mkdir()
    other = DoryService(load_settings(tmp_path / "other", {"embedder.backend": "none"}, env={}))
    try:
        folder = tmp_path / "workspace"
        for name, data in _pages().items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)
        other.migrations.migrate(MigrateRequest(source=str(folder)))
    finally:
        other.close()
    mine = tree_hashes(corpus / "knowledge/workspace")
    assert mine == tree_hashes(tmp_path / "other/knowledge/workspace")


def test_the_parts_of_a_split_export_merge_into_one_tree(tmp_path: Path, migrate: Migrate, corpus: Path) -> None:
    pages = _pages()
    one = {k: v for k, v in pages.items() if not k.startswith("Other")}
    two = {k: v for k, v in pages.items() if k.startswith("Other")} | {f"Home {HOME}.md": b"# Home, again\n"}
    parts = {f"{EXPORT}-Part-{n}.zip": _zip_bytes(files, prefix=f"{EXPORT}/") for n, files in ((1, one), (2, two))}
    res = migrate(_write_zip(tmp_path / "split.zip", parts))
    assert [(p.source, p.code) for p in res.problems] == [
        (f"{EXPORT}-Part-2.zip!/{EXPORT}/Home {HOME}.md", "duplicate_in_export")
    ]
    assert res.items == {"note": 4, "attachment": 1}
    deep = (corpus / "knowledge/split/Other/Deep.md").read_text()
    assert "Across: [[knowledge/split/Home/Sub Page|Sub Page]]" in deep


def test_an_overlapping_export_links_to_the_pages_an_earlier_run_brought_in(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    """A teamspace export, then the whole workspace's into another folder: pages already imported
    are not imported again, and the new pages' links point at them where they are."""
    pages = _pages()
    first = {name: pages[name] for name in (f"Home {HOME}.md", f"Home {HOME}/Sub Page {SUB}.md")}
    migrate(_write_zip(tmp_path / "team.zip", first))
    res = migrate(_write_zip(tmp_path / "all.zip", pages))
    assert res.skipped_unchanged == 2 and res.created == 3
    assert not (corpus / "knowledge/all/Home.md").exists()
    deep = (corpus / "knowledge/all/Other/Deep.md").read_text()
    assert "Across: [[knowledge/team/Home/Sub Page|Sub Page]], by URL: [[knowledge/team/Home|Home]]." in deep
    assert _broken_in(service, "knowledge/all") == []


# -- databases -----------------------------------------------------------------------------------
def _database_export() -> dict[str, bytes]:
    tasks_header = "Task name,Status,Tags,Project,Created time,title\n"
    rows = [
        f'Write copy,Done,,"Launch (Projects%20{PROJECTS}/Launch%20{LAUNCH}.md), '
        f'Ghost (Projects%20{PROJECTS}/Ghost%20{GHOST}.md)","September 17, 2024 1:52 PM",Copy',
        "Untitled,,1,,,",
        "Untitled,,2,,,",
        "No page row,Waiting,,,2024/03/01 10:00,",
    ]
    return {
        f"Tasks {TASKS}.csv": (BOM + tasks_header + rows[0] + "\n").encode(),  # the view: one row only
        f"Tasks {TASKS}_all.csv": (BOM + tasks_header + "\n".join(rows) + "\n").encode(),
        f"Tasks {TASKS}/Write copy {WRITE}.md": (
            b"# Write copy\n\nStatus: Done\nCreated time: September 17, 2024 1:52 PM\n\n## Notes\n\nDraft the copy.\n"
        ),
        f"Tasks {TASKS}/Untitled {UNT1}.md": b"# Untitled\n\nTags: 2\n\nsecond untitled body\n",
        f"Tasks {TASKS}/Untitled {UNT2}.md": b"# Untitled\n\nTags: 1\n\nfirst untitled body\n",
        f"Projects {PROJECTS}_all.csv": (
            f"{BOM}Project name,Tasks,Files\n"
            f"Launch,Write copy (Tasks%20{TASKS}/Write%20copy%20{WRITE}.md),Projects%20{PROJECTS}/plan.png\n"
        ).encode(),
        f"Projects {PROJECTS}/Launch {LAUNCH}.md": (
            f"# Launch\n\nTasks: Write copy (../Tasks%20{TASKS}/Write%20copy%20{WRITE}.md)\n\nGo.\n".encode()
        ),
        f"Projects {PROJECTS}/plan.png": PNG,
    }


def test_database_rows_become_notes_with_their_pages_merged(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    src = _write_zip(tmp_path / "db.zip", _database_export(), prefix="db/")
    res = migrate(src)
    assert res.items == {"database": 2, "row": 5, "attachment": 1} and res.problems == []
    into = "knowledge/db"
    notes = _created(corpus, into)
    assert sorted(notes) == sorted(
        f"{into}/{p}.md"
        for p in (
            "Tasks",
            "Tasks/Write copy",
            "Tasks/Untitled",
            "Tasks/Untitled (2)",
            "Tasks/No page row",
            "Projects",
            "Projects/Launch",
        )
    )
    write = notes[f"{into}/Tasks/Write copy.md"]
    assert _frontmatter(write) == {
        "title": "Write copy",
        "source_kind": "imported",
        "source": "notion",
        "notion_id": WRITE,
        "created": dt.date(2024, 9, 17),
        "notion_database": "Tasks",
        "Status": "Done",
        "Project": ["Launch", "Ghost"],
        "Created time": "September 17, 2024 1:52 PM",
        "title (notion)": "Copy",
    }
    assert f"- **Project**: [[{into}/Projects/Launch|Launch]], Ghost (not in the export)" in write
    assert "## Notes\n\nDraft the copy." in write and "Status: Done" not in write.split("---\n", 2)[2]
    # Rows sharing a title: numbered in the CSV's order, each with its own page (matched by its cells).
    first, second = notes[f"{into}/Tasks/Untitled.md"], notes[f"{into}/Tasks/Untitled (2).md"]
    assert _frontmatter(first)["Tags"] == "1" and "first untitled body" in first
    assert _frontmatter(second)["Tags"] == "2" and "second untitled body" in second
    assert {_frontmatter(first)["notion_id"], _frontmatter(second)["notion_id"]} == {UNT1, UNT2}
    lonely = notes[f"{into}/Tasks/No page row.md"]
    assert _frontmatter(lonely)["created"] == dt.date(2024, 3, 1)
    launch = notes[f"{into}/Projects/Launch.md"]
    assert f"- **Tasks**: [[{into}/Tasks/Write copy|Write copy]]" in launch
    assert f"- **Files**: ![[{into}/Projects/plan.png]]" in launch
    assert "Go." in launch and "Tasks: Write copy (" not in launch
    index = notes[f"{into}/Tasks.md"]
    assert "4 rows; columns: Task name, Status, Tags, Project, Created time, title." in index
    assert f"- [[{into}/Tasks/Untitled (2)|Untitled]]" in index
    assert _frontmatter(index)["notion_columns"] == ["Task name", "Status", "Tags", "Project", "Created time", "title"]

    hits = service.search(SearchRequest(query="untitled body", mode="bm25")).hits
    assert {h.path for h in hits} >= {f"{into}/Tasks/Untitled.md", f"{into}/Tasks/Untitled (2).md"}
    assert _broken_in(service, into) == []
    assert migrate(src).created == 0

    undone = service.migrations.undo(MigrateUndoRequest(run=str(res.run)))
    assert len(undone.removed) == res.created and undone.kept_edited == []
    assert not [p for p in (corpus / into).rglob("*") if p.is_file()]


def test_a_broken_csv_or_page_is_one_problem_and_the_rest_goes_on(
    tmp_path: Path, corpus: Path, migrate: Migrate
) -> None:
    files = _database_export()
    files[f"Projects {PROJECTS}_all.csv"] = b"\x00\x01binary\x00"
    files[f"Tasks {TASKS}/Untitled {UNT1}.md"] = b"\x00\x00not text"
    src = _write_zip(tmp_path / "db.zip", files)
    res = migrate(src)
    assert sorted((p.source, p.code) for p in res.problems) == [
        (f"Projects {PROJECTS}_all.csv", "bad_csv"),
        (f"Tasks {TASKS}/Untitled {UNT1}.md", "bad_encoding"),
    ]
    # Projects' row page is still imported, as a page; the Untitled row is kept from its CSV cells.
    assert res.items == {"database": 1, "row": 4, "note": 1, "attachment": 1}
    assert (corpus / "knowledge/db/Projects/Launch.md").is_file()
    assert _frontmatter((corpus / "knowledge/db/Tasks/Untitled (2).md").read_text())["Tags"] == "2"


def test_dry_run_counts_rows_in_the_llm_estimate(tmp_path: Path, migrate: Migrate) -> None:
    src = _write_zip(tmp_path / "db.zip", _database_export())
    res = migrate(src, dry_run=True, estimate=True)
    assert res.estimate is not None and res.estimate.llm_calls == 7  # 2 database notes + 5 rows


def test_detect_claims_notion_exports_only(tmp_path: Path) -> None:
    notion = _write_zip(tmp_path / "n.zip", _pages())
    plain = tmp_path / "vault"
    plain.mkdir()
    (plain / "Note.md").write_text("# Note\n")
    with open_source(notion) as tree:
        assert formats.detect(tree).name == "notion"
    with open_source(plain) as tree:
        assert formats.detect(tree).name == "generic"


# -- the real samples ----------------------------------------------------------------------------
SAMPLES = {
    "appflowy-collab/design.zip": {"note": 10, "database": 3, "row": 15, "attachment": 1},
    "appflowy-collab/import_test.zip": {"note": 12, "database": 1, "row": 3},
    "appflowy-collab/project&task.zip": {"note": 3, "database": 6, "row": 21, "attachment": 2},
    "appflowy-collab/multi_part_zip.zip": {"note": 29, "database": 12, "row": 50},
    "appflowy-collab/row_page_with_headings.zip": {"database": 1, "row": 1},
    "outline/notion-markdown.zip": {"note": 2, "database": 2, "row": 4, "attachment": 1},
}


@pytest.fixture
def sample(request: pytest.FixtureRequest, samples: Path) -> Iterator[Path]:
    yield samples / "notion" / request.param


@pytest.mark.parametrize("sample", sorted(SAMPLES), indirect=True)
def test_real_samples_import_with_every_link_resolving(
    sample: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    res = migrate(sample)
    assert res.format == "notion"
    assert res.items == SAMPLES[f"{sample.parent.name}/{sample.name}"]
    assert [p for p in res.problems] == []
    made = [p for p in (corpus / res.into).rglob("*") if p.is_file()]
    assert len(made) == res.created == sum(res.items.values())
    assert not [p for p in made if HEX_ID.search(p.relative_to(corpus).as_posix())]
    assert _broken_in(service, res.into) == []
    before = tree_hashes(corpus)
    assert migrate(sample).created == 0
    assert tree_hashes(corpus) == before


def test_real_samples_details(samples: Path, corpus: Path, migrate: Migrate) -> None:
    """What each sample is known for (its README): the link out of design.zip dangles, '../' across
    subtrees, three 'Untitled' rows, BOM CSVs, relations; the whole-workspace export overlaps them."""
    base = samples / "notion" / "appflowy-collab"
    design = migrate(base / "design.zip", into="knowledge/design")
    assert "Blog Post (not in the export)" in (corpus / "knowledge/design/Design.md").read_text()
    assert design.items["database"] == 3
    migrate(base / "import_test.zip", into="knowledge/it")
    assert "[[knowledge/it/Root/root-1|root-1]]" in (corpus / "knowledge/it/Root2/root2-link.md").read_text()
    rows = sorted(p.name for p in (corpus / "knowledge/it/Root/root-2/root-2-1/root-2-database").iterdir())
    assert rows == ["Untitled (2).md", "Untitled (3).md", "Untitled.md"]
    migrate(base / "project&task.zip", into="knowledge/pt")
    projects = (corpus / "knowledge/pt/Projects & Tasks/Projects.md").read_text()
    assert _frontmatter(projects)["notion_columns"][0] == "Project name"  # type: ignore[index]
    research = (corpus / "knowledge/pt/Projects & Tasks/Projects/Research study.md").read_text()
    assert "[[knowledge/pt/Projects & Tasks/Tasks/Interpret findings|Interpret findings]]" in research
    assert "![[knowledge/pt/Projects & Tasks/DO010003572.jpeg]]" in research
    migrate(base / "multi_part_zip.zip", into="knowledge/ws")
    # Pages design.zip brought in are not brought in twice; the ones it lacked are.
    assert not (corpus / "knowledge/ws/Design.md").exists()
    assert (corpus / "knowledge/ws/Work/Notes/Blog Post.md").is_file()
