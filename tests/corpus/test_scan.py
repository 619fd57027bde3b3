import os
from pathlib import Path

from dory.corpus.paths import IgnoreRules
from dory.corpus.scan import scan_corpus, scan_paths


def test_scan_lists_notes_and_reports_links(tmp_path: Path) -> None:
    root = tmp_path / "c"
    (root / "a").mkdir(parents=True)
    (root / "a" / "one.md").write_text("one")
    (root / "a" / "image.png").write_bytes(b"\x89PNG")
    (root / ".git").mkdir()
    (root / ".git" / "x.md").write_text("no")
    (root / "a" / ".n.md.swp").write_text("swap")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.md").write_text("outside")
    os.symlink(outside, root / "out")
    os.symlink(root / "a", root / "a" / "loop")  # a folder containing itself
    os.symlink(root / "a" / "one.md", root / "alias.md")  # inside: followed
    result = scan_corpus(root, IgnoreRules())
    assert sorted(result.files) == ["a/one.md", "alias.md"]
    reasons = {s.path: s.reason for s in result.skipped}
    assert reasons == {"out": "symlink_outside", "a/loop": "symlink_loop"}
    assert result.complete


def test_unreadable_folder_marks_scan_incomplete(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        # root reads everything; simulate with a missing corpus instead
        result = scan_corpus(tmp_path / "missing", IgnoreRules())
        assert not result.complete
        return
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        result = scan_corpus(tmp_path, IgnoreRules())
        assert not result.complete
    finally:
        locked.chmod(0o755)


def test_hard_linked_note_is_skipped_and_listed_again_once_it_has_one_name(tmp_path: Path) -> None:
    """Issue 15, item 6. The skip carries no size or mtime: removing the other name changes neither,
    and the note must not stay skipped as an unchanged bad file."""
    outside = tmp_path / "private.txt"
    outside.write_text("the door code is 4711\n")
    root = tmp_path / "c"
    root.mkdir()
    (root / "plain.md").write_text("plain")
    os.link(outside, root / "linked.md")
    result = scan_corpus(root, IgnoreRules())
    assert sorted(result.files) == ["plain.md"]
    assert [(s.path, s.reason, s.size, s.mtime_ns) for s in result.skipped] == [("linked.md", "hard_link", None, None)]
    outside.unlink()
    assert sorted(scan_corpus(root, IgnoreRules()).files) == ["linked.md", "plain.md"]


def test_a_note_a_live_write_has_set_aside_is_still_scanned(tmp_path: Path) -> None:
    """Between a swap's rename aside and its link into place nothing is at the note's path: a scan
    then (the daemon's, while another process writes) must not drop the note from the index."""
    root = tmp_path / "c"
    (root / "a").mkdir(parents=True)
    aside = root / "a" / f".plan.md.dory-old-{os.getpid()}-0123abcd.tmp"
    aside.write_text("# Plan\n\nold\n")
    (root / "a" / f".kept.md.dory-old-{os.getpid()}-0123abcd.tmp").write_text("# Kept, also aside\n")
    (root / "a" / "kept.md").write_text("# Kept\n")  # the new version already linked in: listed once
    full = scan_corpus(root, IgnoreRules())
    assert sorted(full.files) == ["a/kept.md", "a/plan.md"]
    assert full.files["a/plan.md"].size == aside.stat().st_size
    partial = scan_paths(root, IgnoreRules(), ["a/plan.md"])
    assert sorted(partial.files) == ["a/plan.md"]
    aside.unlink()  # the write was a removal: now the note is gone
    assert sorted(scan_corpus(root, IgnoreRules()).files) == ["a/kept.md"]
    assert sorted(scan_paths(root, IgnoreRules(), ["a/plan.md"]).files) == []
