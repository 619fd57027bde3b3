"""`dory ops install-units`: the command line of dory.service.units, and how its report reads.

The corpus is the one every command finds (dory.corpora); one added by name (`dory add`) gets an
instance of that name, and its env file names its folder, which finds the same entry. The units run
the `dory` executable running this command. When systemd cannot be reached the report is printed
all the same (the files are written) and the command exits with the problem's code.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import click

from dory.surfaces.clikit import Partial, Result, command

if TYPE_CHECKING:
    from dory.service.units import UnitsReport

# A changed unit usually differs by its ExecStart line; a replaced file of someone else's by all of them.
DIFF_LINES = 8


@click.command(name="install-units")
@click.option("--name", help="the instance name (default: the corpus folder's name, as a slug)")
@click.option("--http", is_flag=True, help="enable dory-http@NAME (`dory serve`) instead of dory-watch@NAME")
@click.option("--unit-dir", type=click.Path(file_okay=False), metavar="DIR", help="default: ~/.config/systemd/user")
@click.option("--no-enable", is_flag=True, help="only write the files; run no systemctl")
@click.option("--dry-run", is_flag=True, help="print what would be written and run; change nothing")
@click.option("--force", is_flag=True, help="replace unit files Dory did not write, or retarget a name in use")
@click.pass_context
@command
def install_units(
    ctx: click.Context, name: str | None, http: bool, unit_dir: str | None, no_enable: bool, dry_run: bool, force: bool
) -> Result:
    """Run the daemon under systemd: write the dory-watch@/dory-http@ user units and enable this corpus's instance.

    Writes ~/.config/dory/units/NAME.env (DORY_CORPUS=the corpus) and the unit templates (with the
    absolute path of this `dory`), then runs systemctl --user daemon-reload and enable --now. A re-run
    changes only what differs and says so."""
    from pathlib import Path  # here, not at the top: `dory --help` imports this module

    from dory.corpora import locate
    from dory.service.units import UnitsRequest, default_config_home, install_units, running_dory

    root = ctx.find_root().params
    home = Path.home()
    state_dir = root.get("state_dir") or os.environ.get("DORY_STATE_DIR")
    found = locate(root.get("corpus"), os.environ)
    req = UnitsRequest(
        corpus=found.root,
        dory=running_dory(sys.argv[0], sys.executable),
        home=home,
        config_home=default_config_home(os.environ, home),
        name=name if name is not None or found.known is None else found.known.name,  # an added corpus keeps its name
        unit_dir=Path(unit_dir).expanduser().absolute() if unit_dir else None,
        state_dir=Path(state_dir).expanduser().resolve() if state_dir else None,
        http=http,
        enable=not no_enable,
        dry_run=dry_run,
        force=force,
    )
    report = install_units(req)
    result: Result = (report.to_dict(), lambda: render(report, enable=not no_enable))
    if report.problem is not None:
        raise Partial(result, report.problem)
    return result


def render(report: UnitsReport, enable: bool) -> str:
    kind = "HTTP server" if report.unit.startswith("dory-http@") else "daemon"
    title = f"{report.unit}: the Dory {kind} for {report.corpus}"
    lines = [title + (" (dry run: nothing written, nothing run)" if report.dry_run else "")]
    for change in report.files:
        action = f"would be {change.action}" if report.dry_run and change.action != "unchanged" else change.action
        lines.append(f"  {action:<20} {change.path}")
        lines.extend(f"  {'':<20}   {line}" for line in change.diff[:DIFF_LINES])
        if len(change.diff) > DIFF_LINES:
            lines.append(f"  {'':<20}   … {len(change.diff) - DIFF_LINES} more changed lines (--json has them all)")
    for cmd in report.commands:
        if report.dry_run:
            state = "would run"
        elif cmd.returncode is None:
            state = "not run"
        else:
            state = "ran" if cmd.returncode == 0 else f"failed ({cmd.returncode})"
        lines.append(f"  {state:<20} {' '.join(cmd.argv)}")
    if report.enabled:
        lines += [
            f"Enabled and started {report.unit}.",
            f"  status   systemctl --user status {report.unit}",
            f"  logs     journalctl --user -u {report.unit} -f",
            '  to keep it running while you are logged out: loginctl enable-linger "$USER"',
        ]
    elif not enable:
        lines.append(
            f"Not enabled (--no-enable). To enable it: systemctl --user daemon-reload && "
            f"systemctl --user enable --now {report.unit}"
        )
    lines += [f"note: {note}" for note in report.notes]
    return "\n".join(lines)
