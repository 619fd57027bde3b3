"""The two folders of a corpus added with `dory add` (dory/corpus/roots.py): the vault is read, Dory's own
folders are in the output folder, and the durable index covers both as one tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from dory.config import Settings
from dory.corpus.roots import check_writable, read_root, write_root
from dory.errors import NotFound, ReadOnlyCorpus
from dory.models import GetRequest, ReindexRequest
from dory.service import DoryService


def write_files(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


VAULT = {
    "Welcome.md": "# Welcome\nthe vault's own note\n",
    "inbox/Idea.md": "# Idea\nthe vault's own inbox is read\n",
    "wiki/Mine.md": "# Mine\na vault folder named like Dory's wiki is not read\n",
    "digests/old.md": "# Old\na vault folder named like Dory's digests is not read\n",
}
OUTPUT = {
    "digests/daily/2026-11-20.md": "# Daily digest 2026-11-20\ngenerated words\n",
    "inbox/maintenance/2026-11-21.md": "# Maintenance report\nreport words\n",
    "wiki/index.md": "# Wiki\nthe compiled wiki is never indexed\n",
}


def added(tmp_path: Path, output: bool = True, read_only: bool = True) -> Settings:
    vault = write_files(tmp_path / "vault", VAULT)
    out = write_files(tmp_path / "output", OUTPUT) if output else None
    return Settings(
        corpus=vault,
        state_dir=tmp_path / "state",
        owned=False,
        read_only=read_only,
        output_dir=out,
        no_output=not output,
        embedder={"backend": "none"},
    )


def indexed(svc: DoryService) -> list[str]:
    return sorted(row[0] for row in svc.store.conn.execute("SELECT path FROM files"))


def test_the_index_is_the_vault_without_dorys_folders_plus_the_outputs_notes(tmp_path: Path) -> None:
    svc = DoryService(added(tmp_path))
    try:
        svc.reindex(ReindexRequest())
        assert indexed(svc) == [
            "Welcome.md",
            "digests/daily/2026-11-20.md",
            "inbox/Idea.md",
            "inbox/maintenance/2026-11-21.md",
        ]
        assert svc.get(GetRequest(path="digests/daily/2026-11-20.md")).content.endswith("generated words")
        assert svc.get(GetRequest(path="wiki/index.md")).title == "Wiki"  # read from the output folder
        assert svc.get(GetRequest(path="inbox/Idea.md")).title == "Idea"  # the vault's own inbox
        # The watcher names a vault folder above Dory's: the output's notes under it stay indexed.
        svc.index_paths(["inbox"])
        assert "inbox/maintenance/2026-11-21.md" in indexed(svc)
        (tmp_path / "output/inbox/maintenance/2026-11-21.md").unlink()
        svc.index_paths(["inbox"])
        assert "inbox/maintenance/2026-11-21.md" not in indexed(svc)
    finally:
        svc.close()
    assert not (tmp_path / "vault/.dory").exists() and (tmp_path / "state/index.sqlite").is_file()


def test_a_missing_output_folder_holds_nothing_and_blocks_no_deletion(tmp_path: Path) -> None:
    settings = added(tmp_path)
    svc = DoryService(settings)
    try:
        svc.reindex(ReindexRequest())
        for rel in OUTPUT:
            (tmp_path / "output" / rel).unlink()
        (tmp_path / "vault/Welcome.md").unlink()
        for folder in sorted((tmp_path / "output").rglob("*"), reverse=True):
            folder.rmdir()
        (tmp_path / "output").rmdir()
        report = svc.reindex(ReindexRequest())
        assert report.deleted == 3 and indexed(svc) == ["inbox/Idea.md"]
    finally:
        svc.close()


def test_paths_are_read_and_written_where_they_belong(tmp_path: Path) -> None:
    settings = added(tmp_path)
    vault, output = tmp_path / "vault", tmp_path / "output"
    assert read_root(settings, "digests/daily/x.md") == output and read_root(settings, "Welcome.md") == vault
    assert write_root(settings, "logs/sessions/a/b/c.md") == output
    with pytest.raises(ReadOnlyCorpus) as info:
        write_root(settings, "Welcome.md")
    assert info.value.code == "read_only_corpus" and str(vault) in info.value.message
    writable = added(tmp_path / "w", read_only=False)
    assert write_root(writable, "Welcome.md") == tmp_path / "w/vault"
    check_writable(writable, "Welcome.md")


def test_without_an_output_folder_dorys_paths_are_nowhere(tmp_path: Path) -> None:
    settings = added(tmp_path, output=False)
    with pytest.raises(NotFound):
        read_root(settings, "digests/daily/x.md")
    with pytest.raises(ReadOnlyCorpus) as info:
        write_root(settings, "inbox/proposed/p.json")
    assert "no output folder" in info.value.message
    svc = DoryService(settings)
    try:
        svc.reindex(ReindexRequest())
        assert indexed(svc) == ["Welcome.md", "inbox/Idea.md"]
    finally:
        svc.close()


def test_a_corpus_dory_owns_keeps_everything_in_one_folder(tmp_path: Path) -> None:
    root = write_files(tmp_path / "corpus", VAULT)
    settings = Settings(corpus=root, state_dir=root / ".dory")
    assert settings.output_root == root and settings.owned and not settings.read_only
    assert read_root(settings, "digests/old.md") == root and write_root(settings, "Welcome.md") == root
