"""Dory's error hierarchy.

Every error a user can see is a `DoryError` with a stable machine code, an HTTP status for the
HTTP surface and an exit code for the CLI. Surfaces never invent their own errors: they map these.
"""

from __future__ import annotations

from typing import Any


class DoryError(Exception):
    """Base class. `code` is stable across releases; `message` is for people."""

    code = "internal_error"
    http_status = 500
    exit_code = 1

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": self.message, "type": type(self).__name__}
        if self.details:
            body["details"] = self.details
        return body


class UsageError(DoryError):
    """The caller asked for something malformed (bad flag value, bad query file)."""

    code = "usage_error"
    http_status = 400
    exit_code = 2


class ConfigError(UsageError):
    """Settings are invalid or the corpus cannot be located."""

    code = "config_error"


class CorpusNotFound(ConfigError):
    code = "corpus_not_found"


class NotFound(DoryError):
    code = "not_found"
    http_status = 404
    exit_code = 3


class ValidationError(DoryError):
    """Input was well-formed but is not acceptable (unsafe path, too large, bad encoding)."""

    code = "validation_error"
    http_status = 400
    exit_code = 4


class PathOutsideCorpus(ValidationError):
    code = "path_outside_corpus"


class PathNotAllowed(ValidationError):
    """Inside the corpus, but not a note Dory serves (hidden, ignored, or not markdown)."""

    code = "path_not_allowed"


class FileTooLarge(ValidationError):
    code = "file_too_large"
    http_status = 413


class UnreadableFile(ValidationError):
    """A file exists but cannot be read as markdown text (binary, not UTF-8, a loop)."""

    code = "unreadable_file"


class WriteConflict(DoryError):
    """The file is not in the state the caller expected (it exists, or its hash moved on).
    `details.current_hash` says what is there now, so the caller can re-read and retry."""

    code = "conflict"
    http_status = 409
    exit_code = 7


class AlreadyExists(WriteConflict):
    code = "already_exists"


class StaleProposal(WriteConflict):
    """A proposal's target or subject changed since it was created; re-create it."""

    code = "stale_proposal"


class PathNotWritable(PathNotAllowed):
    """Readable, but Dory never writes there (derived state, the generated wiki, evidence)."""

    code = "path_not_writable"


class BrokenFrontmatter(ValidationError):
    """The target file's frontmatter cannot be parsed; Dory never rewrites such a file."""

    code = "broken_frontmatter"


class InvalidFrontmatter(ValidationError):
    """The frontmatter given for a write breaks the vocabulary (unknown type, bad date, ...)."""

    code = "invalid_frontmatter"


class UnsafeContent(ValidationError):
    """Content failed a safety check; subclasses name which one. `soft` writes quarantine it."""

    code = "unsafe_content"


class ContentTooLarge(UnsafeContent):
    code = "content_too_large"
    http_status = 413


class InvisibleCharacters(UnsafeContent):
    code = "invisible_characters"


class BidiControl(UnsafeContent):
    code = "bidi_control"


class TagCharacters(UnsafeContent):
    code = "tag_characters"


class ControlCharacters(UnsafeContent):
    code = "control_characters"


class PromptInjection(UnsafeContent):
    code = "prompt_injection"


class CanonicalWriteRefused(ValidationError):
    """A live semantic write would change a canonical page without `allow_canonical`."""

    code = "canonical_target"
    http_status = 403


class UnresolvedSubject(NotFound):
    """No entity matches the subject; `details.candidates` lists the nearest ones."""

    code = "unresolved_subject"


class AmbiguousSubject(ValidationError):
    """Several entities match the subject equally; `details.candidates` lists them."""

    code = "ambiguous_subject"


class BackendUnavailable(DoryError):
    """A dependency Dory needs is missing or broken (model, vector index, embedding endpoint)."""

    code = "backend_unavailable"
    http_status = 503
    exit_code = 5


class ModelUnavailable(BackendUnavailable):
    code = "model_unavailable"


class EmbeddingEndpointError(BackendUnavailable):
    code = "embedding_endpoint_error"


class IndexLocked(DoryError):
    code = "index_locked"
    http_status = 409
    exit_code = 6


class JobFailed(DoryError):
    """A job ran and failed; its ledger row holds the error."""

    code = "job_failed"


class DaemonNotRunning(BackendUnavailable):
    """No `dory ops watch` answers for this corpus (not started, or its socket is gone)."""

    code = "daemon_not_running"


class DaemonTimeout(BackendUnavailable):
    """The daemon took a request but did not answer before its deadline (it may be hung or busy).
    A write may still be applied: sending it again with the same request id is always safe."""

    code = "daemon_timeout"
    http_status = 504


class DaemonAlreadyRunning(IndexLocked):
    code = "daemon_already_running"


def error_from_dict(body: dict[str, Any]) -> DoryError:
    """Rebuild an error sent by another process (the daemon) so callers see the same class and code."""
    details = body.get("details") or {}
    message = str(body.get("message", "unknown error"))
    pending: list[type[DoryError]] = [DoryError]
    while pending:
        cls = pending.pop()
        if cls.code == body.get("code"):
            return cls(message, **details)
        pending.extend(cls.__subclasses__())
    return DoryError(message, **details)
