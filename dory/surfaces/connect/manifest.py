"""What `dory connect` changed, so that `dory disconnect` undoes exactly that.

One record per config file, in Dory's state folder for this user (`$XDG_STATE_HOME/dory/connect.json`,
by default `~/.local/state/dory/connect.json`): not in a corpus, because a harness config belongs to
the user and `disconnect` must work from any folder. A record says whether connect created the
file (and which folders), where the backup of the file as it was before Dory's first change is,
with its hash, and the hash of what connect last wrote. While the file still has that hash nobody
else changed it, so disconnect puts the original back byte for byte (or deletes the file it
created); otherwise it takes Dory's part out and keeps everything else.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from dory.corpus.atomic import write_atomic
from dory.errors import ConfigError

VERSION = 1


@dataclass(frozen=True)
class Record:
    created: bool  # the file did not exist before connect
    folders: tuple[str, ...]  # folders connect created for it, outermost first
    backup: str | None  # the file before Dory's first change
    original: str | None  # its sha256; None when unknown (Dory's part was there already)
    written: str  # sha256 of what connect last wrote


def manifest_path(home: Path, env: Mapping[str, str]) -> Path:
    state = env.get("XDG_STATE_HOME")
    return (Path(state).expanduser() if state else home / ".local" / "state") / "dory" / "connect.json"


class Manifest:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.records: dict[str, Record] = self._read()

    def _read(self) -> dict[str, Record]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return {
                key: Record(**{**value, "folders": tuple(value["folders"])}) for key, value in data["files"].items()
            }
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"{self.path} is damaged ({exc}); move it away to continue (disconnect then removes "
                "Dory's entries without restoring the files byte for byte)",
                path=str(self.path),
            ) from exc

    def get(self, config: Path) -> Record | None:
        return self.records.get(str(config))

    def put(self, config: Path, record: Record) -> None:
        self.records[str(config)] = record

    def drop(self, config: Path) -> None:
        self.records.pop(str(config), None)

    def save(self) -> None:
        files = {key: asdict(record) for key, record in sorted(self.records.items())}
        text = json.dumps({"version": VERSION, "files": files}, indent=2) + "\n"
        write_atomic(self.path, text.encode("utf-8"))
