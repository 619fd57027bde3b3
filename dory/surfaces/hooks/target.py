"""Which Dory a hook talks to: a server (`--server` / DORY_URL), else the corpus's daemon, else the
corpus itself, as the CLI decides for every command. The corpus is found as the CLI finds it
(dory.corpora: `--corpus`, the folders above, DORY_CORPUS, the user's default), without pydantic."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from dory.corpora import locate, state_dir_of
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
        """The global options, with the environment variables the CLI reads for them (DORY_CORPUS is
        read by discovery, after the folders above the current one)."""
        return cls(
            corpus=corpus or None,
            state_dir=state_dir,
            server=server or env.get("DORY_URL") or None,
            token=token or env.get("DORY_TOKEN") or None,
        )

    def daemon_socket(self) -> Path:
        """Where this corpus's daemon would listen (CorpusNotFound when there is no corpus)."""
        found = locate(self.corpus, os.environ)
        registered = state_dir_of(found.known, os.environ)
        return control_socket(state_folder(found.root, self.state_dir, os.environ, registered))
