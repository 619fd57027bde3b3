"""Agent sessions: Dory's markdown transcript format, importers for harness logs, cleaning and redaction.

Everything here is a pure function over text; writing files and indexing belong to the callers.
"""

from dory.sessions.clean import clean_text, redact
from dory.sessions.importers import ImportResult, Problem, detect_format, parse_source
from dory.sessions.transcript import (
    Message,
    Session,
    merge,
    message_at_line,
    message_id,
    new_message,
    parse_session,
    render_session,
    session_path,
)

__all__ = [
    "ImportResult",
    "Message",
    "Problem",
    "Session",
    "clean_text",
    "detect_format",
    "merge",
    "message_at_line",
    "message_id",
    "new_message",
    "parse_session",
    "parse_source",
    "redact",
    "render_session",
    "session_path",
]
