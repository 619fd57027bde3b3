"""Dory's error hierarchy: the one module that defines error classes.

Every error a user can see is a `DoryError` with a stable machine `code`, an `http_status` for the
HTTP surface and an `exit_code` for the CLI. Surfaces (CLI, HTTP, MCP) never invent their own errors:
they raise or map these, and turn foreign exceptions into them with the helpers at the end of this
module (`from_validation_error` for pydantic). `code` values are a public contract: never rename
one; add a subclass with a new code instead. tests/test_errors.py pins the table.

Importing this module is cheap and has no side effects (pydantic is only named for type checking).
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pydantic


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


class InvalidInput(DoryError):
    """Input was well-formed but is not acceptable (unsafe path, too large, bad encoding).

    Was `ValidationError` (renamed: it clashed with pydantic's); the code stays "validation_error"."""

    code = "validation_error"
    http_status = 400
    exit_code = 4


class PathOutsideCorpus(InvalidInput):
    code = "path_outside_corpus"


class PathNotAllowed(InvalidInput):
    """Inside the corpus, but not a note Dory serves (hidden, ignored, or not markdown)."""

    code = "path_not_allowed"


class FileTooLarge(InvalidInput):
    code = "file_too_large"
    http_status = 413


class UnreadableFile(InvalidInput):
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


class HashConflict(WriteConflict):
    """The note's hash is not the one the caller read (`expected_hash`, or HTTP `If-Match`)."""

    code = "hash_conflict"


class ExpectedHashRequired(InvalidInput):
    """Over HTTP, replace and forget must say which version they change (body or `If-Match`)."""

    code = "expected_hash_required"
    http_status = 428


class IdempotencyKeyReused(InvalidInput):
    """A request id (HTTP `Idempotency-Key`) sent again with another request: a retry must repeat the
    request the id was first sent with, so one request's answer is never handed to another."""

    code = "idempotency_key_reused"
    http_status = 422


class StaleProposal(WriteConflict):
    """A proposal's target or subject changed since it was created; re-create it."""

    code = "stale_proposal"


class PathNotWritable(PathNotAllowed):
    """Readable, but Dory never writes there (derived state, the generated wiki, evidence)."""

    code = "path_not_writable"


class BrokenFrontmatter(InvalidInput):
    """The target file's frontmatter cannot be parsed; Dory never rewrites such a file."""

    code = "broken_frontmatter"


class InvalidFrontmatter(InvalidInput):
    """The frontmatter given for a write breaks the vocabulary (unknown type, bad date, ...)."""

    code = "invalid_frontmatter"


class UnsafeContent(InvalidInput):
    """Content failed a safety check; subclasses name which one. `soft` writes quarantine it."""

    code = "unsafe_content"
    http_status = 422


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


class SectionMarker(UnsafeContent):
    """Written content would forge the structure Dory owns on a page: the timeline marker, or a
    canonical page's Timeline / Evidence sections (which are append-only)."""

    code = "section_marker"


class CanonicalWriteRefused(InvalidInput):
    """A live semantic write would change a canonical page without `allow_canonical`."""

    code = "canonical_target"
    http_status = 403


class UnresolvedSubject(NotFound):
    """No entity matches the subject; `details.candidates` lists the nearest ones."""

    code = "unresolved_subject"


class AmbiguousSubject(InvalidInput):
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


class LlmUnavailable(BackendUnavailable):
    """The LLM endpoint could not give an answer: unreachable, timed out, refused the key, or HTTP errors.

    Every LLM feature has a deterministic fallback: callers catch BackendUnavailable and use it."""

    code = "llm_unavailable"


class LlmBadOutput(BackendUnavailable):
    """The model answered, but not with usable JSON. `details.reason` is one of empty, not_json,
    truncated, schema; for schema, `details.field` names the first offending field.

    HTTP 502 (bad gateway): the upstream answered, with something unusable. Still a
    BackendUnavailable, so callers fall back the same way as for LlmUnavailable."""

    code = "llm_bad_output"
    http_status = 502


class LlmNotConfigured(ConfigError):
    """An operation that needs the LLM (`dory migrate --llm`) was asked for with no [llm] configured."""

    code = "llm_not_configured"


class NameTooLong(InvalidInput):
    """A file name longer than the file system allows (with room for Dory's temporary names)."""

    code = "name_too_long"


class StorageError(DoryError):
    """The file system refused a write (the write was rolled back; nothing was changed)."""

    code = "storage_error"
    http_status = 503
    exit_code = 8


class PermissionDenied(StorageError):
    code = "permission_denied"


class ReadOnlyStorage(StorageError):
    code = "read_only"


class DiskFull(StorageError):
    code = "disk_full"
    http_status = 507


_STORAGE_ERRNOS: dict[int, tuple[type[DoryError], str]] = {
    errno.ENAMETOOLONG: (NameTooLong, "shorten the file name"),
    errno.EACCES: (PermissionDenied, "check the permissions of the file and its folder"),
    errno.EPERM: (PermissionDenied, "check the permissions of the file and its folder"),
    errno.EROFS: (ReadOnlyStorage, "the file system is mounted read-only; remount it read-write"),
    errno.ENOSPC: (DiskFull, "free some disk space, then try again"),
    errno.EDQUOT: (DiskFull, "the disk quota is used up; free some space, then try again"),
}


def storage_error(exc: OSError, what: str) -> DoryError:
    """The Dory error for an OSError met while writing `what` (a path or a short description), with
    its own code and a hint; an errno without a code of its own is a plain StorageError."""
    cls, hint = _STORAGE_ERRNOS.get(exc.errno or 0, (StorageError, "see the message; nothing was changed"))
    reason = exc.strerror or str(exc)
    return cls(f"could not write {what}: {reason}; {hint}", path=what, errno=exc.errno)


class ReadOnlyCorpus(DoryError):
    """A write into a corpus Dory must not write into (a folder added with `dory add` without
    `--writable`), or of generated output when the corpus has none (`--no-output`). Nothing was
    written. Exit 8 like the other refused writes; HTTP 403: asking again will not help, only
    the corpus's configuration can."""

    code = "read_only_corpus"
    http_status = 403
    exit_code = 8


class IndexLocked(DoryError):
    code = "index_locked"
    http_status = 409
    exit_code = 6


class JobFailed(DoryError):
    """A job ran and failed; its ledger row holds the error (also in `details.error`).

    Surfaces raise it when a run they asked for comes back with status "failed" (the run itself
    is a result, not an exception): build it with `JobFailed.for_run` so every surface says the same."""

    code = "job_failed"
    http_status = 500

    @classmethod
    def for_run(cls, job: str, period: str, error: str | None) -> JobFailed:
        """The error for a failed run of `job` for `period`; `error` is the ledger's error text."""
        return cls(
            f"job {job} failed for {period}: {error or 'no error recorded'}", job=job, period=period, error=error
        )


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


class IndexBehind(BackendUnavailable):
    """A read asked for an index generation that was not reached before its deadline;
    `details.generation` is the current one."""

    code = "index_behind"


class DeadlineExceeded(BackendUnavailable):
    """A request ran past its deadline. A write may still complete: send it again with the same
    idempotency key (request id) to get its answer."""

    code = "deadline_exceeded"
    http_status = 504


class Unauthorized(DoryError):
    """No bearer token, or one that is unknown, revoked or expired."""

    code = "unauthorized"
    http_status = 401
    exit_code = 9


class Forbidden(Unauthorized):
    """A valid token without the scope this operation needs."""

    code = "forbidden"
    http_status = 403


class RequestTooLarge(InvalidInput):
    code = "request_too_large"
    http_status = 413


class RateLimited(DoryError):
    """Too many requests for this token; `details.retry_after_s` says when to try again."""

    code = "rate_limited"
    http_status = 429
    exit_code = 10


# -- systemd user units (`dory ops install-units`) --------------------------------------------------


class InvalidUnitName(InvalidInput):
    """An instance name systemd or the file system would read otherwise: letters, digits, `_`, `.` and
    `-` only, starting with a letter or digit, at most 64 characters."""

    code = "invalid_unit_name"


class UnitPathUnsupported(InvalidInput):
    """A path a unit or its environment file cannot hold as is (a newline or other control character,
    a quote the file's syntax reserves, bytes that are not UTF-8)."""

    code = "unit_path_unsupported"


class UnitFileNotOurs(AlreadyExists):
    """A unit file Dory would write is already there and Dory did not write it (or it was edited
    since): it is left alone unless --force."""

    code = "unit_file_not_ours"


class UnitNameTaken(AlreadyExists):
    """The instance name already serves another corpus (its environment file names that corpus)."""

    code = "unit_name_taken"


class SystemdUnavailable(BackendUnavailable):
    """No `systemctl`, or no systemd user manager to talk to (no user bus): the files are written,
    the units are not enabled."""

    code = "systemd_unavailable"


class SystemctlFailed(DoryError):
    """`systemctl --user` was reached but refused a command (`details.stderr` says why)."""

    code = "systemctl_failed"


def error_classes() -> list[type[DoryError]]:
    """DoryError and all its subclasses, parents before children (the table surfaces document)."""
    found: list[type[DoryError]] = []
    pending: list[type[DoryError]] = [DoryError]
    while pending:
        cls = pending.pop(0)
        if cls not in found:
            found.append(cls)
            pending.extend(cls.__subclasses__())
    return found


def error_from_dict(body: dict[str, Any]) -> DoryError:
    """Rebuild an error sent by another process (the daemon) so callers see the same class and code."""
    details = body.get("details") or {}
    message = str(body.get("message", "unknown error"))
    for cls in error_classes():
        if cls.code == body.get("code"):
            return cls(message, **details)
    return DoryError(message, **details)


# -- foreign exceptions -> DoryError ---------------------------------------------------------------


def validation_problems(exc: pydantic.ValidationError) -> list[dict[str, str]]:
    """Each problem pydantic found, as {"field", "problem", "type"}: `field` is the dotted location
    ("budget", "messages.0.role"; "input" when the model as a whole was refused), `problem` pydantic's
    message, `type` pydantic's stable error type ("missing", "int_parsing", "value_error", ...)."""
    return [
        {"field": ".".join(str(part) for part in err["loc"]) or "input", "problem": err["msg"], "type": err["type"]}
        for err in exc.errors(include_url=False, include_input=False, include_context=False)
    ]


def describe_validation_error(exc: pydantic.ValidationError) -> str:
    """One readable line: "field: problem; field: problem" (e.g. "budget: Input should be a valid integer")."""
    return "; ".join(f"{p['field']}: {p['problem']}" for p in validation_problems(exc))


def from_validation_error(exc: pydantic.ValidationError) -> UsageError:
    """A request that failed pydantic validation, as the error every surface reports.

    Returns a `UsageError`: code "usage_error", HTTP status 400, CLI exit code 2. The message lists
    each field location and pydantic's message (`describe_validation_error`); `details.errors` holds
    the same as data (`validation_problems`), never the offending input values (they may be large or
    secret). Why 400 and not 422: a request the models refuse is a malformed request like any other
    usage error, and one code must keep one status, so "usage_error" (which the CLI has always
    printed for these) stays 400 everywhere. Raise it `from exc` to keep pydantic's traceback.
    """
    return UsageError(describe_validation_error(exc), errors=validation_problems(exc))
