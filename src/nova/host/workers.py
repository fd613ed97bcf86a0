"""`SharedWorkers`: what the session host asks of the other workers it shares its sessions with.

A hub alone in its process owns its sessions: their records are its home's files, and nobody else
runs a turn on them. Several `nova serve` workers over one PostgreSQL database share theirs, and then
the hub (`nova.host.hub.SessionHub`, given `shared=`) calls these at fixed points:
- the index: listing, finding and reading a session ask the shared record, not this worker's files;
- a claim: before a turn, a compaction, a delete or a read of a session's live state, the hub claims the
  session across workers (refused at once, naming the holder, when another worker has it); it asks
  whether its own copy, kept open since it last handed the session back, is still current (the version
  it noted then), and if not closes it and has the record brought up to date; when done it notes the
  session's version and lets the claim go;
- a cancel for a turn running elsewhere is passed on, and one passed on by another worker comes back
  through the callback the hub gives at start.

The server implements them (`nova.server.postgres_workers`). They only answer questions and hold the
cross-worker lock: every lock of the hub's own (its maps, the sessions' turn locks) stays in the hub.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from nova.sessions.meta import SessionMeta

__all__ = ["Claim", "SessionIndex", "SharedWorkers", "WorkerClaims"]


class SessionIndex(Protocol):
    """The recorded sessions, as the shared record knows them."""

    def list_sessions(self) -> list[SessionMeta]: ...

    def read_meta(self, session_id: str) -> SessionMeta | None:
        """The session's metadata, or None when it is not recorded."""
        ...

    def is_recorded(self, session_id: str) -> bool:
        """Whether the session exists (one this worker has claimed does, without asking)."""
        ...


class Claim(Protocol):
    """A session held by this worker across all of them."""

    def release(self) -> None:
        """Let it go: another worker may claim it at once."""
        ...


class WorkerClaims(Protocol):
    """One worker at a time works on a session."""

    def claim(self, session_id: str) -> Claim:
        """The session for this worker, at once, or `SessionBusy` naming the worker that has it."""
        ...

    def refresh(self, session_id: str) -> bool:
        """Under a claim, with this worker's copy of the session closed: write the copy anew from the
        shared record (another worker may have run the turns since). False when it is not recorded."""
        ...

    def version(self, session_id: str) -> object:
        """The session's version in the shared record, read cheaply (one query): two equal versions mean
        nothing wrote to the session between them. None when it is not recorded."""
        ...

    def resume_kept(self, session_id: str, version: object) -> bool:
        """Under a claim, with this worker's copy of the session kept open since the record was at
        `version`: True when it still is (the copy counts as brought up to date, as after `refresh`);
        False when anything wrote to the session since (close the copy and `refresh`)."""
        ...

    def cancel_elsewhere(self, session_id: str) -> bool:
        """Ask the worker running a turn on the session to stop it; False when no worker runs one."""
        ...

    def listen_for_cancels(self, cancel_here: Callable[[str], None]) -> None:
        """From now on, call `cancel_here(session_id)` when another worker passes on a cancel."""
        ...

    def close(self) -> None:
        """The hub is closing: stop listening and let go of the connections."""
        ...


class SharedWorkers(SessionIndex, WorkerClaims, Protocol):
    """Everything the hub asks when it is one worker among several."""
