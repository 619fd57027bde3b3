"""`dory add PATH`, `remove NAME`, `corpora`, `config show`: the notes you have, and where settings come from."""

from __future__ import annotations

from typing import Any

import click

from dory.surfaces.clikit import Result, command


@click.command()
@click.argument("path")
@click.option("--name", help="the name to use with --corpus NAME (default: from the folder's name)")
@click.option(
    "--output",
    metavar="DIR",
    help="where digests, the wiki, proposals and sessions go (default: the platform data folder)",
)
@click.option("--no-output", is_flag=True, help="no generated output at all: index and search only")
@click.option("--writable", is_flag=True, help="let Dory write notes into the folder when asked (write, memory-write)")
@click.option("--default", "make_default", is_flag=True, help="use it when no corpus is named or found")
@click.option("--replace", is_flag=True, help="record a corpus already known by this name anew")
@command
def add(
    path: str,
    name: str | None,
    output: str | None,
    no_output: bool,
    writable: bool,
    make_default: bool,
    replace: bool,
) -> Result:
    """Use a folder of notes you already have (an Obsidian vault) without Dory ever writing into it: its
    index goes to the platform state folder, its generated output to a folder of its own."""
    from dory.service.corpora import add_corpus

    payload = add_corpus(path, name, output, no_output, writable, make_default, replace)
    return payload, lambda: _added(payload)


def _added(p: dict[str, Any]) -> str:
    mode = "owned by Dory (.dory/ inside)" if p["owned"] else ("writable" if p["writable"] else "read-only")
    lines = [
        f"added {p['name']}: {p['path']} ({mode}){'  [default]' if p['default'] else ''}",
        f"  index and state  {p['state_dir']}",
        f"  output           {p['output'] or 'none (--no-output)'}",
        f"  recorded in      {p['config_file']}",
        *(f"  warning: {w}" for w in p["warnings"]),
        f'next: dory --corpus {p["name"]} reindex, then dory --corpus {p["name"]} search "..." '
        f"(or run them from inside {p['path']})",
    ]
    return "\n".join(lines)


@click.command()
@click.argument("name")
@click.option(
    "--delete-state", is_flag=True, help="also delete the index Dory made for it in the platform state folder"
)
@command
def remove(name: str, delete_state: bool) -> Result:
    """Forget a corpus you added: its entry leaves corpora.toml. Your notes and the output folder are never
    touched; with --delete-state, the index goes too (it is rebuilt by adding the folder again)."""
    from dory.service.corpora import remove_corpus

    payload = remove_corpus(name, delete_state)
    return payload, lambda: _removed(payload)


def _removed(p: dict[str, Any]) -> str:
    lines = [f"removed {p['name']} ({p['path']}) from {p['config_file']}; the notes are untouched"]
    if p["default"]:
        lines.append("  it was the default: `dory add PATH --default` picks another")
    if p["state_deleted"]:
        lines.append(f"  deleted its index: {p['state_deleted']}")
    lines += [f"  kept: {path} (delete it yourself if you no longer want it)" for path in p["kept"]]
    return "\n".join(lines)


@click.command()
@command
def corpora() -> Result:
    """The corpora you added by name (corpora.toml), and which one is the default."""
    from dory.service.corpora import list_corpora

    payload = list_corpora()
    return payload, lambda: _listed(payload)


def _listed(p: dict[str, Any]) -> str:
    if not p["corpora"]:
        return f"no corpora yet ({p['config_file']}); `dory add PATH` adds a folder of notes"
    lines = []
    for c in p["corpora"]:
        mode = "owned" if c["owned"] else ("read-only" if c["read_only"] else "writable")
        mark = "*" if c["default"] else " "
        gone = "" if c["exists"] else "  (folder missing)"
        lines.append(f"{mark} {c['name']:<16} {mode:<9} {c['path']}{gone}")
    lines.append(f"({p['config_file']}; * the default)")
    return "\n".join(lines)


@click.group(name="config")
def config_group() -> None:
    """Settings as Dory resolves them."""


@config_group.command(name="show")
@click.pass_context
@command
def config_show(ctx: click.Context) -> Result:
    """Every setting of this corpus with its value and where it came from (default, dory.toml, corpora.toml,
    env, command line)."""
    from dory.service.corpora import config_report

    root = ctx.find_root().params
    payload = config_report(root.get("corpus"), {"state_dir": root.get("state_dir")})
    return payload, lambda: _shown(payload)


def _shown(p: dict[str, Any]) -> str:
    width = max(len(row["key"]) for row in p["settings"])
    lines = [f"{row['key']:<{width}}  {_value(row['value'])}  ({row['source']})" for row in p["settings"]]
    return "\n".join(lines)


def _value(value: Any) -> str:
    return "-" if value is None else str(value)


COMMANDS: list[click.Command] = [add, remove, corpora, config_group]
