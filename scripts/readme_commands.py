"""Regenerate README.md's "Commands" table from the CLI (dory.surfaces.reference.command_table).

    python scripts/readme_commands.py          # rewrite the table between the markers, in place
    python scripts/readme_commands.py --check  # exit 1 with a diff when the README is stale

The table sits between `<!-- commands:start -->` and `<!-- commands:end -->`; nothing else in the
README changes. Its text comes from the commands' docstrings and click options: edit those, not the
README. The `dory` package imported is the one in this checkout, not an installed copy.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIX = "python scripts/readme_commands.py"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 with a diff if the table is stale")
    parser.add_argument("--readme", type=Path, default=REPO / "README.md", help="the README to update (default: ours)")
    args = parser.parse_args(argv)

    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from dory.surfaces.reference import command_table, readme_block, with_table

    text = args.readme.read_text(encoding="utf-8")
    try:
        current = readme_block(text)
    except ValueError as exc:
        print(f"{args.readme}: {exc}", file=sys.stderr)
        return 2
    table = command_table()
    if current == table:
        print(f"{args.readme}: the commands table is up to date")
        return 0
    if args.check:
        diff = difflib.unified_diff(
            current.splitlines(keepends=True),
            table.splitlines(keepends=True),
            f"{args.readme} (commands table)",
            "generated from the CLI",
        )
        sys.stdout.writelines(diff)
        print(f"\n{args.readme}: the commands table is stale; run `{FIX}` to regenerate it", file=sys.stderr)
        return 1
    args.readme.write_text(with_table(text, table), encoding="utf-8")
    print(f"{args.readme}: commands table regenerated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
