"""What the session and context operations are given: settings, the shared resources and the few
service operations they call, instead of the whole service."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dory.config import Settings
from dory.corpus.roots import output_root
from dory.models import ProposalCreateRequest, ProposalCreateResponse, ReindexResponse, WakeRequest, WakeResponse
from dory.service.resources import Resources
from dory.sessions.files import SessionFiles


@dataclass(frozen=True)
class SessionDeps:
    settings: Settings
    resources: Resources
    index_paths: Callable[[list[str]], ReindexResponse]  # through the index's owner
    propose: Callable[[ProposalCreateRequest], ProposalCreateResponse]
    wake: Callable[[WakeRequest], WakeResponse]

    def session_files(self) -> SessionFiles:
        """The transcripts, in the corpus's output (ReadOnlyCorpus when it has none)."""
        return SessionFiles(output_root(self.settings, "session transcripts"), self.resources.session_store())
