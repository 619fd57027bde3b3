"""`dory add`, `remove`, `corpora`, `config show`: the user's list of corpora, and where settings come from.

`add_corpus` and `remove_corpus` write corpora.toml (dory.corpora reads it). They edit the file
with tomlkit, so the user's comments and other entries stay as they are, and replaces it
atomically. A folder added here is read-only by default: Dory keeps its state in the platform
state folder and its generated output in a folder of its own, and never writes into it (a folder
that already holds `.dory/` is a corpus Dory owns: it is listed by name only).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from dory.config import SECTIONS, WRITER_LOCK, Settings, resolve_settings
from dory.corpora import NAME, UserConfig, corpora_file, data_home, state_dir_of, state_home
from dory.corpus.atomic import write_atomic
from dory.corpus.roots import OUTPUT_FOLDERS, config_files
from dory.errors import ConfigError, NotFound, UsageError
from dory.index.lock import WriterLock
from dory.statefolder import STATE_DIR_NAME

SECRET_KEYS = frozenset({"api_key", "token"})


def default_name(folder: Path) -> str:
    """A corpus name from a folder name: `My Vault` is `my-vault`."""
    slug = re.sub(r"[^a-z0-9_-]+", "-", folder.name.lower()).strip("-_")[:64]
    return slug or "notes"


def add_corpus(
    folder: str,
    name: str | None = None,
    output: str | None = None,
    no_output: bool = False,
    writable: bool = False,
    make_default: bool = False,
    replace: bool = False,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """List `folder` in corpora.toml under `name`; returns what was recorded and where things go."""
    env = os.environ if env is None else env
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise UsageError(f"not a folder: {folder}", path=folder)
    root = root.resolve()
    name = name or default_name(root)
    if not NAME.match(name):
        raise UsageError(f"a corpus name is letters, digits, - and _ (up to 64): {name!r}", name=name)
    owned = (root / STATE_DIR_NAME).is_dir()
    entry = _entry(root, name, output, no_output, writable, owned, env)
    config = UserConfig.load(env)
    _check_clashes(config, root, name, replace)
    _write_entry(corpora_file(env), name, entry, make_default or config.default in (None, name) or not config.corpora)
    if entry.get("output"):
        Path(entry["output"]).mkdir(parents=True, exist_ok=True)
    fresh = UserConfig.load(env)
    known = fresh.corpora[name]
    return {
        "name": name,
        "path": str(root),
        "owned": owned,
        "writable": known.writable or owned,
        "output": str(known.output) if known.output else (str(root) if owned else None),
        "state_dir": str(state_dir_of(known, env) or root / STATE_DIR_NAME),
        "default": fresh.default == name,
        "config_file": str(fresh.path),
        "warnings": _shadowed(root) if not owned and known.output else [],
    }


def _entry(
    root: Path, name: str, output: str | None, no_output: bool, writable: bool, owned: bool, env: Mapping[str, str]
) -> dict[str, Any]:
    if output and no_output:
        raise UsageError("--output and --no-output exclude each other")
    if owned:
        if output or no_output or writable:
            raise UsageError(
                f"{root} is a corpus Dory owns already ({STATE_DIR_NAME}/ is inside): it is listed by name only, "
                "its output stays inside it; --output, --no-output and --writable do not apply"
            )
        return {"path": str(root), "owned": True}
    state = state_home(env) / name
    if state.is_relative_to(root):
        raise UsageError(
            f"Dory's state folder for it, {state}, is inside {root}: Dory would write into the folder",
            path=str(state),
        )
    entry: dict[str, Any] = {"path": str(root)}
    if no_output:
        entry["output"] = False
    else:
        out = Path(output).expanduser().resolve() if output else data_home(env) / name
        if out == root or out.is_relative_to(root):
            raise UsageError(
                f"the output folder {out} is inside {root}: Dory would write into the folder; choose one outside it",
                path=str(out),
            )
        entry["output"] = str(out)
    entry["writable"] = writable
    return entry


def _check_clashes(config: UserConfig, root: Path, name: str, replace: bool) -> None:
    same_path = config.by_path(root)
    if same_path is not None and same_path.name != name:
        raise UsageError(f"{root} is known already, as {same_path.name!r}", name=same_path.name)
    if name in config.corpora and not replace:
        known = config.corpora[name]
        raise UsageError(
            f"a corpus named {name!r} is known already ({known.path}); pick another --name, "
            "or --replace to record it anew",
            name=name,
        )


def _parsed(path: Path) -> tomlkit.TOMLDocument:
    """corpora.toml as tomlkit keeps it (comments and order), empty when there is none yet."""
    try:
        return tomlkit.parse(path.read_text(encoding="utf-8") if path.is_file() else "")
    except (OSError, UnicodeDecodeError, TOMLKitError) as exc:
        raise ConfigError(f"{path}: {exc}; fix it, then run this again", path=str(path)) from exc


def _write_entry(path: Path, name: str, entry: dict[str, Any], make_default: bool) -> None:
    doc = _parsed(path)
    prefix = ""
    if make_default:
        if "default" in doc:
            doc["default"] = name
        else:  # a top-level key must come before the first table: the file's first line
            prefix = f'default = "{name}"\n\n'
    corpora = doc.get("corpora")
    if corpora is None:
        corpora = tomlkit.table(is_super_table=True)
        doc.add("corpora", corpora)
    table = tomlkit.table()
    for key, value in entry.items():
        table[key] = value
    old = corpora.get(name)
    if old is not None:  # --replace: the sections it carried stay
        for key, value in old.items():
            if key in SECTIONS:
                table[key] = value
        del corpora[name]
    corpora[name] = table
    write_atomic(path, (prefix + tomlkit.dumps(doc)).encode("utf-8"))


def remove_corpus(name: str, delete_state: bool = False, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Take `name` off corpora.toml. The notes are never touched; nor is the output folder (it holds
    the user's digests and captured sessions). With `delete_state`, the index Dory made for it in the
    platform state folder goes too (it is derived: `dory add` and `reindex` make it again); a state
    folder the user chose is left alone, and one a running daemon holds is refused."""
    env = os.environ if env is None else env
    config = UserConfig.load(env)
    known = config.by_name(name)
    if known is None:
        listed = ", ".join(sorted(config.corpora)) or "none"
        raise NotFound(f"no corpus named {name!r} in {config.path} (known: {listed})", name=name)
    state = state_dir_of(known, env)
    ours = state is not None and known.state_dir is None  # the platform folder `dory add` chose
    deleted = False
    if delete_state and ours and state is not None and state.is_dir():
        with WriterLock(state / WRITER_LOCK):  # IndexLocked while a daemon or a reindex owns it
            shutil.rmtree(state)
        deleted = True
    _drop_entry(config.path, name)
    kept = [str(p) for p in (known.output, None if deleted else state) if p is not None and p.exists()]
    return {
        "name": name,
        "path": str(known.path),
        "config_file": str(config.path),
        "state_deleted": str(state) if deleted else None,
        "kept": kept,
        "default": config.default == name,
    }


def _drop_entry(path: Path, name: str) -> None:
    doc = _parsed(path)
    del doc["corpora"][name]
    if doc.get("default") == name:
        del doc["default"]
    write_atomic(path, tomlkit.dumps(doc).encode("utf-8"))


def _shadowed(root: Path) -> list[str]:
    """Folders of the vault with the names of Dory's own output folders: they are not read."""
    return [
        f"{root / folder} has the name of a folder Dory generates: Dory reads that from its output "
        "folder, so notes in it are not indexed"
        for folder in OUTPUT_FOLDERS
        if (root / folder).is_dir()
    ]


def list_corpora(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    env = os.environ if env is None else env
    config = UserConfig.load(env)
    corpora = [
        {
            "name": known.name,
            "path": str(known.path),
            "owned": known.owned,
            "read_only": known.read_only,
            "output": str(known.output) if known.output else None,
            "state_dir": str(state_dir_of(known, env) or known.path / STATE_DIR_NAME),
            "default": config.default == known.name,
            "exists": known.path.is_dir(),
        }
        for known in config.corpora.values()
    ]
    return {"config_file": str(config.path), "default": config.default, "corpora": corpora}


def config_report(
    corpus: str | None, overrides: Mapping[str, Any], env: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Every resolved setting with where it came from (default, dory.toml, corpora.toml, env, command line)."""
    resolved = resolve_settings(corpus, overrides, env)
    settings, sources = resolved.settings, resolved.sources
    rows = [
        _row("corpus", str(settings.corpus), sources["corpus"]),
        _row("name", settings.name, sources.get("name", "default")),
        _row("read_only", settings.read_only, sources.get("read_only", "default (a corpus Dory owns)")),
        _row("output", _output(settings), sources.get("output", "default (inside the corpus)")),
        _row("state_dir", str(settings.state_dir), sources["state_dir"]),
    ]
    dumped = settings.model_dump(mode="json")
    for section in SECTIONS:
        for key, value in sorted(dumped[section].items()):
            dotted = f"{section}.{key}"
            shown = "***" if key in SECRET_KEYS and value else value
            rows.append(_row(dotted, shown, sources.get(dotted, "default")))
    files = [str(path) for path in config_files(settings) if path.is_file()]
    return {"corpus": str(settings.corpus), "config_files": files, "settings": rows}


def _output(settings: Settings) -> str | None:
    return str(settings.output_root) if settings.output_root else None


def _row(key: str, value: Any, source: str) -> dict[str, Any]:
    return {"key": key, "value": value, "source": source}
