"""README.md's "Commands" table is generated from the CLI, and every `dory …` command the docs name exists.

The table between `<!-- commands:start -->` and `<!-- commands:end -->` must equal
`dory.surfaces.reference.command_table()`; `python scripts/readme_commands.py` rewrites it. The
commands written in code (fenced blocks and `inline spans`) in README.md and in every file of
corpus-template/ must name a real command path of `dory`, with options that command has.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import click
import pytest

from dory.surfaces.cli import cli
from dory.surfaces.reference import END, START, command_table, leaf_commands, readme_block, summary

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
TEMPLATE = REPO / "corpus-template"
FIX = "run `python scripts/readme_commands.py`"


# -- the generated table -------------------------------------------------------------------------
def test_the_readme_table_is_the_generated_one() -> None:
    block = readme_block(README.read_text(encoding="utf-8"))
    assert block == command_table(), f'README.md "Commands" table is stale: {FIX} (and commit README.md)'


def test_every_leaf_command_has_one_row_and_a_description() -> None:
    rows = [line for line in readme_block(README.read_text(encoding="utf-8")).splitlines() if line.startswith("| `")]
    usages = [row.split("`")[1].replace("\\|", "|") for row in rows]
    leaves = list(leaf_commands())
    assert len(leaves) == len(rows), f"{len(leaves)} commands but {len(rows)} rows: {FIX}"
    names = [" ".join(path) for path, _ in leaves]
    for path, command in leaves:
        name = " ".join(path)
        # `dory migrate SRC` shares its prefix with `dory migrate runs`: a row is the longest name it starts with.
        own = [u for u in usages if max((n for n in names if u == n or u.startswith(n + " ")), key=len) == name]
        assert len(own) == 1, f"{name}: {FIX}"
        assert summary(command), f"{name} has no docstring: its first paragraph is its row in README.md"


def test_rows_follow_click_params() -> None:
    """Arguments upper case, options by their long name, flags bare, `|` escaped, --json left out."""
    table = command_table()
    assert "| `dory get PATH [--from N] [--lines N]` |" in table
    assert "`dory search QUERY [--mode MODE] [--in durable\\|sessions\\|all] [--limit N]" in table
    assert "`dory context mark MESSAGE_ID --weight N [--session SESSION]` |" in table
    assert "`dory context remind IDS... [--session SESSION]`" in table
    assert "[--type TYPE...]" in table and "[--set KEY=VALUE...]" in table
    assert "--json" not in table and "--help" not in table


def test_importing_the_reference_loads_no_numpy() -> None:
    code = (
        "import json, sys\n"
        "import dory.surfaces.reference as reference\n"
        "seen = {'after_import': sorted(m for m in ('numpy', 'dory.surfaces.cli') if m in sys.modules)}\n"
        "reference.command_table()\n"
        "seen['numpy_after_table'] = 'numpy' in sys.modules\n"
        "print(json.dumps(seen))\n"
    )
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"after_import": [], "numpy_after_table": False}


# -- scripts/readme_commands.py ------------------------------------------------------------------
def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("readme_commands", REPO / "scripts" / "readme_commands.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_script_checks_and_rewrites_only_the_block(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = load_script()
    readme = tmp_path / "README.md"
    stale = f"# Title\n\nbefore\n{START}\n| command | does |\n|---|---|\n| `dory nope` | gone |\n{END}\n\nafter\n"
    readme.write_text(stale, encoding="utf-8")

    assert script.main(["--check", "--readme", str(readme)]) == 1
    out, err = capsys.readouterr()
    assert "-| `dory nope` | gone |" in out and "+| `dory get PATH" in out
    assert "python scripts/readme_commands.py" in err
    assert readme.read_text(encoding="utf-8") == stale

    assert script.main(["--readme", str(readme)]) == 0
    fresh = readme.read_text(encoding="utf-8")
    assert fresh == f"# Title\n\nbefore\n{START}\n{command_table()}{END}\n\nafter\n"
    assert script.main(["--check", "--readme", str(readme)]) == 0

    readme.write_text("# no markers\n", encoding="utf-8")
    assert script.main(["--check", "--readme", str(readme)]) == 2


# -- commands named in the docs ------------------------------------------------------------------
FENCE = re.compile(r"^\s*(```|~~~)")
# An inline code span: a run of backticks, then text (no blank line) up to a run of the same length.
SPAN = re.compile(r"(?<!`)(`+)(?!`)((?:[^\n]|\n(?![ \t]*\n))+?)(?<!`)\1(?!`)")
COMMAND = re.compile(r"(?<![\w./-])dory(?=[ \t]|$)")
# Where a command written in a code line ends: another shell command, a comment, a nested code span.
END_OF_COMMAND = re.compile(r"`|;|&&|\|\||\s\|\s|\s#")
HELP = {"--help", "-h"}


def code_texts(text: str) -> list[tuple[int, str]]:
    """(line number, code) for every line of a fenced block and every inline code span of a file, in order."""
    found: list[tuple[int, str]] = []
    prose: list[str] = []
    in_fence = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            in_fence = not in_fence
            prose.append("")
        elif in_fence:
            found.append((number, line))
            prose.append("")
        else:
            prose.append(line)
    joined = "\n".join(prose)
    for match in SPAN.finditer(joined):
        found.append((joined.count("\n", 0, match.start(2)) + 1, match.group(2).replace("\n", " ")))
    return sorted(found, key=lambda item: item[0])


def commands_in(code: str) -> Iterator[str]:
    """Each `dory …` command in a piece of code, up to where it ends."""
    for match in COMMAND.finditer(code):
        rest = code[match.start() :]
        quote = code[match.start() - 1] if match.start() and code[match.start() - 1] in "\"'" else ""
        if quote:
            rest = rest.split(quote, 1)[0]
        found = END_OF_COMMAND.search(rest)
        yield (rest[: found.start()] if found else rest).strip()


def find_option(command: click.Command, name: str) -> click.Option | None:
    for param in command.params:
        if isinstance(param, click.Option) and (name in param.opts or name in param.secondary_opts):
            return param
    return None


def check_command(line: str, root: click.Group = cli) -> str | None:
    """Why `line` (`dory …`) does not name a real command path with real options, or None."""
    try:
        tokens = shlex.split(line)
    except ValueError:
        tokens = line.split()
    command: click.Command = root
    path = [tokens[0]]
    skip_value = False
    for raw in tokens[1:]:
        token = raw.strip("[]()")
        if skip_value or not token:
            skip_value = False
            continue
        if token.startswith("-") and token != "-":
            name = token.split("=", 1)[0]
            if name in HELP:
                continue
            option = find_option(command, name)
            if option is None:
                return f"`{' '.join(path)}` has no option {name}"
            skip_value = "=" not in token and not (option.is_flag or option.count)
        elif isinstance(command, click.Group):
            sub = command.commands.get(token)
            default = getattr(command, "default_command", None)
            if sub is None and default is not None:  # `dory migrate SRC`: SRC is the default command's argument
                command = command.commands[default]
                continue
            if sub is None or sub.hidden:
                return f"`{' '.join(path)}` has no command {token!r} (it has: {', '.join(command.commands)})"
            command = sub
            path.append(token)
        # else: an argument (or a placeholder for one) of a leaf command
    return None


def doc_files() -> list[Path]:
    return [README, *sorted(p for p in TEMPLATE.rglob("*") if p.is_file())]


def named_commands(path: Path) -> Iterator[tuple[int, str]]:
    for number, code in code_texts(path.read_text(encoding="utf-8")):
        for line in commands_in(code):
            yield number, line


def test_commands_named_in_the_docs_exist() -> None:
    problems, seen = [], {README: 0, TEMPLATE: 0}
    for path in doc_files():
        for number, line in named_commands(path):
            seen[README if path == README else TEMPLATE] += 1
            if why := check_command(line):
                problems.append(f"{path.relative_to(REPO)}:{number}: {line}\n    {why}")
    assert not problems, "commands in the docs that `dory` does not have:\n" + "\n".join(problems)
    # The scan itself works: the README and the template do name commands.
    assert seen[README] >= 60 and seen[TEMPLATE] >= 10, seen


def test_the_docs_scan_finds_and_rejects_commands() -> None:
    text = (
        "Run `dory serch x` or `` see `dory sessions frob` ``, then\n"
        "```sh\n"
        "dory --corpus ./c search 'q' -k 3 --json --in all  # fine\n"
        "dory proposals ; dory ops run maintain --bogus\n"
        "```\n"
        'JSON `{"command": "dory wake --profile coding"}` and `dory write p --file - --set k=v`\n'
        "`dory.toml` and `dory/daemon` are not commands; `dory` alone is the root.\n"
    )
    found = [(number, line, check_command(line)) for number, code in code_texts(text) for line in commands_in(code)]
    assert [(number, line) for number, line, _ in found] == [
        (1, "dory serch x"),
        (1, "dory sessions frob"),
        (3, "dory --corpus ./c search 'q' -k 3 --json --in all"),
        (4, "dory proposals"),
        (4, "dory ops run maintain --bogus"),
        (6, "dory wake --profile coding"),
        (6, "dory write p --file - --set k=v"),
        (7, "dory"),
    ]
    verdicts = [why for _, _, why in found]
    assert verdicts[0] == "`dory` has no command 'serch' (it has: " + ", ".join(cli.commands) + ")"
    assert verdicts[1] is not None and "`dory sessions` has no command 'frob'" in verdicts[1]
    assert verdicts[4] == "`dory ops run` has no option --bogus"
    assert verdicts[2] is verdicts[3] is verdicts[5] is verdicts[6] is verdicts[7] is None
