"""Which corpus a command means: the user's list of known corpora, and discovery from the current folder.

The user config (`corpora.toml` in the platform config folder, `$XDG_CONFIG_HOME/dory/` on Linux)
lists corpora by name. An entry is usually a folder of notes Dory must not write into (an Obsidian
vault added with `dory add`): its derived state lives in the platform state folder
(`$XDG_STATE_HOME/dory/<name>`), its generated output (digests, wiki, proposals, captured sessions)
in an output folder of its own (`$XDG_DATA_HOME/dory/<name>` unless the entry says otherwise, or
none), and writes into it are refused unless `writable = true`. An entry with `owned = true` is a
corpus Dory owns (`.dory/` inside, as `dory init` makes), known by name only.

    default = "notes"

    [corpora.notes]
    path = "/home/me/Obsidian"
    output = "/home/me/.local/share/dory/notes"   # false: no generated output at all
    writable = false

    [corpora.notes.jobs]                          # any dory.toml section, for this corpus only
    dream = "off"

Discovery, in order: `--corpus` (a folder, or a name from the list); the nearest folder at or above
the current one that holds `dory.toml` or `.dory/`, or is a known corpus's folder (as git finds its
repository); `DORY_CORPUS` (a folder or a name); the list's default; last, the current folder when
it holds `core/` (an older marker, never looked for above it: code repositories have `core/` too).
A folder that is a known corpus's folder always gets that entry, however it was named.

Standard library and platformdirs only: the agent hooks locate their corpus's daemon with this
before anything imports pydantic (see dory/statefolder.py).
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from dory.errors import ConfigError, CorpusNotFound
from dory.statefolder import STATE_DIR_NAME

APP = "dory"
CORPORA_FILE = "corpora.toml"
CONFIG_FILE = "dory.toml"
# A name is one plain word: anything with a slash, a dot or a tilde in front is a folder.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
ENTRY_KEYS = frozenset({"path", "output", "writable", "owned", "state_dir"})


def _xdg(env: Mapping[str, str], variable: str, fallback: str) -> Path:
    """`$variable/dory` when the variable holds an absolute path (as XDG says), else platformdirs' folder."""
    value = env.get(variable, "")
    if value and os.path.isabs(value):
        return Path(value) / APP
    return Path(fallback)


def config_home(env: Mapping[str, str]) -> Path:
    return _xdg(env, "XDG_CONFIG_HOME", platformdirs.user_config_dir(APP))


def state_home(env: Mapping[str, str]) -> Path:
    return _xdg(env, "XDG_STATE_HOME", platformdirs.user_state_dir(APP))


def data_home(env: Mapping[str, str]) -> Path:
    return _xdg(env, "XDG_DATA_HOME", platformdirs.user_data_dir(APP))


def corpora_file(env: Mapping[str, str]) -> Path:
    return config_home(env) / CORPORA_FILE


@dataclass(frozen=True)
class KnownCorpus:
    """One entry of corpora.toml, with its defaults filled in."""

    name: str
    path: Path
    owned: bool = False
    writable: bool = False
    output: Path | None = None  # None: no generated output (or, owned, inside the corpus)
    state_dir: Path | None = None  # None: `.dory/` inside (owned) or the platform state folder
    settings: dict[str, Any] = field(default_factory=dict)  # [corpora.NAME.<section>] tables
    source: Path = Path(CORPORA_FILE)  # the corpora.toml it came from

    @property
    def read_only(self) -> bool:
        return not (self.owned or self.writable)


@dataclass
class UserConfig:
    path: Path
    default: str | None = None
    corpora: dict[str, KnownCorpus] = field(default_factory=dict)

    @classmethod
    def load(cls, env: Mapping[str, str]) -> UserConfig:
        """The user's corpora.toml (empty when there is none). A file that does not parse, or an
        entry without a usable path, is a ConfigError naming the file."""
        path = corpora_file(env)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls(path)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"{path}: {exc}", path=str(path)) from exc
        default = data.get("default")
        if default is not None and not isinstance(default, str):
            raise ConfigError(f"{path}: default must be the name of a corpus", path=str(path))
        tables = data.get("corpora", {})
        if not isinstance(tables, dict):
            raise ConfigError(f"{path}: [corpora] must hold one table per corpus", path=str(path))
        corpora = {name: _entry(path, name, table, env) for name, table in tables.items()}
        return cls(path, default, corpora)

    def by_name(self, name: str) -> KnownCorpus | None:
        return self.corpora.get(name)

    def by_path(self, folder: Path) -> KnownCorpus | None:
        """The entry whose folder is `folder` (both resolved)."""
        folder = folder.resolve()
        for known in self.corpora.values():
            if known.path == folder:
                return known
        return None


def _entry(source: Path, name: str, table: Any, env: Mapping[str, str]) -> KnownCorpus:
    where = f"{source}: [corpora.{name}]"
    if not NAME.match(name):
        raise ConfigError(f"{where}: a corpus name is letters, digits, - and _ (up to 64)", corpus=name)
    if not isinstance(table, dict) or not isinstance(table.get("path"), str) or not table["path"]:
        raise ConfigError(f'{where} needs path = "<folder>"', corpus=name)
    path = Path(table["path"]).expanduser().resolve()
    owned = _flag(where, table, "owned")
    output: Path | None
    raw_output = table.get("output", None if owned else str(data_home(env) / name))
    if raw_output is False or owned:
        output = None
    elif isinstance(raw_output, str) and raw_output:
        output = Path(raw_output).expanduser().resolve()
    else:
        raise ConfigError(f"{where}: output is a folder, or false for no generated output", corpus=name)
    state = table.get("state_dir")
    if state is not None and not (isinstance(state, str) and state):
        raise ConfigError(f"{where}: state_dir is a folder", corpus=name)
    return KnownCorpus(
        name=name,
        path=path,
        owned=owned,
        writable=_flag(where, table, "writable"),
        output=output,
        state_dir=Path(state).expanduser().resolve() if state else None,
        settings={key: value for key, value in table.items() if key not in ENTRY_KEYS},
        source=source,
    )


def _flag(where: str, table: dict[str, Any], key: str) -> bool:
    value = table.get(key, False)
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: {key} is true or false", key=key)
    return value


@dataclass(frozen=True)
class Located:
    """The corpus a command works on, how it was found, and its entry in corpora.toml if it has one."""

    root: Path
    how: str
    known: KnownCorpus | None = None


def _is_marked(folder: Path) -> bool:
    return (folder / CONFIG_FILE).is_file() or (folder / STATE_DIR_NAME).is_dir()


def locate(explicit: str | os.PathLike[str] | None, env: Mapping[str, str], cwd: Path | None = None) -> Located:
    """The corpus: see the module docstring for the order."""
    config = UserConfig.load(env)
    if explicit:
        return _named(str(explicit), "--corpus", config)
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        known = config.by_path(folder)
        if known is not None:
            return Located(folder, f"the known corpus {known.name!r}, found from {here}", known)
        if _is_marked(folder):
            return Located(folder, f"found from {here} (it holds {_marker(folder)})")
    if env.get("DORY_CORPUS"):
        return _named(env["DORY_CORPUS"], "DORY_CORPUS", config)
    if config.default:
        known = config.by_name(config.default)
        if known is None:
            raise ConfigError(f"{config.path}: default names no corpus: {config.default!r}", corpus=config.default)
        return _checked(Located(known.path, f"the default corpus {known.name!r} in {config.path}", known))
    if (here / "core").is_dir():
        return Located(here, "the current folder (it holds core/)")
    raise CorpusNotFound(
        "no corpus here: pass --corpus DIR, set DORY_CORPUS, or run `dory init DIR` to create one",
        path=str(here),
    )


def _marker(folder: Path) -> str:
    return CONFIG_FILE if (folder / CONFIG_FILE).is_file() else STATE_DIR_NAME + "/"


def _named(value: str, how: str, config: UserConfig) -> Located:
    """A folder, or the name of a known corpus (a folder of that name in the current folder wins)."""
    root = Path(value).expanduser()
    if root.is_dir():
        resolved = root.resolve()
        known = config.by_path(resolved)
        return Located(resolved, how if known is None else f"{how} (the known corpus {known.name!r})", known)
    if NAME.match(value) and (known := config.by_name(value)) is not None:
        return _checked(Located(known.path, f"{how} {value!r} in {config.path}", known))
    if root.exists():
        raise CorpusNotFound(f"{root} is a file, not a corpus folder", path=str(root))
    if NAME.match(value) and config.corpora:
        raise CorpusNotFound(
            f"corpus folder does not exist: {root} (nor is a corpus named {value!r} in {config.path}: "
            f"{', '.join(sorted(config.corpora))})",
            path=str(root),
        )
    raise CorpusNotFound(f"corpus folder does not exist: {root}", path=str(root))


def _checked(located: Located) -> Located:
    if not located.root.is_dir():
        name = located.known.name if located.known else str(located.root)
        raise CorpusNotFound(
            f"the folder of corpus {name!r} is gone: {located.root} (fix its path in corpora.toml)",
            path=str(located.root),
        )
    return located


def state_dir_of(known: KnownCorpus | None, env: Mapping[str, str]) -> Path | None:
    """Where a known corpus keeps its derived state when no flag or DORY_STATE_DIR says otherwise;
    None for a corpus that keeps it inside (`.dory/`)."""
    if known is None:
        return None
    if known.state_dir is not None:
        return known.state_dir
    return None if known.owned else state_home(env) / known.name


def registration(found: Located) -> dict[str, Any]:
    """The Settings fields a corpora.toml entry decides (none for a corpus Dory owns)."""
    known = found.known
    if known is None:
        return {}
    fields: dict[str, Any] = {"name": known.name, "user_config": known.source}
    if not known.owned:
        fields.update(owned=False, read_only=known.read_only, output_dir=known.output, no_output=known.output is None)
    return fields


def corpus_sources(found: Located, state_flag: Any, env: Mapping[str, str]) -> dict[str, str]:
    """Where the corpus-level settings came from (`dory config show`)."""
    known = found.known
    entry = f"{known.source} [corpora.{known.name}]" if known else ""
    if state_flag:
        state = "command line (--state-dir)"
    elif env.get("DORY_STATE_DIR"):
        state = "env DORY_STATE_DIR"
    elif known is not None and state_dir_of(known, env) is not None:
        state = entry
    else:
        state = "default (.dory/ inside the corpus)"
    out = {"state_dir": state}
    if known is not None:
        out["name"] = entry
        if not known.owned:
            out.update(read_only=entry, output=entry)
    return out
