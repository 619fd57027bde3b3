"""The text of Dory's systemd user units and of their environment files, and the names they use.

Decisions:
- Instance names are a safe slug (letters, digits, `_`, `.`, `-`; a letter or digit first; at most
  64 characters), not systemd-escaped strings: the name is typed in `systemctl` commands and is the
  environment file's name (`%i.env`), so a name that needs escaping (`/`, spaces, `@`, `\\`) is
  refused with `invalid_unit_name` and the slug of it suggested; the default name is the slug of the
  corpus folder's name.
- Each unit file starts with a marker line holding the sha256 of the rest of the file. A file whose
  marker matches is Dory's and unedited, so a re-run may rewrite it; any other file (someone's own
  unit, or ours edited by hand) is left alone unless --force. Changes belong in drop-ins
  (`systemctl --user edit dory-watch@NAME.service`), which survive a re-run.
- Paths are quoted by the rules of the file that holds them (systemd's unit syntax for ExecStart,
  its environment-file syntax for DORY_CORPUS), and a path neither can hold exactly (a control
  character, a reserved quote, bytes that are not UTF-8) is refused with `unit_path_unsupported`.
- The templates are package data (dory/service/units/*.service), read through importlib.resources,
  so an installed wheel finds them without the repository.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from importlib.resources import files
from pathlib import Path

from dory.errors import InvalidUnitName, UnitPathUnsupported

WATCH_TEMPLATE = "dory-watch@.service"
HTTP_TEMPLATE = "dory-http@.service"
TEMPLATES = (WATCH_TEMPLATE, HTTP_TEMPLATE)
PLACEHOLDER = "@DORY_EXEC@"
MARKER = "# dory-install-units sha256="
MAX_NAME = 64
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
# Characters a path may hold without quotes, in a unit's ExecStart and in an environment file alike.
PLAIN = re.compile(r"[A-Za-z0-9/._+,@:=-]+")


def instance_unit(template: str, name: str) -> str:
    """`dory-watch@.service` and `notes` -> `dory-watch@notes.service`."""
    return template.replace("@.", f"@{name}.", 1)


def slug(text: str) -> str:
    """A valid instance name made from a folder name: accents dropped, lower case, anything else `-`."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    cleaned = re.sub(r"[^a-z0-9_.]+", "-", ascii_text.lower()).strip("-_.")
    return cleaned[:MAX_NAME].rstrip("-_.") or "corpus"


def check_name(name: str) -> str:
    """`name` if it is a valid instance name, else InvalidUnitName (suggesting its slug)."""
    if NAME_PATTERN.fullmatch(name):
        return name
    raise InvalidUnitName(
        f"{name!r} cannot name a unit instance: use letters, digits, `_`, `.` and `-` only, a letter or digit "
        f"first, at most {MAX_NAME} characters (for example --name {slug(name)})",
        name=name,
        suggestion=slug(name),
    )


def _checked(path: str, what: str) -> str:
    """`path` if a unit file can hold it exactly: no control character, valid UTF-8."""
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in path):
        raise UnitPathUnsupported(f"{what} contains a control character (a newline?): {path!r}", path=path)
    try:
        path.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UnitPathUnsupported(f"{what} is not valid UTF-8: {path!r}", path=path) from exc
    return path


def exec_path(path: Path) -> str:
    """The executable as ExecStart's first word: `%` doubled (systemd expands specifiers there, but
    not `$` variables, which it expands in the arguments only), and inside double quotes with C
    escapes when it holds anything but plain characters."""
    text = _checked(str(path), "the dory executable's path")
    escaped = text.replace("%", "%%")
    if PLAIN.fullmatch(text):
        return escaped
    return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'


def env_value(path: Path, what: str) -> str:
    """A path as an environment-file value: plain when it can be, else in single quotes, inside which
    systemd takes every character as it is, so only a single quote itself cannot be written."""
    text = _checked(str(path), what)
    if PLAIN.fullmatch(text):
        return text
    if "'" in text:
        raise UnitPathUnsupported(f"{what} contains a single quote, which an environment file cannot hold: {text}")
    return f"'{text}'"


def parse_env_value(raw: str) -> str:
    """The value of an environment-file line as systemd reads the forms `env_value` writes (plain,
    or in single or double quotes); used to compare what is there with what would be written."""
    value = raw.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def template_text(template: str) -> str:
    """A unit template as shipped in the package (the wheel holds it; no repository path is read)."""
    return files("dory.service.units").joinpath(template).read_text(encoding="utf-8")


def render_unit(template: str, dory: Path) -> str:
    """The unit file Dory writes for `template`: the marker line, then the template with the
    executable filled in."""
    body = template_text(template).replace(PLACEHOLDER, exec_path(dory))
    return f"{MARKER}{_sha256(body)}\n{body}"


def is_ours_unedited(text: str) -> bool:
    """True when `text` is a unit file Dory wrote and nobody edited since (its marker matches)."""
    first, _, body = text.partition("\n")
    return first.startswith(MARKER) and first[len(MARKER) :] == _sha256(body)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def env_header(name: str) -> str:
    return (
        f"# The corpus of dory-watch@{name}.service and dory-http@{name}.service, written by\n"
        "# `dory ops install-units`. systemd expands nothing in this file (no %h, no ~): paths are\n"
        "# absolute. Other DORY_* settings you add below win over dory.toml, and a re-run keeps them.\n"
    )
