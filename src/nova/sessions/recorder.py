"""`SessionRecorder`: what the agent loop and the context engine write into a session record.

`nova.sessions.Session` implements it; so can any outside store. Every call takes typed values (the
boundary is the transcript's own `BoundaryRecord`), so a recorder is checked by the type checker, not
found by method name at run time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from nova.messages import Message
from nova.model import Usage
from nova.sessions.schema import BoundaryRecord

__all__ = ["BoundaryRecord", "SessionRecorder"]


class SessionRecorder(Protocol):
    def record_message(self, message: Message, usage: Usage | None = None) -> None:
        """Append one message of the working history (usage is kept for audit)."""

    def record_event(self, name: str, data: Mapping[str, Any]) -> None:
        """Append a named event (a permission denial, a cache break, a repair …)."""

    def add_cost(self, usage: Usage, cost_usd: float) -> None:
        """Charge one model call to the session's totals, exactly once."""

    def update_message_content(self, message_id: str, message: Message) -> None:
        """A message of the working history was rewritten in place (a snip or a spill)."""

    def record_compact_boundary(self, boundary: BoundaryRecord) -> str:
        """A compaction: write the boundary (summary, covered ids, new head); returns its id."""

    def note_context_size(self, tokens: int) -> None:
        """Turn end: the size of the next view as Nova measures it (what every screen shows)."""

    def flush(self) -> None:
        """Turn end: make what was recorded durable."""
