"""Dory's systemd user units: templates shipped in the package (`dory-watch@.service`,
`dory-http@.service`, one instance per corpus name) and `dory ops install-units`, which writes and
enables them. `render` holds the files' text and names, `install` the plan, the writes and systemctl.
"""

from dory.service.units.install import (
    UnitsReport,
    UnitsRequest,
    default_config_home,
    install_units,
    running_dory,
)

__all__ = ["UnitsReport", "UnitsRequest", "default_config_home", "install_units", "running_dory"]
