"""One turn at a time per session across every worker sharing a PostgreSQL database.

A worker takes a session-level advisory lock (`pg_try_advisory_lock`) on a connection of its own before
it resumes a session for a turn, and lets go after the turn's records and meta are stored. The lock
belongs to the connection: when a worker dies (kill -9, a lost host) the database ends its connection
and the lock goes with it, so another worker can continue the session at once; nothing is left to clean
up. The lock never waits: a worker that finds it taken refuses the turn with `SessionBusy` naming the
holder, read from `pg_stat_activity` (each worker connects with `application_name` `nova <host>:<pid>`).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from nova.errors import SessionBusy
from nova.sessions.postgres import TurnReleased as Released
from nova.sessions.postgres import (
    check_if_idle,
    lend_turn_connection,
    note_returned,
    take_back_turn_connection,
    version_from_row,
    with_retry,
    worker_name,
)

__all__ = ["LOCK_POOL_SIZE", "HeldTurn", "Released", "TurnLocks", "lock_key"]

T = TypeVar("T")

LOCK_POOL_SIZE = 256
"""Turns a worker runs at once (each holds a lock connection); the database's max_connections must
cover this times the workers, plus their store pools."""


def lock_key(session_id: str) -> int:
    """A stable signed 64-bit advisory lock key for a session."""
    digest = hashlib.blake2b(b"nova-session:" + session_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class HeldTurn:
    """A held session lock; `release` ends it (closing the connection would too).

    Its connection idles for the whole turn, so the turn's own small writes can go over it (`fetchone`)
    instead of queueing for the store's pool with every other turn of the worker."""

    def __init__(self, conn: Any, key: int, give_back: Callable[[Any], None],
                 version: tuple[int, float, int] | None = None) -> None:
        self._conn = conn
        self._key = key
        self._give_back = give_back
        self.version = version
        """The session's version when the lock was granted, when `try_acquire` was asked to read it (None
        also when the session is not recorded)."""
        self._using = threading.Lock()
        """Held while a statement runs on the connection, so `release` never hands it back mid-statement."""

    def fetchone(self, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """Run one statement (autocommit) on the lock's connection and return its first row; `Released`
        when the lock was let go meanwhile."""
        row: tuple[Any, ...] | None = self.run(lambda conn: conn.execute(sql, params).fetchone())
        return row

    def run(self, fn: Callable[[Any], T]) -> T:
        """`fn(connection)` on the lock's connection (autocommit: `fn` opens a transaction if it needs
        one); `Released` when the lock was let go meanwhile."""
        with self._using:
            if self._conn is None:
                raise Released
            return fn(self._conn)

    def release(self) -> None:
        with self._using:
            if self._conn is None:
                return
            conn, self._conn = self._conn, None
        try:
            conn.execute("SELECT pg_advisory_unlock(%s)", (self._key,))
        except Exception:  # the connection is gone, and the lock with it: the pool drops a broken one
            conn.close()
        finally:
            self._give_back(conn)


class TurnLocks:
    """Lock connections come from a pool of their own (a held lock keeps its connection for the whole
    turn, so they must not starve the store's pool), in autocommit mode: a session-level lock outlives
    any transaction."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._lock_pool: Any = None
        self._guard = threading.Lock()
        self._held: dict[str, HeldTurn] = {}
        """The sessions this worker holds now, by id."""

    def _pool(self) -> Any:
        with self._guard:
            if self._lock_pool is None:
                from psycopg_pool import ConnectionPool

                from nova.sessions.round_trips import CountingConnection

                # Checked only after idling (`check_if_idle`): a lock connection handed back by the
                # last turn a moment ago spares the next claim a round trip.
                self._lock_pool = ConnectionPool(
                    self.url, min_size=1, max_size=LOCK_POOL_SIZE, open=True, timeout=30.0, name="nova-locks",
                    check=check_if_idle, reset=note_returned, connection_class=CountingConnection,
                    kwargs={"autocommit": True, "application_name": worker_name()})
            return self._lock_pool

    def close(self) -> None:
        with self._guard:
            pool, self._lock_pool = self._lock_pool, None
        if pool is not None:
            pool.close(timeout=2.0)

    def try_acquire(self, session_id: str, *, read_version: bool = False) -> HeldTurn:
        """The session's lock, or `SessionBusy`. With `read_version`, the held lock's `version` is the
        session's (`PostgresSessionStore.session_version`), read in the same statement once the lock was
        granted (`nova_claim`): what the last holder committed, without a wait of its own."""
        key = lock_key(session_id)

        def take() -> HeldTurn | None:
            conn = self._pool().getconn()
            try:
                if read_version:
                    row = conn.execute("SELECT * FROM nova_claim(%s, %s)", (key, session_id)).fetchone()
                else:
                    row = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
            except BaseException:
                self._pool().putconn(conn)
                raise
            if row is not None and row[0]:
                version = version_from_row(row[1:]) if read_version else None
                return HeldTurn(conn, key, lambda c: self._give_back(session_id, c), version)
            self._pool().putconn(conn)
            return None

        held = with_retry(take, what=f"locking session {session_id}")
        if held is None:
            raise SessionBusy(f"session {session_id} is running a turn on {self.holder(session_id)}; "
                              "try again when it ends")
        with self._guard:
            self._held[session_id] = held
        lend_turn_connection(self.url, session_id, held.run)
        return held

    def held(self, session_id: str) -> HeldTurn | None:
        """The session's lock when this worker holds it now."""
        with self._guard:
            return self._held.get(session_id)

    def _give_back(self, session_id: str, conn: Any) -> None:
        with self._guard:
            held = self._held.get(session_id)
            if held is not None and held._conn is None:
                del self._held[session_id]
                take_back_turn_connection(self.url, session_id)
            pool = self._lock_pool
        if pool is not None:
            pool.putconn(conn)
        else:  # the locks were closed meanwhile
            conn.close()

    def holder(self, session_id: str) -> str:
        """Which worker holds the session, as it named itself to the database."""
        import psycopg

        key = lock_key(session_id) & 0xFFFFFFFFFFFFFFFF
        try:
            with psycopg.connect(self.url, autocommit=True, connect_timeout=5) as conn:
                row = conn.execute(
                    "SELECT a.application_name, a.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
                    " WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1"
                    " AND l.classid::bigint = %s AND l.objid::bigint = %s"
                    " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                    (key >> 32, key & 0xFFFFFFFF),
                ).fetchone()
        except psycopg.Error:
            return "another worker"
        if row is None:
            return "another worker (it just finished)"
        return f"{row[0] or 'another client'} (database connection {row[1]})"
