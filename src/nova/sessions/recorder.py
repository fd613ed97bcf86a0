"""What the agent asks of the session it is recorded in, as small protocols.

- `SessionRecorder`: what the agent loop and the context engine write into a session record.
- `TaskStateSource`: the session's canonical task state, written compare-and-set (CTX-6).
- `ChildSessions`: a session of its own, linked to this one, for each sub-agent (CTX-5).
- `RecordedSession`: all three, with the session's id, directory and `close`: what
  `nova.agent.builder.build_agent` takes as `session`.

`nova.sessions.Session` implements all of them and names them among its bases; so can any outside
store. Every call takes typed values (the boundary is the transcript's own `BoundaryRecord`), so a
recorder is checked by the type checker, never found by method name at run time.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from nova.messages import Message
from nova.model import CallPurpose, Usage
from nova.sessions.schema import BoundaryRecord
from nova.sessions.store import StoredTaskState

__all__ = ["BoundaryRecord", "ChildSessions", "RecordedSession", "SessionRecorder", "TaskStateSource"]


class SessionRecorder(Protocol):
    def record_message(self, message: Message, usage: Usage | None = None) -> None:
        """Append one message of the working history (usage is kept for audit)."""

    def record_event(self, name: str, data: Mapping[str, Any]) -> None:
        """Append a named event (a permission denial, a cache break, a repair …)."""

    def add_cost(self, usage: Usage, cost_usd: float | None, purpose: CallPurpose = "turn", *,
                 calls: int = 1) -> None:
        """Charge one model call (or `calls` calls reported together, a sub-agent's) to the session's
        totals, exactly once (`cost_usd` None: price unknown), filed under what it was for
        (`nova.model.CALL_PURPOSES`)."""

    def update_message_content(self, message_id: str, message: Message) -> None:
        """A message of the working history was rewritten in place (a snip or a spill)."""

    def record_compact_boundary(self, boundary: BoundaryRecord) -> str:
        """A compaction: write the boundary (summary, covered ids, new head); returns its id."""

    def note_context_size(self, tokens: int) -> None:
        """Turn end: the size of the next view as Nova measures it (what every screen shows)."""

    def flush(self) -> None:
        """Turn end: make what was recorded durable."""


class TaskStateSource(Protocol):
    """One session's task state. Writes are compare-and-set on the version the source gave the state
    (see `SessionStore.put_task_state`); `nova.context.state.TaskStateStore` reads and writes through it."""

    def get_versioned_task_state(self) -> StoredTaskState | None:
        """The state and its version, read together; None before the first write."""
        ...

    def put_task_state(self, state: Mapping[str, Any], *, expected_version: int | None = None) -> int:
        """Write the state and return its new version; with `expected_version`, only if that is still
        the stored one (else `TaskStateConflict`)."""
        ...


class ChildSessions(Protocol):
    """What a recorded session provides so that its sub-agents are recorded too."""

    def start_child(self, *, title: str, cwd: Path, provider: str, model: str) -> RecordedSession:
        """A new session for a sub-agent of this one: on the same store, linked to it (its `parent_id`
        is this session's id, so `nova sessions show` lists it). The caller closes it."""
        ...


class RecordedSession(SessionRecorder, TaskStateSource, ChildSessions, Protocol):
    """A session an agent runs in: it records the agent's work, holds its task state and starts its
    sub-agents' sessions."""

    @property
    def id(self) -> str: ...

    @property
    def dir(self) -> Path:
        """The session directory: spilled tool results are written (and may be read back) there."""
        ...

    def close(self) -> None:
        """Flush what was recorded and let the session go."""
        ...
