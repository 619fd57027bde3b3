"""The error table (dory.errors): stable codes and statuses, the pydantic conversion, and imports
that leave the process alone (env, threads) so the CLI entry point can set BLAS threads first."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pydantic
import pytest

import dory.errors
from dory.errors import (
    DoryError,
    InvalidInput,
    JobFailed,
    LlmBadOutput,
    UsageError,
    error_classes,
    error_from_dict,
    from_validation_error,
)

REPO = Path(__file__).resolve().parents[1]

# The public contract: class -> (code, HTTP status, CLI exit code). A code never changes once
# released; a new error gets a new class, a new code and a row here.
TABLE = {
    "DoryError": ("internal_error", 500, 1),
    "UsageError": ("usage_error", 400, 2),
    "ConfigError": ("config_error", 400, 2),
    "CorpusNotFound": ("corpus_not_found", 400, 2),
    "NotFound": ("not_found", 404, 3),
    "UnresolvedSubject": ("unresolved_subject", 404, 3),
    "InvalidInput": ("validation_error", 400, 4),
    "PathOutsideCorpus": ("path_outside_corpus", 400, 4),
    "PathNotAllowed": ("path_not_allowed", 400, 4),
    "PathNotWritable": ("path_not_writable", 400, 4),
    "FileTooLarge": ("file_too_large", 413, 4),
    "UnreadableFile": ("unreadable_file", 400, 4),
    "BrokenFrontmatter": ("broken_frontmatter", 400, 4),
    "InvalidFrontmatter": ("invalid_frontmatter", 400, 4),
    "UnsafeContent": ("unsafe_content", 422, 4),
    "ContentTooLarge": ("content_too_large", 413, 4),
    "InvisibleCharacters": ("invisible_characters", 422, 4),
    "BidiControl": ("bidi_control", 422, 4),
    "TagCharacters": ("tag_characters", 422, 4),
    "ControlCharacters": ("control_characters", 422, 4),
    "PromptInjection": ("prompt_injection", 422, 4),
    "SectionMarker": ("section_marker", 422, 4),
    "CanonicalWriteRefused": ("canonical_target", 403, 4),
    "AmbiguousSubject": ("ambiguous_subject", 400, 4),
    "BackendUnavailable": ("backend_unavailable", 503, 5),
    "ModelUnavailable": ("model_unavailable", 503, 5),
    "EmbeddingEndpointError": ("embedding_endpoint_error", 503, 5),
    "LlmUnavailable": ("llm_unavailable", 503, 5),
    "LlmBadOutput": ("llm_bad_output", 502, 5),
    "LlmNotConfigured": ("llm_not_configured", 400, 2),
    "DaemonNotRunning": ("daemon_not_running", 503, 5),
    "DaemonTimeout": ("daemon_timeout", 504, 5),
    "NameTooLong": ("name_too_long", 400, 4),
    "StorageError": ("storage_error", 503, 8),
    "PermissionDenied": ("permission_denied", 503, 8),
    "ReadOnlyStorage": ("read_only", 503, 8),
    "DiskFull": ("disk_full", 507, 8),
    "ReadOnlyCorpus": ("read_only_corpus", 403, 8),
    "IndexLocked": ("index_locked", 409, 6),
    "DaemonAlreadyRunning": ("daemon_already_running", 409, 6),
    "WriteConflict": ("conflict", 409, 7),
    "AlreadyExists": ("already_exists", 409, 7),
    "StaleProposal": ("stale_proposal", 409, 7),
    "HashConflict": ("hash_conflict", 409, 7),
    "ExpectedHashRequired": ("expected_hash_required", 428, 4),
    "IdempotencyKeyReused": ("idempotency_key_reused", 422, 4),
    "IndexBehind": ("index_behind", 503, 5),
    "DeadlineExceeded": ("deadline_exceeded", 504, 5),
    "Unauthorized": ("unauthorized", 401, 9),
    "Forbidden": ("forbidden", 403, 9),
    "RequestTooLarge": ("request_too_large", 413, 4),
    "RateLimited": ("rate_limited", 429, 10),
    "JobFailed": ("job_failed", 500, 1),
    "InvalidUnitName": ("invalid_unit_name", 400, 4),
    "UnitPathUnsupported": ("unit_path_unsupported", 400, 4),
    "UnitFileNotOurs": ("unit_file_not_ours", 409, 7),
    "UnitNameTaken": ("unit_name_taken", 409, 7),
    "SystemdUnavailable": ("systemd_unavailable", 503, 5),
    "SystemctlFailed": ("systemctl_failed", 500, 1),
}


def dory_errors() -> list[type[DoryError]]:
    return [cls for cls in error_classes() if cls.__module__ == "dory.errors"]


# -- the table ------------------------------------------------------------------------------------
def test_every_error_has_a_unique_code_and_an_http_error_status() -> None:
    classes = dory_errors()
    codes = [cls.code for cls in classes]
    assert len(codes) == len(set(codes)), sorted(c for c in codes if codes.count(c) > 1)
    for cls in classes:
        assert isinstance(cls.code, str) and cls.code.isascii() and cls.code == cls.code.lower(), cls
        assert 400 <= cls.http_status <= 599, cls
        assert cls.exit_code in range(1, 11), cls


def test_codes_statuses_and_exit_codes_are_the_published_table() -> None:
    actual = {cls.__name__: (cls.code, cls.http_status, cls.exit_code) for cls in dory_errors()}
    assert actual == TABLE


def test_no_error_class_is_named_validation_error() -> None:
    """pydantic owns that name; Dory's is InvalidInput (code "validation_error")."""
    assert not hasattr(dory.errors, "ValidationError")
    assert all(cls.__name__ != "ValidationError" for cls in error_classes())
    assert InvalidInput.code == "validation_error"


def test_every_code_round_trips_through_error_from_dict() -> None:
    for cls in dory_errors():
        rebuilt = error_from_dict(cls("boom", path="x.md").to_dict())
        assert type(rebuilt) is cls and rebuilt.message == "boom" and rebuilt.details == {"path": "x.md"}


def test_errors_are_only_defined_in_dory_errors() -> None:
    """No other module of the package subclasses a Dory error: surfaces map one table."""
    names = {cls.__name__ for cls in dory_errors()}
    offenders = []
    for path in sorted((REPO / "dory").rglob("*.py")):
        if path == REPO / "dory" / "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = {b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases}
                if bases & names:
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}")
    assert offenders == []


def test_llm_errors_live_in_dory_errors_and_fall_back_as_backend_unavailable() -> None:
    from dory import llm
    from dory.errors import BackendUnavailable, LlmUnavailable

    assert not hasattr(llm, "LlmBadOutput") and not hasattr(llm, "LlmUnavailable")  # one home: dory.errors
    assert issubclass(LlmBadOutput, BackendUnavailable) and issubclass(LlmUnavailable, BackendUnavailable)


def test_job_failed_for_run_says_which_job_period_and_error() -> None:
    err = JobFailed.for_run("daily-digest", "2026-01-02", "disk full")
    assert err.message == "job daily-digest failed for 2026-01-02: disk full"
    assert err.details == {"job": "daily-digest", "period": "2026-01-02", "error": "disk full"}
    assert (
        JobFailed.for_run("dream", "2026-01-02", None).message == "job dream failed for 2026-01-02: no error recorded"
    )


# -- pydantic -> DoryError ------------------------------------------------------------------------
class Item(pydantic.BaseModel):
    n: int


class Probe(pydantic.BaseModel):
    name: str
    count: int = 0
    items: list[Item] = pydantic.Field(default_factory=list)

    @pydantic.model_validator(mode="after")
    def _not_both_empty(self) -> Probe:
        if not self.name and not self.items:
            raise ValueError("give a name or items")
        return self


def refused(data: object) -> UsageError:
    with pytest.raises(pydantic.ValidationError) as info:
        Probe.model_validate(data)
    return from_validation_error(info.value)


def test_a_missing_field_is_a_usage_error_naming_the_field() -> None:
    err = refused({"count": 1})
    assert type(err) is UsageError
    assert (err.code, err.http_status, err.exit_code) == ("usage_error", 400, 2)
    assert err.message == "name: Field required"
    assert err.details == {"errors": [{"field": "name", "problem": "Field required", "type": "missing"}]}


def test_a_wrong_type_is_a_usage_error_naming_the_field_and_the_problem() -> None:
    err = refused({"name": "x", "count": "many"})
    assert (type(err), err.code) == (UsageError, "usage_error")
    assert err.message == "count: Input should be a valid integer, unable to parse string as an integer"
    assert err.details["errors"][0]["type"] == "int_parsing"


def test_every_problem_is_listed_with_nested_locations_and_no_input_values() -> None:
    err = refused({"count": "many", "items": [{"n": 1}, {"n": "secret-value"}]})
    assert [p["field"] for p in err.details["errors"]] == ["name", "count", "items.1.n"]
    assert err.message.startswith("name: Field required; count: Input should be a valid integer")
    assert "secret-value" not in json.dumps(err.to_dict())


def test_a_whole_model_refusal_is_located_at_input() -> None:
    err = refused({"name": ""})
    assert err.message == "input: Value error, give a name or items"


def test_the_converted_error_survives_the_daemon_round_trip() -> None:
    err = refused({"count": 1})
    rebuilt = error_from_dict(err.to_dict())
    assert type(rebuilt) is UsageError and rebuilt.details == err.details


# -- imports have no side effects -----------------------------------------------------------------
BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def run_python(code: str, **extra_env: str) -> dict[str, object]:
    """Run `code` in a fresh interpreter with a clean environment; it prints one JSON document."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(REPO), **extra_env}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_importing_the_embedders_leaves_the_environment_alone() -> None:
    result = run_python(
        "import json, os; before = dict(os.environ)\n"
        "import dory.index.embedders\n"
        "after = dict(os.environ)\n"
        "print(json.dumps({'changed': sorted(k for k in before.keys() | after.keys()"
        " if before.get(k) != after.get(k))}))"
    )
    assert result == {"changed": []}


def test_the_cli_limits_blas_threads_before_numpy_loads() -> None:
    """`dory` = dory.surfaces.cli:main. Importing the CLI must not load numpy (else main comes too
    late); main sets the BLAS variables before any command runs, and leaves a user's value alone."""
    probe = (
        "import json, os, sys\n"
        "import click\n"
        "from dory.surfaces import cli\n"
        "seen = {'numpy_after_import': 'numpy' in sys.modules}\n"
        "@cli.cli.command()\n"
        "def probe():\n"
        "    seen['numpy_in_command'] = 'numpy' in sys.modules\n"
        f"    seen['env'] = {{k: os.environ.get(k) for k in {BLAS_VARIABLES!r}}}\n"
        "sys.argv = ['dory', 'probe']\n"
        "try:\n"
        "    cli.main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(json.dumps(seen))\n"
    )
    from dory.cpu import usable_cpu_count

    count = str(usable_cpu_count())
    result = run_python(probe, OMP_NUM_THREADS="1")
    assert result == {
        "numpy_after_import": False,
        "numpy_in_command": False,
        "env": {"OPENBLAS_NUM_THREADS": count, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": count},
    }
