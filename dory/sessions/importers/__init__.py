"""Session importers: harness logs → `Session`s in Dory's transcript format (SPEC §7 "Ingest").

`parse_source(data, fmt, source_path, agent, device)` reads one file and returns the sessions in it, the
problems found (1-based line numbers; line 0 means the whole file) and how many secrets were redacted.
It never raises on bad input: a malformed line becomes a problem and the rest is imported. Every text
(messages, tool calls, titles, metadata) is cleaned (`clean_text`) and redacted (`redact`) before
message ids are computed, so re-importing the same file gives the same ids and the same bytes.

Formats and the decisions taken for each:

- `jsonl` (generic): one object per line, `{"type" | "role": "user" | "assistant" | "tool_result" |
  "system" | "summary" (and synonyms human/ai/model/tool/function), "content": str | [parts],
  "timestamp", "tool_calls"?: [str | {name, arguments|input} | {"function": {...}}], "session_id"?,
  "title"?}`. Lines with a `session_id` go to that session; the others to the file's session, whose
  id is the first `session_id` seen, else the file name's stem, else a hash of the first lines.
- `claude-code` (`~/.claude/projects/<project>/<uuid>.jsonl`): `user`/`assistant` records become
  messages; `message.content` parts: `text` kept, `tool_use` → a tool call line (`Bash: ls -la`),
  `tool_result` → a separate `tool` message (kind tool_result, `[error]` first line when `is_error`),
  `image` → `[image]` (never the base64), `thinking` skipped (private scratch work, often large).
  Consecutive assistant lines sharing `message.id` (Claude Code writes one line per content block)
  form one message. `summary` records become system summary messages and the session title. The
  compaction boundary (`system` record, subtype `compact_boundary`) becomes a system message; other
  `system` records are harness status (hooks, local commands, retries, timings) and are skipped.
  Skipped too: `isMeta` records (harness-injected caveats and command expansions), `isSidechain`
  records (subagent chatter; the subagent's answer already reaches the main thread as a tool
  result), slash-command and local-command records, hook output, and `<system-reminder>` blocks
  inside prompts and tool results (see claude_code.py). A user record marked `isCompactSummary`
  becomes a system summary. Other record types (file-history-snapshot, …) are ignored. `cwd`,
  `gitBranch` and `version` go to the frontmatter. Agent "claude-code".
- `codex` (`~/.codex/sessions/YYYY/MM/DD/rollout-…-<uuid>.jsonl`): `session_meta` gives the id, cwd,
  originator, cli_version and git branch; `turn_context` the model. `response_item` messages (user
  `input_text`, assistant `output_text`, `input_image` → `[image]`) become messages, except harness
  context (`<environment_context>`, `<user_instructions>`, AGENTS.md blocks, developer/system roles).
  `function_call`/`custom_tool_call`/`local_shell_call`/`web_search_call` become tool call lines, on
  the assistant message right before them or on a new empty assistant message; their outputs become
  tool results (the JSON `{"output", "metadata"}` wrapper is unwrapped; a non-zero exit code is noted).
  `reasoning` items are skipped (encrypted; their summaries are scratch work). `event_msg`
  `user_message`/`agent_message` mirror the response items: one is dropped when the message before it
  has the same role and text (whichever came first is kept, so a file cut between the two re-imports
  to the same ids); an event with no mirror is kept. `compacted` records become summaries. Legacy
  rollouts (items without the `payload` wrapper) are read the same way. Agent "codex".
- `markdown`: Dory's own transcript (`parse_session`); its ids are kept, its text is cleaned and
  redacted again, its agent/device win over the caller's (which fill in only what is missing).

`ImportResult.resume_line` is the line where the last message began: whoever reads a growing file
incrementally (dory/sessions/capture.py) parses again from there, since that message may still grow.

Common rules: a message with no text and no tool calls is dropped; a message equal to the one before it
(role, time, text, kind) is kept once, tool calls united; a session without messages is a problem, not
a session. The title is the source's own (`title` field, Claude Code summary), else the first line of
the first user message, else "<agent> session <id>". Status is "active" unless `now` is given: then a
session updated more than 30 minutes before `now` is "done", or "interrupted" when the file ended in a
truncated line. `redactions` counts replacements, so a secret in both a title field and a message counts
twice.

The package holds one module per format (`jsonl`, `claude_code`, `codex`, `markdown`), the readers'
shared pieces (`common`), the step from drafts to sessions (`build`) and the entry points (`dispatch`).
"""

from __future__ import annotations

from dory.sessions.importers.build import ACTIVE_WINDOW, CALL_MAX_CHARS, TITLE_MAX_CHARS
from dory.sessions.importers.common import IMAGE, ImportResult, Problem
from dory.sessions.importers.dispatch import DEFAULT_AGENTS, FORMATS, Format, detect_format, parse_source

__all__ = [
    "ACTIVE_WINDOW",
    "CALL_MAX_CHARS",
    "DEFAULT_AGENTS",
    "FORMATS",
    "IMAGE",
    "TITLE_MAX_CHARS",
    "Format",
    "ImportResult",
    "Problem",
    "detect_format",
    "parse_source",
]
