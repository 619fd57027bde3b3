"""A source named as a zip that is not one (a download cut short) is a `bad_zip` problem, never a
file copied into the corpus as an attachment."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from support.migration import Migrate, tree_hashes


def test_a_truncated_zip_is_a_bad_zip_problem_and_nothing_is_created(
    tmp_path: Path, corpus: Path, migrate: Migrate
) -> None:
    whole = io.BytesIO()
    with zipfile.ZipFile(whole, "w") as archive:
        archive.writestr("Note.md", "# Note\n\n" + "words " * 2000)
    cut = tmp_path / "export.zip"
    cut.write_bytes(whole.getvalue()[: len(whole.getvalue()) // 2])
    before = tree_hashes(corpus)
    res = migrate(cut)
    assert [(p.source, p.code) for p in res.problems] == [("export.zip", "bad_zip")]
    assert (res.run, res.created, res.items) == (None, 0, {})
    assert tree_hashes(corpus) == before
