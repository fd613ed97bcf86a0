"""`SessionLink`: what ties a running agent, and the context engine inside it, to one session.

The agent loop and the context controller are given the same link, so the events they emit carry one
session id and reach one bus, and what they record goes to one record and one directory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from nova.events import EventBus
from nova.messages import new_id
from nova.sessions.recorder import SessionRecorder

__all__ = ["SessionLink"]


@dataclass(frozen=True, kw_only=True)
class SessionLink:
    id: str = field(default_factory=lambda: new_id("ses"))
    """The session's id: every event carries it."""
    recorder: SessionRecorder | None = None
    """The session record (`nova.sessions.Session`, or any `SessionRecorder`); None: nothing is recorded."""
    dir: Path | None = None
    """The session's directory: spilled, snipped and cut results are kept whole under it. None: no tool
    result is spilled or snipped (each must leave a readable path to its original)."""
    bus: EventBus = field(default_factory=EventBus)
    """Where the events go (the CLI, the TUI and the web stream subscribe)."""
