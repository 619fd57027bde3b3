"""Agent harness hooks: `dory wake --hook` at session start, `dory sessions hook ingest|precompact`
when a turn, a compaction or a session ends (installed into Claude Code by `dory connect`).

Hooks fail open: whatever goes wrong (no corpus, no server, a broken event, a deadline passed),
they exit 0 and say why on stderr, so they never stop or stall the agent. `wake --hook` is on the
critical path of every session start, so it asks a running daemon (or `--server`) first, through
modules that import only the standard library (see dory.surfaces.launch), and builds the block
in-process only when nothing runs.
"""
