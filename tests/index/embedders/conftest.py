"""Fixtures for the embedder tests: an isolated cache folder and the installed model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dory.index.embedders.minilm import MiniLMEmbedder
from dory.index.embedders.model_files import packaged_model_dir


@pytest.fixture(scope="session", autouse=True)
def isolated_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Verification stamps go to a temporary folder, never the developer's ~/.cache/dory."""
    folder = tmp_path_factory.mktemp("dory-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DORY_CACHE_DIR", str(folder))
        yield folder


@pytest.fixture(scope="session")
def model_dir() -> Path:
    folder = packaged_model_dir()
    if folder is None:
        pytest.skip("MiniLM model not installed (run `dory models install`)")
    return folder


@pytest.fixture(scope="session")
def minilm(model_dir: Path) -> MiniLMEmbedder:
    """The numpy runtime, loaded once per session (0.2 s)."""
    return MiniLMEmbedder(runtime="numpy")
