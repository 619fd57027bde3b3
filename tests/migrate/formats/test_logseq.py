"""The Logseq reader: pages and journals (markdown and org) as notes, page properties as frontmatter,
`[[links]]` to proposed paths, `((block refs))` resolved, embeds and queries readable, stubs for
pages only linked to, hostile pages reported one by one; and the Logseq docs graph, whose page links
all resolve after import (its image links dangle by design: the sample leaves assets/ out)."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest
from support.migration import Migrate, tree_hashes
from support.migration_links import attachment_links, note_links

from dory.corpus.document import parse_document
from dory.memory.links import code_masked
from dory.models import LinkLintRequest, SearchRequest
from dory.service import DoryService

A = "11111111-1111-1111-1111-111111111111"
B = "22222222-2222-2222-2222-222222222222"
ONE = "aaaaaaaa-0000-0000-0000-000000000001"
TWO = "aaaaaaaa-0000-0000-0000-000000000002"
ORG = "44444444-4444-4444-4444-444444444444"
MISSING = "99999999-9999-9999-9999-999999999999"
LONG = "Ω" * 150  # a 300-byte page name
SHORT = "Ω" * 58  # its file name: cut so that with `.md` it fits 120 bytes

PROJECT = f"""title:: Project X
alias:: PX, [[Big Plan]]
tags:: work, [[deep ideas]]
type:: [[Book]]
status:: active

- First block about [[Topic A]] and #tag
  id:: {A}
\t- Nested child on [[Sep 14th, 2020]], see [[Nowhere]] and [[Dec 1st, 2021]]
\t\t- deeper `[[not a link]]`
\t\t  collapsed:: true
- id:: {B}
  Second block text
- {{{{query (and [[Topic A]] (task TODO))}}}}
- {{{{embed [[Topic A]]}}}}
- #+BEGIN_QUERY
  {{:title "[[x]]" :query [:find ?b]}}
  #+END_QUERY
- #+BEGIN_NOTE
  a note on [[Topic A]]
  #+END_NOTE
- [labelled]((({A})))
- [page label]([[Topic A]]) and #[[Topic A]]
- ![pic](../assets/pic.png) ![gone](../assets/gone.png)
-
"""
PROJECT_AFTER = """---
title: Project X
aliases:
- PX
- Big Plan
tags:
- work
- deep ideas
logseq-type: '[[Book]]'
logseq-status: active
---

- First block about [[knowledge/graph/Topic A|Topic A]] and #tag
  - Nested child on [[knowledge/graph/journals/2020-09-14|Sep 14th, 2020]], see [[knowledge/graph/Nowhere|Nowhere]] and [[knowledge/graph/journals/2021-12-01|Dec 1st, 2021]]
    - deeper `[[not a link]]`
- Second block text
- `{{query (and [[Topic A]] (task TODO))}}`
- [[knowledge/graph/Topic A|Topic A]]
-
  ```clojure
  {:title "[[x]]" :query [:find ?b]}
  ```
- > **Note**
  > a note on [[knowledge/graph/Topic A|Topic A]]
- [[knowledge/graph/Project X|labelled]]
- [[knowledge/graph/Topic A|page label]] and [[knowledge/graph/Topic A|#Topic A]]
- ![pic](assets/pic.png) ![gone](assets/gone.png)
"""  # noqa: E501
TOPIC = (
    f"- refers to (({A})) and (({MISSING}))\n- embeds {{{{embed (({B}))}}}}\n- to [[px]] and [[a/b]] and [[{LONG}]]\n"
)
TOPIC_AFTER = f"""---
title: Topic A
---

- refers to First block about [[knowledge/graph/Topic A|Topic A]] and #tag ([[knowledge/graph/Project X|Project X]]) and `(({MISSING}))`
- embeds Second block text ([[knowledge/graph/Project X|Project X]])
- to [[knowledge/graph/Project X|px]] and [[knowledge/graph/a/b|a/b]] and [[knowledge/graph/{SHORT}|{LONG}]]
"""  # noqa: E501
ABOUT = f"""#+TITLE: About Org
* Heading [[Topic A]]
:PROPERTIES:
:id: {ORG}
:END:
  body ~[[code]]~ *bold* [[https://x.y][site]] [[Project X][the project]]
** Child
   #+BEGIN_SRC python
   if x:
       y()
   #+END_SRC
"""
ABOUT_AFTER = """---
title: About Org
---

- Heading [[knowledge/graph/Topic A|Topic A]]
  body `[[code]]` **bold** [site](https://x.y) [[knowledge/graph/Project X|the project]]
  - Child
    ```python
    if x:
        y()
    ```
"""


def _graph(tmp_path: Path) -> Path:
    src = tmp_path / "graph"
    files: dict[str, bytes] = {
        "logseq/config.edn": b'{:journal/page-title-format "MMM do, yyyy"\n :file/name-format :triple-lowbar}\n',
        "logseq/bak/pages/Project X.md": b"- an old copy",
        "logseq/custom.css": b"body {}",
        "pages/Project X.md": PROJECT.encode(),
        "pages/Topic A.md": TOPIC.encode(),
        "pages/a___b.md": b"- namespaced, links [[Big Plan]]\n",
        "pages/c%2Fd.md": b"title:: c/d\n\n- legacy name\n",
        "pages/topic a again.md": b"title:: TOPIC A\n\n- the same page name again\n",
        "pages/Cycle.md": f"- one (({TWO}))\n  id:: {ONE}\n- two (({ONE}))\n  id:: {TWO}\n".encode(),
        "pages/Broken.md": b"---\ntitle: [oops\n---\n- body [[Topic A]]\n",
        "pages/Long.md": f"title:: {LONG}\n\n- the long one\n".encode(),
        "pages/About.org": ABOUT.encode(),
        "pages/Latin.md": "- caf\u00e9 cr\u00e8me [[Topic A]]\n".encode("cp1252"),
        "pages/Bin.md": b"\x00\x01 binary",
        "journals/2020_09_14.md": f"- journal [[Project X]] (({B})) (({ORG}))\n".encode(),
        "journals/2020_05_14.org": b"* Thursday\n** [[Topic A]]\n",
        "assets/pic.png": b"\x89PNG fake",
    }
    for rel, data in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(data)
    return src


def test_graph_pages_journals_properties_and_references(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    src = _graph(tmp_path)
    res = migrate(src)
    assert (res.format, res.into) == ("logseq", "knowledge/graph")
    assert res.items == {"note": 10, "journal": 2, "stub": 2, "attachment": 1}
    assert sorted((p.source, p.code) for p in res.problems) == [
        ("pages/Bin.md", "bad_encoding"),
        ("pages/Broken.md", "bad_frontmatter"),
    ]
    # Logseq names pages case-insensitively: the second "Topic A" gets a suffix, links keep the first.
    assert [(c.wanted, c.used) for c in res.clashes] == [
        ("knowledge/graph/TOPIC A.md", "knowledge/graph/TOPIC A (2).md")
    ]
    out = corpus / "knowledge/graph"
    assert (out / "Project X.md").read_text() == PROJECT_AFTER
    assert (out / "Topic A.md").read_text() == TOPIC_AFTER
    assert (out / "About Org.md").read_text() == ABOUT_AFTER
    assert (
        out / "a/b.md"
    ).read_text() == "---\ntitle: a/b\n---\n\n- namespaced, links [[knowledge/graph/Project X|Big Plan]]\n"
    assert (out / "c/d.md").read_text() == "---\ntitle: c/d\n---\n\n- legacy name\n"
    assert (out / f"{SHORT}.md").read_text() == f"---\ntitle: {LONG}\n---\n\n- the long one\n"
    assert (out / "journals/2020-09-14.md").read_text() == (
        "---\ntitle: Sep 14th, 2020\ntype: daily\ndate: 2020-09-14\n---\n\n"
        "- journal [[knowledge/graph/Project X|Project X]] Second block text ([[knowledge/graph/Project X|Project X]])"
        " Heading [[knowledge/graph/Topic A|Topic A]] ([[knowledge/graph/About Org|About Org]])\n"
    )
    assert (
        (out / "journals/2020-05-14.md").read_text().endswith("\n- Thursday\n  - [[knowledge/graph/Topic A|Topic A]]\n")
    )
    # A cycle of references ends at the second block: its own references are links.
    cycle = "[[knowledge/graph/Cycle|Cycle]]"
    assert (out / "Cycle.md").read_text().endswith(f"\n- one two {cycle} ({cycle})\n- two one {cycle} ({cycle})\n")
    assert (out / "Broken.md").read_text() == (
        "---\ntitle: Broken\n---\n\n```yaml\ntitle: [oops\n```\n- body [[knowledge/graph/Topic A|Topic A]]\n"
    )
    assert (out / "Nowhere.md").read_text().startswith("---\ntitle: Nowhere\n---\n")
    assert (
        (out / "journals/2021-12-01.md")
        .read_text()
        .startswith("---\ntitle: Dec 1st, 2021\ntype: daily\ndate: 2021-12-01\n---\n")
    )
    assert (out / "assets/pic.png").read_bytes() == b"\x89PNG fake"
    assert not [p for p in corpus.rglob("*") if "old copy" in p.name or p.suffix == ".css" or p.name == "x.md"]

    lint = service.link_lint(LinkLintRequest(max_items=1000))
    assert lint.broken == []
    links = note_links(service, "knowledge/graph/")
    assert (links.resolved, links.broken) == (29, 0)
    images = attachment_links(corpus, "knowledge/graph/")
    assert (images.resolved, dict(images.broken_targets)) == (1, {"knowledge/graph/assets/gone.png": 1})
    hits = service.search(SearchRequest(query="crème", mode="bm25")).hits
    assert [h.path for h in hits] == ["knowledge/graph/Latin.md"]

    before = tree_hashes(corpus)
    again = migrate(src)
    assert again.run is None and again.created == 0 and again.skipped_unchanged == 15
    assert tree_hashes(corpus) == before


def test_a_zipped_graph_without_config_is_found_by_its_folders(tmp_path: Path, corpus: Path, migrate: Migrate) -> None:
    archive = tmp_path / "notes.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("export/pages/Alpha.md", "- see [[Beta]]\n")
        zf.writestr("export/pages/Beta.md", "alias:: B\n\n- beta\n")
        zf.writestr("export/journals/2024_02_29.md", "- leap day [[B]]\n")
        zf.writestr("README.txt", "about the export\n")  # beside the graph: the generic reader's
    res = migrate(archive)
    assert (res.format, res.into) == ("logseq", "knowledge/notes")
    assert res.items == {"note": 2, "journal": 1, "evidence": 1}
    assert "about the export" in (corpus / "knowledge/notes/README.txt.md").read_text()
    assert (corpus / "knowledge/notes/Alpha.md").read_text().endswith("- see [[knowledge/notes/Beta|Beta]]\n")
    assert (corpus / "knowledge/notes/journals/2024-02-29.md").read_text() == (
        "---\ntitle: Feb 29th, 2024\ntype: daily\ndate: 2024-02-29\n---\n\n- leap day [[knowledge/notes/Beta|B]]\n"
    )


def test_a_folder_with_pages_alone_is_not_a_graph(tmp_path: Path, migrate: Migrate) -> None:
    src = tmp_path / "site"
    (src / "pages").mkdir(parents=True)
    (src / "pages/a.md").write_text("- x\n")
    assert migrate(src, dry_run=True).format == "generic"


def test_logseq_docs_counts_in_a_dry_run(samples: Path, migrate: Migrate) -> None:
    res = migrate(samples / "logseq/logseq-docs", dry_run=True)
    assert (res.format, res.into) == ("logseq", "knowledge/logseq-docs")
    # 242 pages (238 .md, 4 .org) and LICENSE.md beside them; 91 journals (75 .md, 16 .org);
    # 484 pages only linked to (352 pages, 132 days with no journal file).
    assert res.items == {"note": 243, "journal": 91, "stub": 484}
    assert res.problems == []


@pytest.mark.slow
def test_logseq_docs_links_resolve_after_import(
    samples: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    src = samples / "logseq/logseq-docs"
    res = migrate(src)
    assert res.created == 818 and res.problems == []
    links = note_links(service, "knowledge/logseq-docs/")
    assert (links.resolved, links.broken) == (2029, 0)
    # Image and video links point into assets/, which the sample leaves out, but one, a path of
    # the docs web site (`[](/refactoring-of-logseq/tree.png)`).
    images = attachment_links(corpus, "knowledge/logseq-docs/")
    assert (images.resolved, images.broken) == (0, 148)
    elsewhere = [t for t in images.broken_targets if not t.startswith("knowledge/logseq-docs/assets/")]
    assert elsewhere == ["/refactoring-of-logseq/tree.png"]
    # Every block reference, embed and query of the prose is resolved or shown as code, and no block
    # id is left in it (the docs' own examples of them are code already).
    left = re.compile(r"\(\([0-9a-f]{8}-[0-9a-f-]{27}\)\)|\{\{(?:embed|query)\b|^\s*-?\s*id:: ")
    for note in (corpus / "knowledge/logseq-docs").rglob("*.md"):
        doc = parse_document(note.name, note.read_bytes())
        assert not [line for line in code_masked(doc.lines, doc.body_start) if left.search(line)], note
    again = migrate(src)
    assert again.created == 0 and again.skipped_unchanged == 818


def test_a_page_whose_name_is_taken_in_the_corpus_is_suffixed_and_links_follow(
    tmp_path: Path, corpus: Path, migrate: Migrate, service: DoryService
) -> None:
    src = tmp_path / "g"
    for rel, text in {
        "pages/Alpha.md": "- see [[Beta]]\n",
        "pages/Beta.md": "- beta\n",
        "journals/2024_01_01.md": "- x\n",
    }.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    mine = corpus / "knowledge/g/Beta.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("my own Beta\n")
    res = migrate(src)
    assert [(c.wanted, c.used) for c in res.clashes] == [("knowledge/g/Beta.md", "knowledge/g/Beta (2).md")]
    assert mine.read_text() == "my own Beta\n"
    assert (corpus / "knowledge/g/Alpha.md").read_text().endswith("- see [[knowledge/g/Beta (2)|Beta]]\n")
    links = note_links(service, "knowledge/g/")
    assert (links.resolved, links.broken) == (1, 0)
