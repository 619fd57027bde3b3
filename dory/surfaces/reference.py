"""The `dory` command reference, rendered from the click command tree itself.

README.md's "Commands" table is `command_table()`, pasted between two markers by
`python scripts/readme_commands.py` (and compared by tests/surfaces/test_readme_reference.py), so
the commands' docstrings and click parameters are the only place a command is described.

One row per leaf command, in the order the CLI registers them: its usage, built from click's own
parameters (arguments upper case, `[OPTIONAL]`, `NAME...` when repeatable; options by their first
long name and a metavar: its own, else `a|b|c` for a choice, `N` for a number, `PATH` for a path,
else the last word of the option's name (`--expected-hash HASH`); flags as `[--flag]`; `--json`
and `--help`, which every command takes, left out), then the first paragraph of its help.

Importing this module loads nothing but click; `command_table()` imports the CLI, which itself does
not load numpy (tests/test_errors.py).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator

import click

START = "<!-- commands:start -->"
END = "<!-- commands:end -->"
HEADER = "| command | does |\n|---|---|\n"
# Options every command takes; the paragraph under the table says so once.
OMITTED = frozenset({"--json", "--help", "-h"})


def root_command() -> click.Group:
    """`dory` itself (imported when asked for, so importing this module stays cheap)."""
    from dory.surfaces.cli import cli

    return cli


def leaf_commands(
    group: click.Group | None = None, path: tuple[str, ...] = ("dory",)
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """(path, command) for every visible command that is not a group, depth first, in registration order."""
    group = root_command() if group is None else group
    default = getattr(group, "default_command", None)  # `dory migrate SRC` runs a hidden `run`
    for name, command in group.commands.items():
        if name == default:
            yield path, command
            continue
        if command.hidden:
            continue
        if isinstance(command, click.Group):
            yield from leaf_commands(command, (*path, name))
        else:
            yield (*path, name), command


def metavar(option: click.Option, name: str) -> str:
    """What an option's value reads as: its own metavar, else from its type, else from its name."""
    if option.metavar:
        return option.metavar
    kind = option.type
    if isinstance(kind, click.Choice):
        return "|".join(str(choice) for choice in kind.choices)
    if isinstance(kind, click.types.IntParamType | click.types.FloatParamType):
        return "N"
    if isinstance(kind, click.Path | click.File):
        return "PATH"
    # --since SINCE, --expected-hash HASH, --log-file FILE
    return name.rsplit("-", 1)[-1].upper() if name.startswith("--") else "TEXT"


def param_usage(param: click.Parameter) -> str | None:
    """How one parameter reads in a usage line, or None when the table leaves it out."""
    if isinstance(param, click.Argument):
        text = param.metavar or (param.name or "").upper()
        text += "..." if param.nargs != 1 else ""
        return text if param.required else f"[{text}]"
    if not isinstance(param, click.Option) or param.hidden or OMITTED.intersection(param.opts):
        return None
    name = next((opt for opt in param.opts if opt.startswith("--")), param.opts[0])
    if param.is_flag or param.count:
        text = name + (f"/{param.secondary_opts[0]}" if param.secondary_opts else "")
    else:
        text = f"{name} {metavar(param, name)}"
    text += "..." if param.multiple else ""
    return text if param.required else f"[{text}]"


def usage(path: tuple[str, ...], command: click.Command) -> str:
    pieces = [piece for param in command.params if (piece := param_usage(param))]
    return " ".join([*path, *pieces])


def summary(command: click.Command) -> str:
    """The first paragraph of the command's help (its docstring), on one line."""
    text = inspect.cleandoc(command.help or "").split("\f", 1)[0]
    return " ".join(text.split("\n\n", 1)[0].replace("\b", "").split())


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def command_table(root: click.Group | None = None) -> str:
    """The markdown table of every leaf command: `| usage | first paragraph of its help |`."""
    rows = [f"| `{cell(usage(path, command))}` | {cell(summary(command))} |\n" for path, command in leaf_commands(root)]
    return HEADER + "".join(rows)


def find_block(text: str) -> tuple[int, int]:
    """Where the generated table sits in a README: the span between the two markers (each on its own line)."""
    start, end = text.find(START + "\n"), text.find("\n" + END)
    if start < 0 or end < start or text.count(START) != 1 or text.count(END) != 1:
        raise ValueError(f"expected one {START} line and, after it, one {END} line")
    return start + len(START) + 1, end + 1


def readme_block(text: str) -> str:
    """The table currently between the markers."""
    start, end = find_block(text)
    return text[start:end]


def with_table(text: str, table: str) -> str:
    """The README text with `table` between the markers (nothing else changes)."""
    start, end = find_block(text)
    return text[:start] + table + text[end:]
