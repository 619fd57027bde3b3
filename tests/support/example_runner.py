"""Running the example blocks of a document as a reader would, one command at a time, and saying how each went.

Every command runs in bash (`-o pipefail`, so a `printf … | dory write` whose dory fails fails) in
the reader's home folder, with HOME pointing there and nothing of the developer's environment that
Dory or the harnesses read (DORY_*, XDG_*, CODEX_HOME). A command passes when it exits 0.

What the runner does on a reader's behalf, each rule visible in the command it reports as run:

- **Placeholders** are filled in from what came before, as a reader would copy them:
  `sha256:…` is the last hash an earlier command of the block printed (`dory get`); `ID` is the first
  proposal still waiting (`dory proposals list --status proposed`); `RUN` the newest migration run
  (`dory migrate runs`); `dory_…` the last token an earlier command printed (`dory auth new`); a path
  with `…` in it is the one existing file it matches (`~/.claude/projects/my-app/5b6f….jsonl`).
- **Assignments** (`TOKEN=…`, `export A=… B=…`) set variables for the rest of the block.
- **Long-running commands** (`dory ops watch`, `dory serve`) start in the background; the next
  command runs once the daemon says it is up and idle (and, for `serve`, answers /readyz). They are
  stopped with Ctrl-C (SIGINT) when the block ends, and must exit 0. `serve` gets `--port 0` (a free
  port) and the block's `http://127.0.0.1:8765` becomes the address it took.
- **curl** gets `--fail-with-body`, so an HTTP error is a failing command (and its body is shown).
- A `dory migrate SRC` whose SRC does not exist gets a small source made there first
  (support.migration_sources).
- Commands a block's marker assumes (`python -m pip install .`) are not run; they are reported.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import httpx

from dory.config import load_settings
from dory.service.daemon_state import daemon_status
from support.doc_examples import Block, commands, logical_lines
from support.migration_sources import migration_source
from support.waiting import DEADLINE_S, wait_until

HASH = re.compile(r"sha256:[0-9a-f]{64}")
TOKEN = re.compile(r"\bdory_[0-9a-f]{8}_[A-Za-z0-9_-]{20,100}")
ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")
GLOBAL_OPTIONS = {"--corpus", "--state-dir", "--server", "--token"}
DEFAULT_URL = "http://127.0.0.1:8765"
# Variables of the developer's machine that Dory or the agent harnesses read.
PRIVATE_ENV = re.compile(r"^(DORY_|XDG_|CODEX_HOME$|CLAUDE_CONFIG_DIR$)")


class Unfilled(Exception):
    """A placeholder nothing earlier fills in: the command cannot run as written."""


@dataclass
class Outcome:
    """One command of a block: as written, as run, and how it went (code None: it could not run)."""

    block: Block
    written: str
    ran: str
    code: int | None
    output: str
    note: str = ""
    assumed: bool = False  # a command the block's marker takes as done: not run

    @property
    def failed(self) -> bool:
        return self.code != 0 and not self.assumed

    def report(self) -> str:
        lines = [f"{self.block.where}: {self.written}"]
        if self.ran != self.written:
            lines.append(f"    ran: {self.ran}")
        lines.append(f"    exit {self.code}" + (f" ({self.note})" if self.note else ""))
        lines += [f"    | {line}" for line in self.output.strip().splitlines()[-30:]]
        return "\n".join(lines)


@dataclass
class Background:
    """A long-running command the block started: its process and its log."""

    outcome: Outcome
    proc: subprocess.Popen[str]
    log: Path


def reader_env(home: Path, path_dirs: list[str], **extra: str) -> dict[str, str]:
    """The environment of a reader's shell: this machine's, minus what would point Dory elsewhere."""
    env = {key: value for key, value in os.environ.items() if not PRIVATE_ENV.match(key)}
    env["HOME"] = str(home)
    env["PATH"] = os.pathsep.join([*path_dirs, env.get("PATH", "/usr/bin:/bin")])
    env.update(extra)
    return env


class ExampleRunner:
    """Runs blocks in order in one home folder; each block starts from the runner's environment."""

    def __init__(self, home: Path, env: dict[str, str], cwd: Path | None = None) -> None:
        self.home = home
        self.env = env
        self.cwd = cwd or home
        self.logs = home.parent / "example-logs"
        self.logs.mkdir(exist_ok=True)

    # -- a block -----------------------------------------------------------------------------
    def run_block(self, block: Block) -> list[Outcome]:
        """Every command of the block, in order (a failure does not stop the rest: all are reported)."""
        env = dict(self.env)
        outcomes: list[Outcome] = []
        started: list[Background] = []
        url = ""
        try:
            for line in logical_lines(block.lines):
                for written in commands(line):
                    if block.marker is not None and written in block.marker.assumed:
                        reason = f"assumed done: {block.marker.reason}"
                        outcomes.append(Outcome(block, written, written, None, "", reason, assumed=True))
                        continue
                    outcome = Outcome(block, written, written, None, "")
                    outcomes.append(outcome)
                    try:
                        self._prepare(outcome, outcomes, env, url)
                    except Unfilled as exc:  # a placeholder nothing earlier fills: the command cannot run
                        outcome.note = f"placeholder: {exc}"
                        continue
                    if only_assignments(outcome.ran):
                        self._assign(outcome, env)
                    elif long_running(outcome.ran):
                        background = self._start(outcome, env)
                        started.append(background)
                        url = self._wait_up(background, env) or url
                    else:
                        self._run(outcome, env)
        finally:
            for background in reversed(started):
                self._stop(background)
        return outcomes

    def _prepare(self, outcome: Outcome, earlier: list[Outcome], env: dict[str, str], url: str) -> None:
        """The command as it will run: placeholders filled in (Unfilled if one cannot be), the
        runner's rules applied, a migration source made where the command expects one."""
        ran = self._fill(outcome.written, earlier, env)
        if url:
            ran = ran.replace(DEFAULT_URL, url)
        if re.match(r"^curl\s", ran):
            ran = "curl --fail-with-body " + ran[len("curl ") :]
        if long_running(ran) and dory_words(ran)[:1] == ["serve"] and "--port" not in ran:
            ran += " --port 0"
        outcome.ran = ran
        self._migration_source(outcome, env)

    # -- placeholders ------------------------------------------------------------------------
    def _fill(self, command: str, earlier: list[Outcome], env: dict[str, str]) -> str:
        printed = "\n".join(o.output for o in earlier)  # `earlier` ends with this command: no output yet
        if "sha256:…" in command:
            hashes = HASH.findall(printed)
            if not hashes:
                raise Unfilled("sha256:… but no earlier command of the block printed a hash")
            command = command.replace("sha256:…", hashes[-1])
        if "dory_…" in command:
            tokens = TOKEN.findall(printed)
            if not tokens:
                raise Unfilled("dory_… but no earlier command of the block printed a token")
            command = command.replace("dory_…", tokens[-1])
        words = dory_words(command)
        if words[:1] == ["proposals"] and re.search(r"\bID\b", command):
            command = re.sub(r"\bID\b", self._first_proposed(env), command)
        if words[:2] == ["migrate", "undo"] and re.search(r"\bRUN\b", command):
            command = re.sub(r"\bRUN\b", self._newest_run(env), command)
        return re.sub(r"\S*…\S*", lambda m: self._one_file(m.group(0)), command)

    def _query(self, command: str, env: dict[str, str]) -> object:
        done = subprocess.run(
            ["bash", "-c", command], env=env, cwd=self.cwd, capture_output=True, text=True, timeout=DEADLINE_S
        )
        if done.returncode != 0:
            raise Unfilled(f"`{command}` failed: {done.stdout}{done.stderr}")
        return json.loads(done.stdout)

    def _first_proposed(self, env: dict[str, str]) -> str:
        answer = self._query("dory proposals list --status proposed --json", env)
        proposals = answer["proposals"] if isinstance(answer, dict) else []
        if not proposals:
            raise Unfilled("ID but no proposal is waiting (dory proposals list --status proposed)")
        return str(proposals[0]["id"])

    def _newest_run(self, env: dict[str, str]) -> str:
        answer = self._query("dory migrate runs --json", env)
        runs = answer["runs"] if isinstance(answer, dict) else []
        if not runs:
            raise Unfilled("RUN but no migration has run (dory migrate runs)")
        return str(runs[-1]["run"])

    def _one_file(self, word: str) -> str:
        quote = word[0] if word[0] in "'\"" else ""
        pattern = str(self._path(word.strip("'\"").replace("…", "*"), self.env))
        matches = sorted(glob.glob(pattern))
        if len(matches) != 1:
            raise Unfilled(f"{word} matches {len(matches)} files, not one: {[str(m) for m in matches]}")
        return f"{quote}{matches[0]}{quote}"

    def _migration_source(self, outcome: Outcome, env: dict[str, str]) -> None:
        words = dory_words(outcome.ran)
        if words[:1] != ["migrate"] or len(words) < 2 or words[1] in ("runs", "undo", "formats"):
            return
        source = self._path(words[1], env)  # `dory migrate SRC [OPTIONS]`: the source comes first
        if source.exists():
            return
        fmt = words[words.index("--from") + 1] if "--from" in words[:-1] else None
        outcome.note = f"made {migration_source(source, fmt)} at {source}"

    def _path(self, word: str, env: dict[str, str]) -> Path:
        path = Path(word.replace("~", env["HOME"], 1) if word.startswith("~") else word)
        return path if path.is_absolute() else self.cwd / path

    # -- running -----------------------------------------------------------------------------
    def _run(self, outcome: Outcome, env: dict[str, str]) -> None:
        done = subprocess.run(
            ["bash", "-o", "pipefail", "-c", outcome.ran],
            env=env,
            cwd=self.cwd,
            stdin=subprocess.DEVNULL,  # a command reading stdin (`dory mcp`) sees it end, as after Ctrl-D
            capture_output=True,
            text=True,
            timeout=DEADLINE_S * 3,
        )
        outcome.code = done.returncode
        outcome.output = done.stdout + done.stderr

    def _assign(self, outcome: Outcome, env: dict[str, str]) -> None:
        """`A=1` / `export A=1 B=2`: run it, then read back the environment bash was left with."""
        done = subprocess.run(
            ["bash", "-c", f"set -a; {outcome.ran} && env -0"],  # set -a: a plain A=1 is exported too
            env=env,
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=DEADLINE_S,
        )
        outcome.code = done.returncode
        if done.returncode == 0:
            after = dict(item.split("=", 1) for item in done.stdout.split("\0") if "=" in item)
            for name in re.findall(r"([A-Za-z_]\w*)=", outcome.ran):
                if name in after:
                    env[name] = after[name]
        outcome.output = done.stderr

    def _start(self, outcome: Outcome, env: dict[str, str]) -> Background:
        log = self.logs / f"background-{len(list(self.logs.iterdir()))}.log"
        with log.open("w") as handle:
            proc = subprocess.Popen(
                ["bash", "-c", f"exec {outcome.ran}"], env=env, cwd=self.cwd, stdout=handle, stderr=handle, text=True
            )
        outcome.note = "started in the background"
        return Background(outcome, proc, log)

    def _wait_up(self, background: Background, env: dict[str, str]) -> str | None:
        """Until the daemon it started is up and idle; the address it serves HTTP at, if it does."""
        settings = load_settings(self._corpus_of(background.outcome.ran, env), env=env)

        def up() -> str | bool:
            if background.proc.poll() is not None:
                return True  # it exited: reported by _stop
            status = daemon_status(settings)
            if not (status.running and status.pid == background.proc.pid and status.idle):
                return False
            if dory_words(background.outcome.ran)[:1] != ["serve"]:
                return True
            if not status.http_url:
                return False
            try:
                ready = httpx.get(f"{status.http_url}/readyz", timeout=DEADLINE_S).status_code == 200
            except httpx.TransportError:
                return False
            return status.http_url if ready else False

        answer = wait_until(up, DEADLINE_S, f"`{background.outcome.ran}` to be up and idle")
        return answer if isinstance(answer, str) else None

    def _corpus_of(self, command: str, env: dict[str, str]) -> Path:
        words = shlex.split(command)
        if "--corpus" in words[:-1]:
            return self._path(words[words.index("--corpus") + 1], env)
        return Path(env["DORY_CORPUS"]) if env.get("DORY_CORPUS") else self.cwd

    def _stop(self, background: Background) -> None:
        """Ctrl-C, as the README says; the process must exit 0."""
        outcome = background.outcome
        if background.proc.poll() is None:
            background.proc.send_signal(signal.SIGINT)
            outcome.note = "stopped with Ctrl-C (SIGINT)"
        else:
            outcome.note = "exited before the block ended"
        try:
            outcome.code = background.proc.wait(DEADLINE_S)
        except subprocess.TimeoutExpired:
            background.proc.kill()
            outcome.code = background.proc.wait(DEADLINE_S)
            outcome.note = "did not stop on Ctrl-C: killed"
        outcome.output = background.log.read_text(errors="replace")


def dory_words(command: str) -> list[str]:
    """The words after `dory` and its global options (`--corpus DIR` …): the command path and its
    arguments; [] when the command does not run dory."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    if "dory" not in words:
        return []
    rest = words[words.index("dory") + 1 :]
    while rest and rest[0] in GLOBAL_OPTIONS:
        rest = rest[2:]
    return rest


def only_assignments(command: str) -> bool:
    """`A=1`, `export A=1 B=2`: variables for the rest of the block (not `A=1 dory …`, a command)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    words = words[1:] if words[:1] == ["export"] else words
    return bool(words) and all(ASSIGNMENT.match(word) for word in words)


def long_running(command: str) -> bool:
    words = dory_words(command)
    return words[:2] == ["ops", "watch"] or words[:1] == ["serve"]


def dory_on_path(dory_cmd: list[str], bin_dir: Path) -> str:
    """A folder to put first on PATH so that `dory` is the command under test: the console script's
    own folder, or one holding a small script that runs the command this test session uses."""
    if len(dory_cmd) == 1:
        return str(Path(dory_cmd[0]).parent)
    bin_dir.mkdir(parents=True, exist_ok=True)
    shim = bin_dir / "dory"
    shim.write_text("#!/bin/sh\nexec " + " ".join(shlex.quote(part) for part in dory_cmd) + ' "$@"\n')
    shim.chmod(0o755)
    return str(bin_dir)
