"""Every crash point of a migration run: the rerun resumes the same run and ends exactly as a run
that was never interrupted.

A traced run (dory/corpus/faults.py, DORY_FAULT_TRACE) lists the crash points a migration of a
small mixed source passes, in order and with repeats (`migrate.intent`, `create.temp-written`,
`create.linked`, `migrate.output`, `migrate.done` for every file, then the report's write). Then,
for each `name#k`, a forked child migrates the same source into a fresh corpus and SIGKILLs itself
at exactly that point (no cleanup of any kind runs), and the parent migrates again, as a person
would. The rerun must resume the killed run (same id), and the corpus must hold exactly the files
of a reference run into another corpus (same paths, same bytes; run ids and days masked), with no
temporary file left, the manifest finished with every item done once, and the index agreeing.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path

import pytest
from support.migration import (
    MINE,
    PeopleReader,
    comparable,
    mixed_source,
    people_source,
    seed_corpus,
    temp_leftovers,
)

from dory.config import Settings, load_settings
from dory.corpus.faults import FAULT_ENV, TRACE_ENV
from dory.memory import claims
from dory.migrate import formats, manifest, run
from dory.migrate.manifest import RunRecord
from dory.models import MigrateRequest, MigrateResponse, SearchRequest
from dory.service import DoryService

RUN_ID = re.compile(r"mig-\d{8}-\d{6}-[0-9a-f]{6}")


def settings_for(root: Path) -> Settings:
    return load_settings(root, {"embedder.backend": "none"}, env={})


def migrate_here(root: Path, source: Path, **fields: object) -> MigrateResponse:
    svc = DoryService(settings_for(root))
    try:
        return svc.migrations.migrate(MigrateRequest(source=str(source), **fields))  # type: ignore[arg-type]
    finally:
        svc.close()


def in_child(root: Path, source: Path, env: dict[str, str], **fields: object) -> int:
    """Migrate in a forked child with `env` set; its exit status (killed: -9)."""
    pid = os.fork()
    if pid == 0:  # the child: nothing may run after the migration, not even pytest's cleanup
        code = 0
        try:
            os.environ.update(env)
            migrate_here(root, source, **fields)
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def only_run(root: Path) -> RunRecord:
    runs = manifest.runs(root)
    assert len(runs) == 1, [r.run for r in runs]
    return runs[0]


def indexed(root: Path) -> set[str]:
    """The paths the index holds, the run's report named by its run id masked."""
    svc = DoryService(settings_for(root))
    try:
        return {RUN_ID.sub("RUN", row[0]) for row in svc.store.conn.execute("SELECT path FROM files")}
    finally:
        svc.close()


def trace(tmp_path: Path, source: Path, **fields: object) -> tuple[Path, list[str]]:
    """(a reference corpus `source` was migrated into uninterrupted, the crash points it passed)."""
    reference = seed_corpus(tmp_path / "reference")
    traced = tmp_path / "trace.txt"
    assert in_child(reference, source, {TRACE_ENV: str(traced)}, **fields) == 0
    seen: Counter[str] = Counter()
    points = []
    for name in traced.read_text().split():
        points.append(f"{name}#{seen[name]}")
        seen[name] += 1
    return reference, points


@pytest.fixture
def traced(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """(the mixed source, its reference corpus, the crash points its migration passes)."""
    source = mixed_source(tmp_path)
    return (source, *trace(tmp_path, source))


def every_crash_point_resumes(
    tmp_path: Path, source: Path, reference: Path, points: list[str], **fields: object
) -> None:
    """Kill a migration of `source` at each point, migrate again: it resumes, and ends as `reference`."""
    expected = comparable(reference)
    expected_run = only_run(reference)
    expected_index = indexed(reference)
    for n, point in enumerate(points):
        root = seed_corpus(tmp_path / f"crash-{n}")
        assert in_child(root, source, {FAULT_ENV: point}, **fields) == -9, f"{point} never fired"
        killed = only_run(root)
        assert killed.state == "interrupted", point

        again = migrate_here(root, source, **fields)

        assert again.resumed and again.run == killed.run, f"{point}: did not resume {killed.run}: {again.run}"
        assert again.created == len(expected_run.created()), point
        record = only_run(root)
        assert record.state == "finished", point
        assert record.done == expected_run.done, f"{point}: items done differ"
        assert sorted(o.path for o in record.created()) == sorted(o.path for o in expected_run.created()), point
        state = comparable(root)
        assert set(state) == set(expected), (
            f"{point}: extra {set(state) - set(expected)}, missing {set(expected) - set(state)}"
        )
        differ = [rel for rel in expected if state[rel] != expected[rel]]
        assert differ == [], f"killed at {point}, these files differ from an uninterrupted run: {differ}"
        assert temp_leftovers(root) == [], f"killed at {point}: temporary files left"
        assert indexed(root) == expected_index, f"killed at {point}: the index differs"


def test_the_trace_walks_every_step_of_every_file(traced: tuple[Path, Path, list[str]]) -> None:
    _, reference, points = traced
    record = only_run(reference)
    files = len(record.created())
    assert files == 11  # 9 notes and evidence of the folder, the image, the zip's note
    for step in ("migrate.intent", "create.temp-written", "create.linked", "migrate.output", "migrate.done"):
        assert f"{step}#{files - 1}" in points and f"{step}#{files}" not in points, step
    assert points[-2:] == ["atomic.temp-written#0", "atomic.replaced#0"]  # the report


def test_a_kill_at_any_crash_point_resumes_to_exactly_the_uninterrupted_corpus(
    tmp_path: Path, traced: tuple[Path, Path, list[str]]
) -> None:
    source, reference, points = traced
    assert len(points) == 57, points
    every_crash_point_resumes(tmp_path, source, reference, points)


def test_a_kill_while_writing_claims_and_pages_resumes_to_the_same_entities_and_claims(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claim artifacts and canonical pages (compiled from observations after the notes): a kill
    among them resumes to the same files, and the claim store holds the same claims. Every file is
    indexed as soon as it lands (a batch of one), so the killed attempt's pages are in the index."""
    monkeypatch.setattr(formats, "READERS", [PeopleReader(), *formats.READERS])
    monkeypatch.setattr(run, "INDEX_BATCH", 1)
    source = people_source(tmp_path)
    reference, points = trace(tmp_path, source, from_format="people-lines")
    assert len(only_run(reference).created()) == 7 and len(points) == 7 * 5 + 2, points
    every_crash_point_resumes(tmp_path, source, reference, points, from_format="people-lines")
    want = claims_in(reference)
    assert len(want) == 3
    for n in range(len(points)):
        assert claims_in(tmp_path / f"crash-{n}") == want, points[n]


def claims_in(root: Path) -> list[tuple[str, str, str]]:
    svc = DoryService(settings_for(root))
    try:
        return sorted((c["entity"], c["kind"], c["statement"]) for c in claims.dump(svc.store.conn))
    finally:
        svc.close()


def test_a_note_after_a_renamed_one_links_to_its_new_name_when_the_run_resumes_between_them(
    tmp_path: Path, traced: tuple[Path, Path, list[str]]
) -> None:
    """Beta.md is renamed (the corpus has a Beta.md) and Zeta.md links to it: a kill after Beta is
    done and before Zeta is written must not leave Zeta linking to the corpus's own Beta."""
    source, _, _ = traced
    root, record_before = tmp_path, None
    for k in range(20):
        root = seed_corpus(tmp_path / f"between-{k}")
        assert in_child(root, source, {FAULT_ENV: f"migrate.done#{k}"}) == -9
        record_before = only_run(root)
        if "file:Beta.md" in record_before.done:
            break
    assert record_before is not None and "file:Zeta.md" not in record_before.done
    migrate_here(root, source)
    zeta = (root / "knowledge/vault/Zeta.md").read_text()
    assert "[[knowledge/vault/Beta (2)|Beta]]" in zeta, zeta
    assert (root / MINE).read_bytes() == b"my own Beta, not the source's\n"


def test_a_resumed_run_indexes_what_the_killed_attempt_wrote(
    tmp_path: Path, traced: tuple[Path, Path, list[str]]
) -> None:
    """The killed attempt wrote notes but never reached its index batch: the rerun indexes them."""
    source, _, points = traced
    last_done = max(int(p.split("#")[1]) for p in points if p.startswith("migrate.done#"))
    root = seed_corpus(tmp_path / "unindexed")
    assert in_child(root, source, {FAULT_ENV: f"migrate.done#{last_done}"}) == -9
    assert len(only_run(root).done) == last_done + 1
    migrate_here(root, source)
    svc = DoryService(settings_for(root))
    try:
        hits = {h.path for h in svc.search(SearchRequest(query="heron", mode="bm25")).hits}
    finally:
        svc.close()
    assert {"knowledge/vault/Alpha.md", "knowledge/vault/data.json.md", "knowledge/vault/table.csv.md"} <= hits
