"""Fixtures for migration tests: a corpus and a service to migrate into, and the shared real samples.

The real exports live outside the repository (../shared/bench/migration.tar.gz); tests that read them
use `samples` and skip when the archive is absent. Everything else builds small fixtures in tmp dirs.
"""

from __future__ import annotations

import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.migration import Migrate

from dory.config import load_settings
from dory.models import MigrateRequest, MigrateResponse
from dory.service import DoryService

ARCHIVE = Path(__file__).resolve().parents[2].parent / "shared" / "bench" / "migration.tar.gz"


@pytest.fixture(scope="session")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The unpacked real samples (`<format>/<source>/…`, see their README); skips without the archive."""
    if not ARCHIVE.is_file():
        pytest.skip(f"shared migration samples not found: {ARCHIVE}")
    base = tmp_path_factory.mktemp("migration-samples")
    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(base, filter="data")
    return base / "migration"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """An empty corpus folder (the service runs lexical only: no model needed)."""
    root = tmp_path / "corpus"
    root.mkdir()
    return root


@pytest.fixture
def service(corpus: Path) -> Iterator[DoryService]:
    svc = DoryService(load_settings(corpus, {"embedder.backend": "none"}, env={}))
    try:
        yield svc
    finally:
        svc.close()


@pytest.fixture
def migrate(service: DoryService) -> Migrate:
    """migrate(source, **request fields) through the real service."""

    def run(source: Path, **fields: object) -> MigrateResponse:
        return service.migrations.migrate(MigrateRequest(source=str(source), **fields))  # type: ignore[arg-type]

    return run
