"""The maintenance job (`dory ops run maintain`): each finding on a crafted corpus, session and wiki
links checked on disk, deterministic bytes, a hand-edited report kept, dry runs that write nothing,
`--fix` (drift and unambiguous wikilinks only, prose untouched), hostile files and bad periods."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dory.config import load_settings
from dory.jobs import maintenance
from dory.models import JobRun, JobRunRequest, ReindexRequest
from dory.service import DoryService
from dory.surfaces.cli import cli

PERIOD = "2026-11-20"
REPORT = f"inbox/maintenance/{PERIOD}.md"
SESSION = "logs/sessions/claude/laptop/2026-11-19-abc.md"


def person(title: str, updated: str, timeline: list[str], extra: str = "") -> str:
    entries = "\n".join(f"- {day}: event {n} (sources/semantic/e{n}.md)" for n, day in enumerate(timeline))
    return (
        f"---\ntitle: {title}\ntype: person\nupdated: {updated}\n{extra}---\n# {title}\n\n## Summary\n\n"
        f"Someone.\n\n---\n\n<!-- TIMELINE: append-only below this line -->\n\n## Timeline\n{entries}\n"
    )


def state(title: str, updated: str) -> str:
    return f"---\ntitle: {title}\ntype: project\nstatus: active\nupdated: {updated}\n---\n# {title}\n\nWork.\n"


# Every line ends in CRLF: a fix must keep the line endings it did not touch.
LINKS = "\r\n".join(
    [
        "---",
        "title: Links",
        "---",
        "See [[Alice Smith]] and `[[Alice Smith]]` in code.",
        "| who | note |",
        "| --- | --- |",
        "| [[Alice Smith]] | x |",
        "Her facts: [[alice smith#Summary|facts]].",
        "Ambiguous: [[Sam Lee]].",
        "Missing: [[Nowhere]].",
        "Wiki: [home](../wiki/index.md) and [[wiki/missing]].",
        "Heading: [[Alice Smith#Summary]].",
        "",
    ]
)
FIXED = {
    "See [[Alice Smith]] and": "See [[alice-smith|Alice Smith]] and",
    "| [[Alice Smith]] | x |": "| [[alice-smith\\|Alice Smith]] | x |",
    "[[alice smith#Summary|facts]]": "[[alice-smith#Summary|facts]]",
    "[[Alice Smith#Summary]]": "[[alice-smith#Summary|Alice Smith]]",
}

FILES: dict[str, str | bytes] = {
    "people/alice-smith.md": person("Alice Smith", "2026-11-01", ["2026-10-01", "2026-11-10"]),
    "people/carol.md": person("Carol", "2026-11-15", ["2026-11-10"]),
    "people/bob.md": person("Bob", "2026-11-15", [], extra="aliases: [Robert]\n"),
    "people/robert.md": person("Robert", "2026-11-15", []),
    "people/sam-one.md": person("Sam Lee", "2026-11-15", []),
    "concepts/sam-lee.md": "---\ntitle: Sam Lee method\ntype: concept\n---\n# Sam Lee method\n",
    "projects/apollo/state.md": state("Apollo", "2026-01-05"),
    "projects/gemini/state.md": state("Gemini", "2026-08-22"),  # exactly 90 days before: not stale
    "projects/hermes/state.md": state("Hermes", "2026-08-21"),  # 91 days: stale
    "knowledge/links.md": LINKS,
    "knowledge/linked.md": "# Linked\n\nAbout [[bob]].\n",
    "digests/daily/2026-11-19.md": (
        f"# Digest\n\n- [m-1]({SESSION}#L12) and [m-2](logs/sessions/claude/laptop/2026-11-19-gone.md#L3)\n"
    ),
    SESSION: "# Session\n\nhello\n",
    "wiki/index.md": "# Wiki\n",
    "ideas/lonely.md": "# Lonely\n\nNo links here.\n",
    "inbox/capture.md": "# Capture\n\nraw text\n",
    "core/user.md": "# User\n\nme\n",
}


@pytest.fixture
def build(tmp_path: Path) -> Iterator[Callable[..., DoryService]]:
    """build(files) -> a service over a fresh, reindexed corpus (lexical only, no daemon)."""
    services: list[DoryService] = []

    def make(files: dict[str, str | bytes], name: str = "corpus") -> DoryService:
        root = tmp_path / name
        for rel, content in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_bytes(content.encode("utf-8"))
        svc = DoryService(load_settings(root, {"embedder.backend": "none"}, env={}))
        services.append(svc)
        svc.reindex(ReindexRequest(vectors=False))
        return svc

    yield make
    for svc in services:
        svc.close()


def maintain(svc: DoryService, **flags: Any) -> JobRun:
    run = svc.run_job(JobRunRequest(job="maintain", period=PERIOD, **flags))
    assert run.status in ("ok", "warning", "dry_run"), run
    return run


def report(svc: DoryService) -> str:
    return (svc.settings.corpus / REPORT).read_text(encoding="utf-8")


def section(text: str, title: str) -> list[str]:
    """The bullet items of the H2 section whose title starts with `title`."""
    block = text.split(f"\n## {title}", 1)[1].split("\n", 1)[1].split("\n## ", 1)[0]
    return [line[2:] for line in block.splitlines() if line.startswith("- ")]


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink() and ".dory" not in p.relative_to(root).parts
    }


def test_each_finding_is_reported(build: Callable[..., DoryService]) -> None:
    svc = build(FILES)
    run = maintain(svc)
    text = report(svc)
    assert text.startswith(
        f"---\ntitle: Maintenance report {PERIOD}\ntype: report\nstatus: active\n"
        f"date: {PERIOD}\nsource_kind: generated\ngenerated_by: dory maintain\n"
    )
    broken = section(text, "Broken links")
    assert any("`knowledge/links.md:4`" in item and "`[[Alice Smith]]`" in item for item in broken)
    assert any("`[[Nowhere]]`" in item for item in broken)
    orphans = section(text, "Orphans")
    assert "`ideas/lonely.md`" in orphans
    assert not [item for item in orphans if item.startswith(("`inbox/", "`core/", "`digests/", "`logs/"))]
    assert "`knowledge/linked.md`" not in orphans and "`people/bob.md`" not in orphans
    assert section(text, "Compiled truth") == [
        "`people/alice-smith.md`: compiled truth updated 2026-11-01, latest timeline entry 2026-11-10"
    ]
    assert section(text, "Stale active") == [
        "`projects/apollo/state.md`: updated 2026-01-05, 319 days before 2026-11-20",
        "`projects/hermes/state.md`: updated 2026-08-21, 91 days before 2026-11-20",
    ]
    collisions = section(text, "Duplicate entities")
    assert "`robert`: `people/bob.md` (alias), `people/robert.md` (slug)" in collisions
    assert section(text, "Files skipped") == ["None"]
    assert section(text, "Index vs disk drift") == ["None"]
    assert (
        run.outputs
        | {
            "report": REPORT,
            "written": 1,
            "stale_compiled": 1,
            "stale_active": 2,
            "drift": 0,
            "skipped_files": 0,
            "fixed": 0,
        }
        == run.outputs
    )
    assert run.outputs["broken_links"] == len(broken) and run.outputs["orphans"] == len(orphans)
    assert run.outputs["alias_collisions"] == len(collisions)


def test_links_to_session_and_wiki_files_are_checked_on_disk(build: Callable[..., DoryService]) -> None:
    """Transcripts and the wiki are kept out of the durable index: a link into them is fine when the
    file exists (its #fragment ignored) and broken when it does not."""
    svc = build(FILES)
    maintain(svc)
    broken = section(report(svc), "Broken links")
    text = "\n".join(broken)
    assert "2026-11-19-abc" not in text and "wiki/index.md" not in text
    assert any(item.startswith("`digests/daily/2026-11-19.md:3`") and "2026-11-19-gone.md" in item for item in broken)
    assert any("`[[wiki/missing]]`" in item for item in broken)


def test_rerun_writes_the_same_bytes_and_cli_reports_unchanged(
    build: Callable[..., DoryService], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    svc = build(FILES)
    root = svc.settings.corpus
    first = invoke(monkeypatch, tmp_path, "--corpus", str(root), "ops", "run", "maintain", "--period", PERIOD)
    assert first.exit_code == 0, first.output
    written = (root / REPORT).read_bytes()
    again = invoke(
        monkeypatch, tmp_path, "--corpus", str(root), "ops", "run", "maintain", "--period", PERIOD, "--force"
    )
    body = json.loads(again.stdout)
    assert body["status"] == "ok" and body["outputs"]["unchanged"] == 1 and body["outputs"]["written"] == 0
    assert (root / REPORT).read_bytes() == written
    assert json.loads(first.stdout)["outputs"]["written"] == 1


def test_hand_edited_report_is_kept_with_a_warning(build: Callable[..., DoryService]) -> None:
    svc = build(FILES)
    maintain(svc)
    path = svc.settings.corpus / REPORT
    edited = path.read_bytes() + b"\nMy note: fix Alice's page first.\n"
    path.write_bytes(edited)
    run = maintain(svc, force=True)
    assert run.status == "warning" and run.outputs["kept_edited"] == 1 and run.outputs["written"] == 0
    assert any(REPORT in warning and "edited by hand" in warning for warning in run.warnings)
    assert path.read_bytes() == edited


def make_drift(root: Path) -> None:
    (root / "ideas/new.md").write_text("# New\n", encoding="utf-8")
    (root / "ideas/lonely.md").unlink()
    with open(root / "people/carol.md", "a", encoding="utf-8") as handle:
        handle.write("- 2026-11-12: one more (sources/semantic/x.md)\n")
    st = (root / "people/bob.md").stat()
    os.utime(root / "people/bob.md", ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))


def test_dry_run_writes_and_fixes_nothing(build: Callable[..., DoryService]) -> None:
    svc = build(FILES)
    root = svc.settings.corpus
    make_drift(root)
    before = snapshot(root)
    run = maintain(svc, dry_run=True, fix=True)
    assert run.status == "dry_run" and run.outputs["dry_run"] is True
    assert snapshot(root) == before and not (root / REPORT).exists()
    assert run.outputs["drift"] == 4 and run.outputs["fixed"] == 0 and run.outputs["would_fix"] == 4 + 4
    assert "would reconcile the index (4 files differ from it)" in run.outputs["fixes"]
    assert sum(line.startswith("would retarget `knowledge/links.md:") for line in run.outputs["fixes"]) == 4
    plan = svc.reindex(ReindexRequest(plan_only=True))
    assert (plan.new, plan.deleted, plan.changed, plan.touched) == (1, 1, 1, 1)  # the index was left alone


def test_fix_repairs_drift_and_unambiguous_links_only(build: Callable[..., DoryService]) -> None:
    svc = build(FILES)
    root = svc.settings.corpus
    make_drift(root)
    before = snapshot(root)
    run = maintain(svc, fix=True)
    after = snapshot(root)
    expected = LINKS
    for old, new in FIXED.items():
        expected = expected.replace(old, new)
    assert after.pop("knowledge/links.md") == expected.encode("utf-8")
    assert after.pop(REPORT)
    before.pop("knowledge/links.md")
    assert after == before  # every other note, byte for byte
    plan = svc.reindex(ReindexRequest(plan_only=True))
    assert plan.new + plan.changed + plan.deleted + plan.touched + plan.renamed == 0
    fixes = section(report(svc), "Fixes")
    assert fixes[0] == "reconciled the index: 1 new, 1 changed, 0 renamed, 1 deleted, 1 touched"
    assert any(line.startswith("not fixed: `knowledge/links.md:9` `[[Sam Lee]]` could mean") for line in fixes)
    assert sum(line.startswith("retargeted `knowledge/links.md:") for line in fixes) == 4
    assert run.outputs["fixed"] == 4 + 4 and run.outputs["drift"] == 4
    maintain(svc, force=True)
    again = section(report(svc), "Broken links")
    assert not [item for item in again if "Alice Smith" in item or "alice smith" in item]
    assert any("`[[Sam Lee]]`" in item for item in again)


HOSTILE: dict[str, str | bytes] = {
    "people/alice-smith.md": person("Alice Smith", "2026-11-01", []),
    "knowledge/broken-yaml.md": "---\ntitle: [oops\n---\nSee [[Alice Smith]].\n",
    "knowledge/latin1.md": b"caf\xe9 [[Alice Smith]]\n",
    "knowledge/nul.md": b"text\x00more\n",
    "knowledge/fine.md": "# Fine\n",
    "knowledge/real.md": "# Real\n\nSee [[Alice Smith]].\n",
}


def test_hostile_files_are_reported_as_skipped_not_fatal(build: Callable[..., DoryService], tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    (root / "knowledge").mkdir(parents=True)
    (root / "knowledge/loop.md").symlink_to("loop.md")
    (root / "knowledge/via-link.md").symlink_to("real.md")
    svc = build(HOSTILE)
    before = snapshot(root)
    run = maintain(svc, fix=True)
    skipped = section(report(svc), "Files skipped")
    reasons = {item.split("`")[1]: item.split(": ")[1] for item in skipped}
    assert reasons == {
        "knowledge/broken-yaml.md": "broken_frontmatter",
        "knowledge/latin1.md": "not_utf8",
        "knowledge/loop.md": "symlink_loop",
        "knowledge/nul.md": "nul_bytes",
    }
    assert run.outputs["skipped_files"] == 4
    # A note whose frontmatter could not be parsed is never rewritten, even for a fixable link.
    fixes = " ".join(section(report(svc), "Fixes"))
    assert "not fixed: `knowledge/broken-yaml.md`: its frontmatter could not be parsed" in fixes
    # A symlinked note is left alone (a swap would replace the link); the note it points to is fixed.
    assert "not fixed: `knowledge/via-link.md`: it is a symlink" in fixes
    assert (root / "knowledge/via-link.md").is_symlink()
    after = snapshot(root)
    after.pop(REPORT)
    assert after.pop("knowledge/real.md") == b"# Real\n\nSee [[alice-smith|Alice Smith]].\n"
    before.pop("knowledge/real.md")
    assert after == before


def test_sections_are_capped(build: Callable[..., DoryService]) -> None:
    files: dict[str, str | bytes] = {f"ideas/n{i:03d}.md": f"# Note {i}\n" for i in range(maintenance.MAX_ITEMS + 5)}
    svc = build(files)
    run = maintain(svc)
    orphans = section(report(svc), "Orphans")
    assert len(orphans) == maintenance.MAX_ITEMS + 1 and orphans[-1] == "… and 5 more"
    assert run.outputs["orphans"] == maintenance.MAX_ITEMS + 5


def test_unindexed_corpus_is_a_warning_not_a_crash(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    (root / "a.md").write_text("# A\n", encoding="utf-8")
    svc = DoryService(load_settings(root, {"embedder.backend": "none"}, env={}))
    try:
        run = svc.run_job(JobRunRequest(job="maintain", period=PERIOD))
    finally:
        svc.close()
    assert run.status == "warning" and "not been indexed" in run.warnings[0]
    assert not (root / REPORT).exists()


def invoke(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *args: str) -> Any:
    """`dory <args> --json` through the click command tree, in this process, with a clean environment."""
    for name in [n for n in os.environ if n.startswith("DORY_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("DORY_EMBEDDER_BACKEND", "none")
    monkeypatch.setenv("DORY_CACHE_DIR", str(tmp_path / "cache"))
    return CliRunner().invoke(cli, [*args, "--json"], prog_name="dory")


@pytest.mark.parametrize(
    ("period", "message"),
    [
        ("2026-13-40", "period '2026-13-40' is not a day (YYYY-MM-DD)"),
        (
            "../x",
            "period '../x' for job maintain is not a date, week or time key (letters, digits, '-', ':' and 'T' only)",
        ),
    ],
)
def test_bad_period_is_a_usage_error(
    build: Callable[..., DoryService], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, period: str, message: str
) -> None:
    root = build(FILES).settings.corpus
    result = invoke(monkeypatch, tmp_path, "--corpus", str(root), "ops", "run", "maintain", "--period", period)
    assert result.exit_code == 2, result.output
    error = json.loads(result.stdout)["error"]
    assert (error["code"], error["message"]) == ("usage_error", message)
    assert not (root / "inbox/maintenance").exists()
