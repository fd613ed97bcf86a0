"""`PostgresWorkers`: the workers sharing one PostgreSQL database, as the session host of each sees them
(`nova.host.workers.SharedWorkers`; the hub calls these at fixed points and keeps every lock of its own).

What differs from a hub alone in its process:
- a turn (or a compaction) first takes the session's advisory lock (`nova.sessions.turn_lock`); another
  worker, or this one, asking meanwhile gets 409 naming the holder (refused, not queued: the client
  decides whether to wait, and a queue would die with its worker);
- under the lock, the session is resumed from the database (`materialize`) unless this worker kept it
  open since it last had it and the session's version (`PostgresSessionStore.session_version`: its
  last record, its row's update time, its task state's version) is the one noted then: another worker
  may have run the turns since;
- a new session is handed back as soon as it is recorded, and after a turn the session's records, meta
  and store row are written, its version noted, and only then is the lock released and the client's
  stream ended, so the next turn, on any worker, sees everything;
- the turn's stream is stored as it goes (`event_log`; its first write drops the session's older
  turns), so a client on any worker can follow it, and a cancel for a turn on another worker goes
  there as a notification (`remote_cancel`).
Each step costs as few waits on the database as it can (`nova.sessions.round_trips` counts them): the
claim reads the version in the lock's statement, and a record with its message is one statement.
A worker killed mid-turn loses its connections, so its lock goes at once; the records it committed are
rows, and the dangling tool call of the unfinished turn is repaired by the next resume as always.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from nova.errors import SessionBusy
from nova.host.workers import Claim, SharedWorkers
from nova.server.event_log import EventLog
from nova.server.remote_cancel import CancelListener, send_cancel
from nova.sessions.db_transcript import materialize, meta_from_row
from nova.sessions.meta import SessionMeta
from nova.sessions.postgres import PostgresSessionStore
from nova.sessions.turn_lock import HeldTurn, TurnLocks

__all__ = ["PostgresWorkers"]

_UNREAD = object()


class _HeldSession(Claim):
    """A held turn lock that also tells the workers' view when it is let go."""

    def __init__(self, inner: HeldTurn, on_release: Callable[[], None]) -> None:
        self._inner = inner
        self._on_release = on_release

    def release(self) -> None:
        self._on_release()
        self._inner.release()


class PostgresWorkers(SharedWorkers):
    def __init__(self, home: Path, url: str) -> None:
        self.home = home
        self.url = url
        self.turn_locks = TurnLocks(url)
        self.event_log = EventLog(url, held=self.turn_locks.held)
        """Each turn's stream as it was sent, for clients following it from any worker."""
        self._db = PostgresSessionStore(url)
        self._held: set[str] = set()
        """Sessions whose lock this worker holds, brought up to date: they exist (a delete needs the
        lock) without asking."""
        self._cancels: CancelListener | None = None
        self._claimed_at: dict[str, object] = {}
        """Each session claimed here now: its version when the claim was granted (nobody else can move it
        while the claim is held)."""

    # -- the index -----------------------------------------------------------------------------------
    def list_sessions(self) -> list[SessionMeta]:
        return [meta_from_row(row) for row in self._db.list_sessions()]

    def read_meta(self, session_id: str) -> SessionMeta | None:
        row = self._db.get_session(session_id)
        return meta_from_row(row) if row is not None else None

    def is_recorded(self, session_id: str) -> bool:
        return session_id in self._held or self._db.get_session(session_id) is not None

    def read_records(self, session_id: str) -> list[str]:
        """The session's raw log from the start, one JSON record a line, from the database's rows."""
        return self._db.read_records(session_id)

    # -- claims --------------------------------------------------------------------------------------
    def claim(self, session_id: str) -> Claim:
        # The session's version is read in the lock's statement, after the lock was granted: what
        # `resume_kept` compares, without a wait of its own.
        held = self.turn_locks.try_acquire(session_id, read_version=True)
        self._claimed_at[session_id] = held.version

        def let_go() -> None:
            self._held.discard(session_id)
            self._claimed_at.pop(session_id, None)

        return _HeldSession(held, let_go)

    def refresh(self, session_id: str) -> bool:
        if not materialize(self.home, session_id, self._db):
            return False
        self._held.add(session_id)
        return True

    def version(self, session_id: str) -> object:
        return self._db.session_version(session_id)

    def resume_kept(self, session_id: str, version: object) -> bool:
        current = self._claimed_at.pop(session_id, _UNREAD)
        if current is _UNREAD:  # not claimed through `claim` (never so in the hub): ask
            current = self._db.session_version(session_id)
        if version is None or current != version:
            return False
        self._held.add(session_id)
        return True

    def cancel_elsewhere(self, session_id: str) -> bool:
        try:
            self.turn_locks.try_acquire(session_id).release()  # free: nobody runs a turn on it
            return False
        except SessionBusy:
            send_cancel(self.url, session_id)
            return True

    def listen_for_cancels(self, cancel_here: Callable[[str], None]) -> None:
        self._cancels = CancelListener(self.url, cancel_here)

    def close(self) -> None:
        if self._cancels is not None:
            self._cancels.close()
        self.event_log.close()  # the streams' last writes, before their lock connections go
        self.turn_locks.close()
