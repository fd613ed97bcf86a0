"""`SharedSessionHub`: the session host of one worker among several sharing a PostgreSQL database.

What differs from the single-process hub:
- a turn (or a compaction) first takes the session's advisory lock (`nova.sessions.turn_lock`); another
  worker, or this one, asking meanwhile gets 409 naming the holder (refused, not queued: the client
  decides whether to wait, and a queue would die with its worker);
- under the lock, the session is resumed from the database (`materialize`), never from this worker's
  memory: another worker may have run the turns since;
- a new session is closed as soon as it is recorded, and after a turn the session is closed (its records, meta and store row written) and only then is the
  lock released and the client's stream ended, so the next turn, on any worker, sees everything.
A worker killed mid-turn loses its connections, so its lock goes at once; the records it committed are
rows, and the dangling tool call of the unfinished turn is repaired by the next resume as always.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from nova import events as ev
from nova.errors import SessionBusy, SessionNotFound, StorageError
from nova.host.hub import EventSink, LiveSession, SessionHub
from nova.server.event_log import EventLog
from nova.server.remote_cancel import CancelListener, send_cancel
from nova.sessions.backend import open_store
from nova.sessions.db_transcript import materialize, meta_from_row
from nova.sessions.meta import SessionMeta, validate_session_id
from nova.sessions.turn_lock import HeldTurn, TurnLocks

__all__ = ["SharedSessionHub"]


class _Held(HeldTurn):
    """A held turn lock that also tells the hub when it is let go."""

    def __init__(self, inner: HeldTurn, on_release: Callable[[], None]) -> None:
        self._inner = inner
        self._on_release = on_release

    def release(self) -> None:
        self._on_release()
        self._inner.release()

log = logging.getLogger(__name__)


class SharedSessionHub(SessionHub):
    def __init__(self, *args: Any, url: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.url = url
        self.turn_locks = TurnLocks(url)
        self._db = open_store(self.settings.home)
        self.event_log = EventLog(url)
        self._held: set[str] = set()
        self._cancels = CancelListener(url, self._cancel_here)
        """Sessions whose lock this worker holds: they exist (a delete needs the lock) without asking."""

    # -- records come from the database --------------------------------------------------------------
    def sessions(self) -> list[SessionMeta]:
        return [meta_from_row(row) for row in self._db.list_sessions()]

    def check(self, session_id: str) -> str:
        try:
            validate_session_id(session_id)
        except StorageError:
            raise SessionNotFound(f"no session {session_id!r}") from None
        if session_id not in self._held and self._db.get_session(session_id) is None:
            raise SessionNotFound(f"no session {session_id!r}")
        return session_id

    def meta(self, session_id: str) -> SessionMeta:
        row = self._db.get_session(session_id)
        if row is None:
            raise SessionNotFound(f"no session {session_id!r}")
        return meta_from_row(row)

    def read_records(self, session_id: str) -> list[str]:
        self.check(session_id)
        return self._db.read_records(session_id)  # type: ignore[attr-defined, no-any-return]

    def create(self, title: str = "") -> LiveSession:
        """A new session, recorded and closed at once: its next turn may run on any worker, which must
        not find it held open (and its files locked) here."""
        live = super().create(title)
        self._drop_local(live.id)
        return live

    # -- work under the session's lock --------------------------------------------------------------
    def _take(self, session_id: str) -> HeldTurn:
        try:  # the id's form only: `materialize` asks the database, under the lock
            validate_session_id(session_id)
        except StorageError:
            raise SessionNotFound(f"no session {session_id!r}") from None
        held = self.turn_locks.try_acquire(session_id)
        try:
            self._drop_local(session_id)
            if not materialize(self.settings.home, session_id, self._db):
                raise SessionNotFound(f"no session {session_id!r}")
        except BaseException:
            held.release()
            raise
        self._held.add(session_id)
        return _Held(held, lambda: self._held.discard(session_id))

    def _drop_local(self, session_id: str) -> None:
        """Close this worker's open copy of the session (its history may be behind the database)."""
        with self._lock:
            live = self._live.get(session_id)
            done = self._retire(live) if live is not None and live.idle else None
        if live is not None and done is not None:
            try:
                live.close()
            finally:
                self._settle(session_id, done)
        while True:  # a close already under way (an eviction) must finish before the files are rewritten
            with self._lock:
                pending = self._pending.get(session_id)
            if pending is None:
                return
            pending.wait()

    def start_turn(self, session_id: str, text: str, sink: EventSink) -> Future[None]:
        held = self._take(session_id)
        try:
            self.event_log.prune(session_id)
        except BaseException:
            held.release()
            raise
        finished = threading.Event()

        def forward(event: ev.Event | None) -> None:
            if event is None:
                finished.set()  # the stream ends after the session is closed and the lock released
            else:
                sink(event)

        def finish(_: Future[None]) -> None:
            # Not on the session's own thread: closing waits for that thread.
            threading.Thread(target=self._end_turn, args=(session_id, held, sink, finished),
                             name="nova-turn-end", daemon=True).start()

        try:
            future = super().start_turn(session_id, text, forward)
        except BaseException:
            held.release()
            raise
        future.add_done_callback(finish)
        return future

    def _end_turn(self, session_id: str, held: HeldTurn, sink: EventSink, finished: threading.Event) -> None:
        try:
            finished.wait(timeout=60)
            self._drop_local(session_id)
        except Exception:
            log.exception("closing session %s after its turn", session_id)
        finally:
            held.release()
            sink(None)

    def compact(self, session_id: str, focus: str = "") -> tuple[bool, ev.ContextUpdate]:
        held = self._take(session_id)
        try:
            result = super().compact(session_id, focus)
            self._drop_local(session_id)
            return result
        finally:
            held.release()

    def delete(self, session_id: str) -> None:
        held = self._take(session_id)
        try:
            super().delete(session_id)
        finally:
            held.release()

    def cancel(self, session_id: str) -> bool:
        """Stop the session's turn wherever it runs: here directly, on another worker by notification.
        False when no worker runs a turn on it."""
        if super().cancel(session_id):
            return True
        try:
            self.turn_locks.try_acquire(session_id).release()  # free: nobody runs a turn on it
            return False
        except SessionBusy:
            send_cancel(self.url, session_id)
            return True

    def _cancel_here(self, session_id: str) -> None:
        with self._lock:
            live = self._live.get(session_id)
        if live is not None and live.running:
            live.agent.cancel.set()

    def close(self) -> None:
        super().close()
        self._cancels.close()
        self.turn_locks.close()

    def _with_live(self, session_id: str, fn: Callable[[LiveSession], Any]) -> Any:
        """Reads (status, context) of a session another worker may be writing: from a fresh copy, under
        the lock; while a turn runs elsewhere they answer 409 like a turn would."""
        held = self._take(session_id)
        try:
            return super()._with_live(session_id, fn)
        finally:
            try:
                self._drop_local(session_id)
            finally:
                held.release()
