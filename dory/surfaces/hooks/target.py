"""Which Dory a hook talks to: a server (`--server` / DORY_URL), else the corpus's daemon, else the
corpus itself, as the CLI decides for every command."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from dory.statefolder import control_socket, state_folder


@dataclass(frozen=True)
class Target:
    corpus: str | None = None
    state_dir: str | None = None
    server: str | None = None
    token: str | None = None

    @classmethod
    def from_options(
        cls,
        corpus: str | None,
        state_dir: str | None,
        server: str | None,
        token: str | None,
        env: Mapping[str, str] = os.environ,
    ) -> Target:
        """The global options, with the environment variables the CLI reads for them."""
        return cls(
            corpus=corpus or env.get("DORY_CORPUS") or None,
            state_dir=state_dir,
            server=server or env.get("DORY_URL") or None,
            token=token or env.get("DORY_TOKEN") or None,
        )

    def daemon_socket(self) -> Path | None:
        """Where this corpus's daemon would listen, when the corpus is named."""
        if not self.corpus:
            return None
        corpus = Path(self.corpus).expanduser().resolve()
        return control_socket(state_folder(corpus, self.state_dir, os.environ))
