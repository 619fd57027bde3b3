"""`dory`'s top-level group: the commands of the other command modules load when one of them runs.

SPEC §11 wants `dory --help` near the cost of importing click, and a one-shot `dory search` fast;
importing every command module (their click decorators, and what they import: tomlkit, platformdirs,
the connect and capture code) costs more than click itself. So the group knows those commands by
name and module (`COMMAND_MODULES` in command_summaries.py), imports a module the first time one of
its commands is looked up, and writes the top-level help from the one-line summaries there, without
importing anything. tests/surfaces/test_cli_imports.py checks that the table matches the real commands and that
`dory --help` reads the same either way.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any

import click


@dataclass(frozen=True)
class LazyCommand:
    """A top-level command defined in another module (in its COMMANDS list)."""

    module: str  # e.g. "dory.surfaces.memory_cli"
    summary: str  # its help's first sentence, as `dory --help` shows it


class LazyCommands(MutableMapping[str, click.Command]):
    """The group's commands by name, in registration order; a lazy command's module is imported
    when the command itself is first read (iterating or testing a name imports nothing)."""

    def __init__(self) -> None:
        self._commands: dict[str, click.Command | None] = {}  # None: not loaded yet
        self.pending: dict[str, LazyCommand] = {}

    def add_lazy(self, name: str, lazy: LazyCommand) -> None:
        self._commands[name] = None
        self.pending[name] = lazy

    def __getitem__(self, name: str) -> click.Command:
        command = self._commands[name]
        if command is None:
            command = self._load(name)
        return command

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._commands[name] = command
        self.pending.pop(name, None)

    def __delitem__(self, name: str) -> None:
        del self._commands[name]
        self.pending.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._commands)

    def __len__(self) -> int:
        return len(self._commands)

    def __contains__(self, name: object) -> bool:
        return name in self._commands

    def _load(self, name: str) -> click.Command:
        """Import the module that defines `name`; every pending command it defines is loaded with it."""
        module = importlib.import_module(self.pending[name].module)
        for command in module.COMMANDS:
            if command.name in self.pending and self.pending[command.name].module == module.__name__:
                self[command.name] = command
        command = self._commands[name]
        if command is None:
            raise LookupError(f"{module.__name__} defines no command {name!r} in its COMMANDS")
        return command


class LazyGroup(click.Group):
    """A click group whose `commands` is a LazyCommands (see the module docstring)."""

    def __init__(self, name: str | None = None, **attrs: Any) -> None:
        super().__init__(name, **attrs)
        self.commands: LazyCommands = LazyCommands()

    def add_lazy_commands(self, modules: dict[str, dict[str, str]]) -> None:
        """Register {module: {command name: summary}}; nothing is imported."""
        for module, summaries in modules.items():
            for name, summary in summaries.items():
                self.commands.add_lazy(name, LazyCommand(module, summary))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's own listing, with a command not loaded yet described by its summary: a stand-in
        command with that help gives the same line (click shortens both alike)."""
        rows: list[tuple[str, click.Command]] = []
        for name in self.list_commands(ctx):
            lazy = self.commands.pending.get(name)
            command = click.Command(name, help=lazy.summary) if lazy else self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command))
        if rows:
            limit = formatter.width - 6 - max(len(name) for name, _ in rows)
            with formatter.section("Commands"):
                formatter.write_dl([(name, command.get_short_help_str(limit)) for name, command in rows])
