"""The top-level commands defined outside cli.py, by module, with the one-line summary `dory --help`
shows for each (its help's first sentence). dory.surfaces.lazy_group imports a module only when one of
its commands runs, and lists them from here. Keep it in step with the commands' docstrings:
tests/surfaces/test_cli_imports.py fails, naming the difference, when they drift apart.
"""

from __future__ import annotations

# module -> {command name: summary}, in the order `dory --help` and the README reference list them.
COMMAND_MODULES: dict[str, dict[str, str]] = {
    "dory.surfaces.memory_cli": {
        "write": "Write one note at PATH exactly (create, append, replace or forget), from --content or --file.",
        "memory-write": (
            "Remember CONTENT about SUBJECT (a person, project, concept or decision): a claim with evidence, "
            "rendered into its canonical page."
        ),
        "proposals": "Semantic writes waiting for review (inbox/proposed → applied | rejected).",
        "link": "The link graph: [[wikilinks]], markdown links and mentions of known entities.",
    },
    "dory.surfaces.sessions_cli": {
        "sessions": "Agent session transcripts (logs/sessions/): ingest, browse, recall, compact.",
    },
    "dory.surfaces.capture_cli": {
        "capture": "Automatic capture: the daemon reads new Claude Code and Codex transcripts as they grow.",
    },
    "dory.surfaces.context_cli": {
        "wake": "The frozen block for the start of an agent session; plain output is the block itself (for hooks).",
        "active-memory": (
            "NONE, or a compact block of evidence from memory for one prompt (synthesis plus `path:lines — "
            "quote`), within the deadline; stages that run late are dropped and the block says so."
        ),
        "research": "Answer QUESTION from the corpus with cited evidence: Question, Answer, Evidence, Sources.",
        "context": "What a long-running agent's model should see next: pack, remind, mark.",
    },
    "dory.surfaces.http_cli": {
        "serve": (
            "Serve HTTP (/v1, /healthz, /readyz, /metrics, /v1/stream, the /wiki for people) and run the "
            "daemon in the same process, until SIGTERM / Ctrl-C."
        ),
        "auth": "Bearer tokens for `dory serve`: shown once, kept only as salted hashes (state folder, mode 0600).",
    },
    "dory.surfaces.mcp_cli": {
        "mcp": (
            "Serve the MCP tools (search, get, write, memory_write, wake, recall, research, link, proposals, "
            "session_ingest) over stdio. stdout carries only the protocol; logs go to stderr."
        ),
    },
    "dory.surfaces.connect_cli": {
        "connect": (
            "Add Dory's MCP server (and, for claude-code, its session hooks) to an agent harness's config; "
            "for claude-code and codex also switch on the daemon's capture of their transcripts."
        ),
        "disconnect": "Take out what `dory connect` added: each file back as it was if nothing else changed it since.",
    },
    "dory.surfaces.migrate_cli": {
        "migrate": "Import notes, chats and memories from other tools (SRC: a folder, a zip or a file).",
    },
    "dory.surfaces.corpora_cli": {
        "add": (
            "Use a folder of notes you already have (an Obsidian vault) without Dory ever writing into it: "
            "its index goes to the platform state folder, its generated output to a folder of its own."
        ),
        "remove": "Forget a corpus you added: its entry leaves corpora.toml.",
        "corpora": "The corpora you added by name (corpora.toml), and which one is the default.",
        "config": "Settings as Dory resolves them.",
    },
}
