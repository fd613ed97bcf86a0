"""A new session whose first turn failed before the model answered holds nothing but the prompt: a
missing key, an unreachable server or a refused request leaves no conversation to read or resume.
`nova run` removes such a session rather than leave a one-message entry in `nova sessions list`; the
user runs the same command again once the cause is fixed."""

from __future__ import annotations

import logging
from pathlib import Path

from nova.errors import StorageError
from nova.sessions.session import Session, delete_session

__all__ = ["discard_if_unanswered"]

log = logging.getLogger(__name__)


def discard_if_unanswered(home: Path, session: Session) -> bool:
    """Remove `session` (already closed) when it holds at most the user's prompt: no model answer, no
    tool result. Returns whether it was removed."""
    if session.meta.message_count > 1:
        return False
    try:
        delete_session(home, session.id)
    except StorageError as exc:  # someone opened it meanwhile: leave it
        log.info("kept the unanswered session %s: %s", session.id, exc)
        return False
    return True
