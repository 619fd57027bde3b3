"""Settings: CLI flag > DORY_* environment > the corpus's entry in corpora.toml > <corpus>/dory.toml > defaults.

`dory.toml` has sections (`[index]`, `[embedder]`, `[search]`); the environment names a setting as
`DORY_<SECTION>_<KEY>` (for example `DORY_EMBEDDER_BACKEND=none`), and the CLI passes overrides as
a dotted mapping (`{"embedder.backend": "none"}`). Top-level settings are `DORY_CORPUS` and
`DORY_STATE_DIR`. Which corpus, and whether it is one Dory must not write into (a vault added with
`dory add`: read-only, its state and output elsewhere), is decided by dory.corpora; a known
corpus's entry may carry sections of its own (`[corpora.NAME.jobs]`), which win over dory.toml.
`resolve_settings` also says where each value came from (`dory config show`).

Over ~400 lines because every setting is declared here once, with the comment that explains it (the
template dory.toml and `dory config show` are checked against these models).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from dory.corpora import CONFIG_FILE as CONFIG_FILE  # where it was defined before; many modules import it here
from dory.corpora import corpus_sources, locate, registration, state_dir_of
from dory.errors import ConfigError, describe_validation_error
from dory.statefolder import state_folder

# The lock file of the one writer of a state folder (daemon, reindex, `dory remove --delete-state`).
WRITER_LOCK = "writer.lock"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class IndexSettings(_Section):
    max_file_bytes: int = Field(2_000_000, ge=1)
    ignore: list[str] = Field(default_factory=list)
    chunk_tokens: int = Field(220, ge=32, le=2048)
    chunk_overlap: int = Field(32, ge=0, le=512)
    tokenizer: str = "porter unicode61 remove_diacritics 2"
    trigram: bool = False
    vector_index: Literal["auto", "flat", "ivf"] = "auto"
    ivf_threshold: int = Field(200_000, ge=1000)
    batch_files: int = Field(500, ge=1)


class WriteSettings(_Section):
    # Content of one write (exact or semantic); larger notes are written in an editor.
    max_bytes: int = Field(262_144, ge=1, le=2_000_000)
    # Content that only may be a prompt injection (a borderline score): kept in inbox/quarantine/ for
    # a person, or refused like a sure one.
    suspect_content: Literal["quarantine", "reject"] = "quarantine"


class EmbedderSection(_Section):
    backend: Literal["minilm", "openai", "sentence-transformers", "none"] = "minilm"
    runtime: Literal["auto", "numpy", "torch", "onnx"] = "auto"
    model_path: str | None = None
    url: str | None = None
    model: str | None = None
    api_key: str | None = None
    dims: int | None = None
    batch_size: int = Field(32, ge=1, le=1024)
    timeout_s: float = Field(30.0, gt=0)


class SearchSettings(_Section):
    default_k: int = Field(10, ge=1, le=200)
    rrf_k: int = Field(20, ge=1)
    lexical_weight: float = Field(1.0, ge=0)
    vector_weight: float = Field(1.0, ge=0)
    candidates: int = Field(50, ge=10, le=2000)
    # Cosine similarity a vector-only hit needs to count as evidence (dory/search/floor.py). 0.25 empties
    # 47% of unanswerable questions (LoCoMo asked of SciFact) and costs nothing measurable on SciFact or
    # LoCoMo (scripts/bench/bench_floor.py, bench_recall.py --floor). 0.30 would empty 84% at no cost on
    # those sets, but it drops a real paraphrase of a short note ("how do I look after my bread yeast
    # culture" scores 0.275 on the sourdough note of the `dory init` corpus): the shared sets have long
    # abstracts and turns, not short notes, so they cannot vouch for the higher floor.
    vector_floor: float = Field(0.25, ge=-1.0, le=1.0)
    # Fusion for session recall: turns are short, so the top of each list matters more and the
    # vector list (weaker on turns than on notes) counts half. Measured on LoCoMo (bench_recall.py).
    session_rrf_k: int = Field(5, ge=1)
    session_vector_weight: float = Field(0.5, ge=0)
    # Ranking-policy rules replacing or extending the built-in table (see dory/search/policy.py,
    # which checks them: configuration knows nothing about ranking).
    policy: list[dict[str, Any]] = Field(default_factory=list)
    # Optional LLM help through [llm] (dory/search/llm_assist): query expansion (lexical variants and
    # a hypothetical answer for the vector side) and a rerank of the top results. Off by default;
    # each LLM call gets llm_deadline_ms, after which search answers without it and says so.
    expand: bool = False
    rerank: bool = False
    llm_deadline_ms: int = Field(1500, ge=50, le=60_000)
    rerank_top: int = Field(20, ge=2, le=50)


class DaemonSettings(_Section):
    # Quiet time after a path's last event before it is indexed, and the longest a busy path waits.
    debounce_ms: int = Field(300, ge=10, le=60_000)
    max_delay_ms: int = Field(2_000, ge=10, le=600_000)
    # Chunks embedded per background batch (smaller batches keep the writer responsive).
    embed_batch: int = Field(16, ge=1, le=1024)
    # FAISS is saved as soon as it changes, at most once per this interval (longer for a big index:
    # saving takes at most 10% of the time); this is how soon other processes see new vectors.
    faiss_save_s: float = Field(1.0, ge=0.1)
    # Wall-clock check of every job's schedule: catches runs missed while the machine slept.
    heartbeat_s: float = Field(30.0, ge=0.5)
    # How far back missed periods are caught up after downtime.
    catch_up_days: int = Field(7, ge=0, le=366)
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_file: str | None = None


class JobsSettings(_Section):
    """`<job> = "<cron>"` per job (five fields, or six with seconds first), or "off".

    The job names and cron strings are checked by the job registry (dory/jobs/registry.py) when a
    service opens: configuration knows nothing about jobs."""

    model_config = ConfigDict(extra="allow")

    @model_validator(mode="after")
    def _strings(self) -> JobsSettings:
        for name, spec in (self.model_extra or {}).items():
            if not isinstance(spec, str):
                raise ValueError(f'jobs.{name} must be a cron string or "off"')
        return self

    def schedules(self) -> dict[str, str]:
        """Job name → schedule; `daily_digest` means `daily-digest` (environment names have no hyphens)."""
        return {name.replace("_", "-"): spec for name, spec in (self.model_extra or {}).items()}


class LlmSettings(_Section):
    """The optional OpenAI-compatible chat endpoint (daily digests, session summaries, migration claims).

    Off by default. url and model are checked when a client is built (dory.llm.from_settings), not
    here, so a half-filled [llm] section never stops `dory status` or search from working."""

    backend: Literal["none", "openai"] = "none"
    url: str | None = None
    model: str | None = None
    api_key: str | None = None
    # Per request; retries follow timeouts, lost connections, HTTP 429 and 5xx only.
    timeout_s: float = Field(60.0, gt=0)
    retries: int = Field(2, ge=0, le=10)
    temperature: float = Field(0.0, ge=0, le=2)
    max_tokens: int = Field(1024, ge=1)


class WakeProfile(_Section):
    """One wake profile: the sources in order and a token budget per section (by section name).

    A source is a corpus path (`core/user.md`) or one of the computed sections `privacy_boundaries`
    (boundary lines from core/user.md and core/identity.md) and `writing_voice` (the writing-voice
    page under knowledge/personal/)."""

    sections: list[str]
    budgets: dict[str, int] = Field(default_factory=dict)


class WakeSettings(_Section):
    """`dory wake`: the frozen block at the start of an agent session (SPEC §5)."""

    budget: int = Field(600, ge=50, le=1500)
    max_chars: int = Field(10_000, ge=500, le=10_000)
    recent_sessions: int = Field(3, ge=0, le=20)
    pinned_decisions: int = Field(3, ge=0, le=20)
    # Profiles named here replace the built-in profile of the same name (or add a new one).
    profiles: dict[str, WakeProfile] = Field(default_factory=dict)


class ContextSettings(_Section):
    """`dory context pack` defaults and `dory sessions compact`."""

    reserve: int = Field(512, ge=0)  # tokens left free for the model's answer
    min_recent: int = Field(6, ge=0)  # the last N messages are always kept
    beta: float = Field(0.7, ge=0, le=1)  # utility = beta*relevance + (1-beta)*agent weight
    summary_words: int = Field(400, ge=50, le=4000)  # the continuation summary's word cap


class DigestSettings(_Section):
    """The nightly digests (`daily-digest`, `weekly-digest`) and dreaming."""

    # A session written to this recently may still be going on: its day waits for the next run.
    quiet_minutes: int = Field(30, ge=0, le=24 * 60)
    # Salient sentences per session in Work Done (deterministic digests).
    sentences_per_session: int = Field(6, ge=1, le=50)
    # Characters of transcript per LLM call; a longer day is digested in several batches.
    llm_batch_chars: int = Field(48_000, ge=2_000, le=1_000_000)
    # Dreaming: a page recalled by at least this many distinct queries is proposed for review.
    recall_min_queries: int = Field(3, ge=2, le=1000)


class HttpSettings(_Section):
    """`dory serve`: the HTTP surface (SPEC §9)."""

    host: str = "127.0.0.1"
    port: int = Field(8765, ge=0, le=65535)
    max_body_bytes: int = Field(4 * 1024 * 1024, ge=1024)  # larger requests are 413 request_too_large
    deadline_s: float = Field(60.0, gt=0, le=3600)  # a request still running after this is 504
    expensive_concurrency: int = Field(2, ge=1, le=64)  # searches with vectors, eval, jobs at once
    rate_per_minute: int = Field(1200, ge=0)  # per token; 0 turns the limit off
    metrics_open: bool = False  # /metrics without a token (for a local Prometheus)
    min_generation_wait_s: float = Field(10.0, ge=0, le=60)  # how long a read waits for its generation


class CaptureSettings(_Section):
    """Automatic capture of agent sessions by the daemon (`dory capture on`): Claude Code and Codex
    transcripts on this machine, read as they grow, saved into the session plane of this corpus or
    shipped to a remote `dory serve` (`server`)."""

    enabled: bool = False
    # Where the harnesses keep their transcripts; unset means the harness's own default (or the
    # older DORY_CLAUDE_PROJECTS_ROOT / DORY_CODEX_SESSIONS_ROOT variables).
    claude_root: str | None = None
    codex_root: str | None = None
    # A sweep of every transcript this often, besides the runs that file changes trigger.
    sweep_s: float = Field(60.0, ge=0.5, le=86_400)
    # Quiet time after a transcript's last change before it is read (agents write in bursts).
    debounce_ms: int = Field(1_000, ge=10, le=600_000)
    # The device name in `logs/sessions/<agent>/<device>/`; unset: this machine's host name.
    device: str | None = None
    # Ship to a remote Dory (`dory serve`) instead of this corpus: its URL and a token with the
    # sessions scope (DORY_CAPTURE_TOKEN keeps the token out of a synced dory.toml).
    server: str | None = None
    token: str | None = None
    # Longest wait between two attempts to reach an unreachable server (the wait doubles from 1 s).
    retry_max_s: float = Field(300.0, ge=0.5, le=86_400)


class Settings(_Section):
    corpus: Path
    state_dir: Path
    # A corpus added with `dory add` (dory.corpora): its name, whether Dory may write into it, and
    # where its generated output goes. The defaults are a corpus Dory owns, output inside it.
    name: str | None = None
    owned: bool = True  # Dory owns the folder: .dory/ and dory.toml inside it, as `dory init` makes
    read_only: bool = False
    output_dir: Path | None = None  # None: inside the corpus
    no_output: bool = False  # generated output is off (digests, wiki, proposals, sessions)
    user_config: Path | None = None  # the corpora.toml that lists this corpus
    index: IndexSettings = Field(default_factory=IndexSettings)
    embedder: EmbedderSection = Field(default_factory=EmbedderSection)
    search: SearchSettings = Field(default_factory=SearchSettings)
    daemon: DaemonSettings = Field(default_factory=DaemonSettings)
    jobs: JobsSettings = Field(default_factory=JobsSettings)
    write: WriteSettings = Field(default_factory=WriteSettings)
    llm: LlmSettings = Field(default_factory=LlmSettings)
    wake: WakeSettings = Field(default_factory=WakeSettings)
    context: ContextSettings = Field(default_factory=ContextSettings)
    digest: DigestSettings = Field(default_factory=DigestSettings)
    http: HttpSettings = Field(default_factory=HttpSettings)
    capture: CaptureSettings = Field(default_factory=CaptureSettings)

    @property
    def output_root(self) -> Path | None:
        """Where Dory's generated folders (digests, wiki, proposals, sessions) are: the corpus itself
        for a corpus Dory owns, an output folder of its own, or None when output is off."""
        if self.no_output:
            return None
        return self.output_dir or self.corpus

    @property
    def db_path(self) -> Path:
        return self.state_dir / "index.sqlite"

    @property
    def faiss_path(self) -> Path:
        return self.state_dir / "vectors.faiss"

    @property
    def sessions_db_path(self) -> Path:
        return self.state_dir / "sessions.sqlite"

    @property
    def recall_log_path(self) -> Path:
        return self.state_dir / "recall.sqlite"

    @property
    def lock_path(self) -> Path:
        return self.state_dir / WRITER_LOCK

    @property
    def journal_path(self) -> Path:
        return self.state_dir / "journal"

    @property
    def receipts_path(self) -> Path:
        return self.state_dir / "receipts.sqlite"

    @property
    def ledger_path(self) -> Path:
        return self.state_dir / "jobs.sqlite"

    @property
    def tokens_path(self) -> Path:
        return self.state_dir / "tokens.json"

    @property
    def daemon_state_path(self) -> Path:
        return self.state_dir / "daemon.json"

    @property
    def capture_db_path(self) -> Path:
        return self.state_dir / "capture.sqlite"

    @property
    def capture_spool_path(self) -> Path:
        return self.state_dir / "capture-spool"


SECTIONS: dict[str, type[_Section]] = {
    "index": IndexSettings,
    "embedder": EmbedderSection,
    "search": SearchSettings,
    "daemon": DaemonSettings,
    "write": WriteSettings,
    "jobs": JobsSettings,
    "llm": LlmSettings,
    "wake": WakeSettings,
    "context": ContextSettings,
    "digest": DigestSettings,
    "http": HttpSettings,
    "capture": CaptureSettings,
}


def find_corpus(explicit: str | os.PathLike[str] | None, env: Mapping[str, str]) -> Path:
    """The corpus root (see dory.corpora for the order)."""
    return locate(explicit, env).root


def read_toml(root: Path) -> dict[str, Any]:
    path = root / CONFIG_FILE
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}", path=str(path)) from exc


def env_layer(env: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """DORY_<SECTION>_<KEY> variables as {section: {key: raw string}}."""
    layer: dict[str, dict[str, str]] = {}
    for name, value in env.items():
        if not name.startswith("DORY_") or value == "":
            continue
        rest = name[len("DORY_") :].lower()
        for section in SECTIONS:
            if rest.startswith(section + "_"):
                layer.setdefault(section, {})[rest[len(section) + 1 :]] = value
    return layer


def _coerce_env(section: type[_Section], key: str, raw: str) -> Any:
    """Environment values are strings; lists are comma-separated."""
    field = section.model_fields.get(key)
    if field is not None and "list" in str(field.annotation):
        return [item.strip() for item in raw.split(",") if item.strip()]
    return raw


def load_settings(
    corpus: str | os.PathLike[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> Settings:
    return resolve_settings(corpus, overrides, env).settings


@dataclass(frozen=True)
class Resolved:
    settings: Settings
    sources: dict[str, str]  # dotted setting ("index.chunk_tokens", "state_dir") -> where its value came from


def resolve_settings(
    corpus: str | os.PathLike[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> Resolved:
    """The settings and, for each value that is not a default, where it came from."""
    env = os.environ if env is None else env
    found = locate(corpus, env)
    root, known = found.root, found.known
    layers: dict[str, dict[str, Any]] = {name: {} for name in SECTIONS}
    sources: dict[str, str] = {"corpus": found.how}
    _add_file_layer(layers, sources, read_toml(root), str(root / CONFIG_FILE))
    if known is not None:
        _add_file_layer(layers, sources, known.settings, f"{known.source} [corpora.{known.name}]")
    for name, values in env_layer(env).items():
        for key, raw in values.items():
            layers[name][key] = _coerce_env(SECTIONS[name], key, raw)
            sources[f"{name}.{key}"] = f"env DORY_{name.upper()}_{key.upper()}"
    state_dir: Any = None  # the flag; state_folder() falls back to DORY_STATE_DIR, the user config, .dory
    for dotted, value in (overrides or {}).items():
        if value is None:
            continue
        if dotted == "state_dir":
            state_dir = value
            continue
        section, _, key = dotted.partition(".")
        if section not in layers or not key:
            raise ConfigError(f"unknown setting {dotted!r}", setting=dotted)
        layers[section][key] = value
        sources[dotted] = "command line"
    sources.update(corpus_sources(found, state_dir, env))
    try:
        settings = Settings(
            corpus=root,
            state_dir=state_folder(root, state_dir, env, state_dir_of(known, env)),
            **registration(found),
            **layers,
        )
    except ValidationError as exc:
        raise ConfigError(f"invalid settings: {describe_validation_error(exc)}") from exc
    return Resolved(settings, sources)


def _add_file_layer(
    layers: dict[str, dict[str, Any]], sources: dict[str, str], data: dict[str, Any], where: str
) -> None:
    for key, values in data.items():
        if key not in SECTIONS:
            raise ConfigError(f"{where}: unknown section [{key}]", section=key)
        if not isinstance(values, dict):
            raise ConfigError(f"{where}: [{key}] must be a table", section=key)
        layers[key].update(values)
        sources.update({f"{key}.{name}": where for name in values})
