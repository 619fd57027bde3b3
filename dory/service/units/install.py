"""`dory ops install-units`: write Dory's systemd user units for one corpus, then enable them.

What it writes, for the corpus named NAME:
- the two unit templates, `dory-watch@.service` and `dory-http@.service`, in the user unit folder
  (`$XDG_CONFIG_HOME/systemd/user`, or --unit-dir), with the absolute path of the running `dory`;
  both are written whichever one is enabled, so switching between them is one systemctl command;
- `~/.config/dory/units/NAME.env` with `DORY_CORPUS=<absolute path>` (the units read
  `%h/.config/dory/units/%i.env`; systemd expands nothing inside the file, hence the absolute path).
Then, unless --no-enable: `systemctl --user daemon-reload`, `disable --now` of the other kind of
instance for this corpus (one writer per corpus; the units also conflict), `enable --now` of the
one asked for, and a `restart` of it when a file it reads was changed (a running daemon would
otherwise keep the old settings).

Decisions:
- Everything is planned before anything is written: a refusal (a unit file Dory did not write, or
  one edited since: `unit_file_not_ours`; the name already serving another corpus: `unit_name_taken`)
  leaves every file as it was. --force overrides both, and the report says which files it replaced.
- A re-run is idempotent: an unchanged file is not rewritten, a changed one is reported with a diff.
- The environment file is shared with the user: only the DORY_CORPUS line (and DORY_STATE_DIR when a
  state folder was given) is Dory's; every other line is kept as it is.
- When systemctl is missing or no user manager answers, the files stay written and the report carries
  `systemd_unavailable` (exit 5) with the commands to run later; a command systemd refuses is
  `systemctl_failed`. The caller decides how to show the report and the problem together.
"""

from __future__ import annotations

import difflib
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dory.corpus.atomic import write_atomic
from dory.errors import (
    ConfigError,
    DoryError,
    SystemctlFailed,
    SystemdUnavailable,
    UnitFileNotOurs,
    UnitNameTaken,
    storage_error,
)
from dory.service.units.render import (
    HTTP_TEMPLATE,
    TEMPLATES,
    WATCH_TEMPLATE,
    check_name,
    env_header,
    env_value,
    instance_unit,
    is_ours_unedited,
    parse_env_value,
    render_unit,
    slug,
)

SYSTEMCTL_TIMEOUT_S = 120
OLD_UNITS = ("dory-watch.service", "dory-http.service")


@dataclass(frozen=True)
class UnitsRequest:
    corpus: Path  # absolute, an existing folder
    dory: Path  # the absolute path of the `dory` executable the units run
    home: Path
    config_home: Path  # $XDG_CONFIG_HOME, else ~/.config
    name: str | None = None  # default: the slug of the corpus folder's name
    unit_dir: Path | None = None  # default: config_home/systemd/user
    state_dir: Path | None = None
    http: bool = False
    enable: bool = True
    dry_run: bool = False
    force: bool = False


@dataclass
class FileChange:
    path: Path
    role: str  # "unit" or "environment"
    action: str  # created, unchanged, updated (Dory's own file) or replaced (--force over another)
    content: str
    mode: int
    diff: list[str] = field(default_factory=list)


@dataclass
class CommandRun:
    argv: list[str]
    returncode: int | None = None  # None: not run (dry run, --no-enable, or an earlier step failed)
    output: str = ""


@dataclass
class UnitsReport:
    name: str
    corpus: Path
    dory: Path
    unit: str
    dry_run: bool
    files: list[FileChange]
    commands: list[CommandRun]
    enabled: bool = False
    notes: list[str] = field(default_factory=list)
    problem: DoryError | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "corpus": str(self.corpus),
            "dory": str(self.dory),
            "unit": self.unit,
            "dry_run": self.dry_run,
            "enabled": self.enabled,
            "files": [
                {"path": str(c.path), "role": c.role, "action": c.action, "diff": c.diff, "content": c.content}
                for c in self.files
            ],
            "commands": [{"argv": c.argv, "returncode": c.returncode, "output": c.output} for c in self.commands],
            "notes": self.notes,
        }


def install_units(req: UnitsRequest) -> UnitsReport:
    """Plan every file, write the changed ones (unless a dry run), then enable the instance (unless
    --no-enable or a dry run). Raises the refusals; returns systemctl's problems in the report."""
    name = check_name(req.name) if req.name is not None else slug(req.corpus.name)
    unit_dir = req.unit_dir or req.config_home / "systemd" / "user"
    env_path = req.home / ".config" / "dory" / "units" / f"{name}.env"
    files = [plan_unit(unit_dir / template, render_unit(template, req.dory), req.force) for template in TEMPLATES]
    files.append(plan_env(env_path, name, req.corpus, req.state_dir, req.force))
    unit = instance_unit(HTTP_TEMPLATE if req.http else WATCH_TEMPLATE, name)
    other = instance_unit(WATCH_TEMPLATE if req.http else HTTP_TEMPLATE, name)
    changed = any(change.action in ("updated", "replaced") for change in files)
    argvs = [["daemon-reload"], ["disable", "--now", other], ["enable", "--now", unit]]
    if changed:
        argvs.append(["restart", unit])
    report = UnitsReport(
        name=name,
        corpus=req.corpus,
        dory=req.dory,
        unit=unit,
        dry_run=req.dry_run,
        files=files,
        commands=[CommandRun(["systemctl", "--user", *argv]) for argv in argvs] if req.enable else [],
        notes=notes_for(unit_dir, req.config_home),
    )
    if any(change.role == "unit" and change.action in ("updated", "replaced") for change in files):
        report.notes.append(
            "an instance of another corpus runs the old unit until it restarts: "
            "systemctl --user restart 'dory-watch@*.service' 'dory-http@*.service'"
        )
    if req.dry_run:
        return report
    for change in files:
        write(change)
    if report.commands:
        report.problem = run_systemctl(report)
        report.enabled = report.problem is None
    return report


def plan_unit(path: Path, content: str, force: bool) -> FileChange:
    """What writing `content` to `path` means: created, unchanged, updated, or (--force) replaced."""
    old = read_existing(path)
    if old is None:
        return FileChange(path, "unit", "created", content, 0o644)
    if old == content:
        return FileChange(path, "unit", "unchanged", content, 0o644)
    diff = unified_diff(old, content, path)
    if is_ours_unedited(old):
        return FileChange(path, "unit", "updated", content, 0o644, diff)
    if not force:
        raise UnitFileNotOurs(
            f"{path} is there and Dory did not write it (or it was edited since): it is left as it is. "
            "Move it away, or pass --force to replace it; to change a unit Dory wrote, use a drop-in "
            "(systemctl --user edit UNIT), which a re-run keeps",
            path=str(path),
        )
    return FileChange(path, "unit", "replaced", content, 0o644, diff)


def plan_env(path: Path, name: str, corpus: Path, state_dir: Path | None, force: bool) -> FileChange:
    """The environment file: Dory's DORY_CORPUS (and DORY_STATE_DIR) lines set, every other line kept.
    A file that names another corpus is refused unless --force (the name would change corpus)."""
    wanted = {"DORY_CORPUS": env_value(corpus, "the corpus path")}
    if state_dir is not None:
        wanted["DORY_STATE_DIR"] = env_value(state_dir, "the state folder's path")
    old = read_existing(path)
    if old is None:
        content = env_header(name) + "".join(f"{key}={value}\n" for key, value in wanted.items())
        return FileChange(path, "environment", "created", content, 0o600)
    lines = old.splitlines()
    current = env_values(lines).get("DORY_CORPUS")
    other_corpus = current is not None and current != str(corpus)
    if other_corpus and not force:
        raise UnitNameTaken(
            f"the name {name!r} already serves the corpus {current} ({path}): choose another --name, "
            "or pass --force to point it at this corpus",
            name=name,
            corpus=current,
            path=str(path),
        )
    for key, value in wanted.items():
        lines = set_env_line(lines, key, value)
    content = "\n".join(lines) + "\n"
    if content == old:
        return FileChange(path, "environment", "unchanged", content, 0o600)
    action = "replaced" if other_corpus else "updated"
    return FileChange(path, "environment", action, content, 0o600, unified_diff(old, content, path))


def set_env_line(lines: list[str], key: str, value: str) -> list[str]:
    """`lines` with `key` set to `value`: its last line rewritten in place (earlier ones, which systemd
    would ignore, dropped), or a new line at the end; a line already saying the same stays as it is."""
    where = [i for i, line in enumerate(lines) if env_key(line) == key]
    if not where:
        return [*lines, f"{key}={value}"]
    last = where[-1]
    kept = [line for i, line in enumerate(lines) if i not in where[:-1]]
    if env_values([lines[last]]).get(key) != parse_env_value(value):
        kept[last - len(where[:-1])] = f"{key}={value}"
    return kept


def env_key(line: str) -> str | None:
    """The variable a line of an environment file sets, None for comments and blank lines."""
    stripped = line.strip()
    if not stripped or stripped[0] in "#;" or "=" not in stripped:
        return None
    return stripped.split("=", 1)[0].strip()


def env_values(lines: list[str]) -> dict[str, str]:
    """The variables of an environment file (the last line wins, as in systemd)."""
    return {key: parse_env_value(line.split("=", 1)[1]) for line in lines if (key := env_key(line)) is not None}


def read_existing(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        return ""  # not text: certainly not a file Dory wrote, so it is refused unless --force
    except OSError as exc:
        raise storage_error(exc, str(path)) from exc


def unified_diff(old: str, new: str, path: Path) -> list[str]:
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), str(path), str(path), n=0, lineterm="")
    return [line for line in lines if not line.startswith(("---", "+++", "@@"))]


def write(change: FileChange) -> None:
    if change.action == "unchanged":
        return
    try:
        write_atomic(change.path, change.content.encode("utf-8"), change.mode)
    except OSError as exc:
        raise storage_error(exc, str(change.path)) from exc


def notes_for(unit_dir: Path, config_home: Path) -> list[str]:
    """What the user should know besides the files: a unit folder systemd does not read, and the
    single units of earlier versions, which would run a second daemon."""
    notes = []
    default = config_home / "systemd" / "user"
    if unit_dir.resolve() != default.resolve():
        notes.append(
            f"{unit_dir} is not {default}, where systemd looks for your user units: "
            "systemctl will not find these units unless that folder is one it reads"
        )
    for old in OLD_UNITS:
        if (unit_dir / old).exists() or (default / old).exists():
            notes.append(
                f"an older single unit, {old}, is installed: it runs a daemon of its own. Remove it: "
                f"systemctl --user disable --now {old}, then delete it from {default}"
            )
    return notes


def run_systemctl(report: UnitsReport) -> DoryError | None:
    """Run the report's systemctl commands in order, recording each; the problem, if any."""
    systemctl = shutil.which("systemctl")
    if systemctl is None:
        return SystemdUnavailable(
            "systemctl not found: the files are written but nothing is enabled. " + later(report.unit),
            files=[str(change.path) for change in report.files],
        )
    for command in report.commands:
        argv = [systemctl, *command.argv[1:]]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=SYSTEMCTL_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return SystemctlFailed(f"{' '.join(command.argv)} did not complete: {exc}", argv=command.argv)
        command.returncode = done.returncode
        command.output = (done.stdout + done.stderr).strip()
        if done.returncode == 0:
            continue
        if command.argv[2] == "daemon-reload":
            return SystemdUnavailable(
                f"no systemd user manager answers ({command.output or 'no message'}): the files are written but "
                "nothing is enabled. " + later(report.unit),
                files=[str(change.path) for change in report.files],
                stderr=command.output,
            )
        if command.argv[2] == "disable":
            report.notes.append(f"{' '.join(command.argv)} failed ({command.output}); continuing")
            continue
        return SystemctlFailed(
            f"{' '.join(command.argv)} failed: {command.output or 'no message'}; "
            f"see journalctl --user -u {report.unit}",
            argv=command.argv,
            stderr=command.output,
        )
    return None


def later(unit: str) -> str:
    return (
        "From a login session with a systemd user manager, run: systemctl --user daemon-reload && "
        f"systemctl --user enable --now {unit}"
    )


def default_config_home(env: Mapping[str, str], home: Path) -> Path:
    """$XDG_CONFIG_HOME when it is an absolute path (the XDG rule), else ~/.config."""
    value = env.get("XDG_CONFIG_HOME", "")
    return Path(value) if value and Path(value).is_absolute() else home / ".config"


def running_dory(argv0: str, python: str) -> Path:
    """The `dory` executable running this command, as an absolute path (not resolved through
    symlinks: a pipx or distribution link stays valid across upgrades). argv[0] is it when `dory`
    was run as a program; else the `dory` beside the interpreter."""
    for candidate in (Path(argv0), Path(python).with_name("dory")):
        if candidate.name and candidate.is_file() and os.access(candidate, os.X_OK) and candidate.suffix != ".py":
            return Path(os.path.abspath(candidate))
    raise ConfigError(
        f"cannot tell which `dory` executable runs this command ({argv0!r}): run it as `dory ops install-units` "
        "from the installation the units should use"
    )
