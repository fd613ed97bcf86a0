"""A turn's stream, shared by every worker: each batch of server-sent events a worker sends its client is
first a row of `nova_events`, and its SSE id is that row's id.

A polled table, not LISTEN/NOTIFY: a client that reconnects (to any worker, after any worker died)
resumes from the last id it saw, which needs the events to be kept; a notification is gone if nobody was
listening at that moment and carries at most 8000 bytes. A follower polls every `POLL_S` on the
`(session_id, id)` index, which costs one cheap query per follower, and stops at the turn's last row.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from nova.sessions.postgres import shared_pool, with_retry
from nova.sessions.turn_lock import HeldTurn, Released

__all__ = ["POLL_S", "EventLog", "with_id"]

POLL_S = 0.1


def with_id(data: bytes, event_id: int) -> bytes:
    """`data` (one or more SSE events) with `id:` on its last event, so a client's Last-Event-ID moves
    only once it has had the whole batch."""
    body = data.rstrip(b"\n")
    cut = body.rfind(b"\n\n")
    head, last = (body[: cut + 2], body[cut + 2 :]) if cut >= 0 else (b"", body)
    return head + b"id: " + str(event_id).encode() + b"\n" + last + b"\n\n"


_INSERT = ("INSERT INTO nova_events (session_id, turn_id, data, last, created_at) VALUES (%s, %s, %s, %s, %s)"
           " RETURNING id")


class EventLog:
    """`held(session_id)` is the session's turn lock when this worker holds it: a turn publishes dozens
    of batches, and sending them over the lock's idle connection spares each a wait for the shared pool
    (measured: most of a busy worker's turn time). Without it, or once the lock is let go, the pool."""

    def __init__(self, url: str, held: Callable[[str], HeldTurn | None] | None = None) -> None:
        self._pool = shared_pool(url)
        self._held = held

    def publish(self, session_id: str, turn_id: str, data: bytes, *, last: bool = False) -> int:
        params = (session_id, turn_id, data.decode("utf-8"), last, time.time())

        import psycopg

        def insert() -> int:
            row: Any = None
            turn = self._held(session_id) if self._held is not None else None
            if turn is not None:
                try:
                    row = turn.fetchone(_INSERT, params)
                except (Released, psycopg.OperationalError):  # let go, or its connection broke: the pool
                    turn = None
            if turn is None:
                with self._pool.connection() as conn:
                    row = conn.execute(_INSERT, params).fetchone()
            assert row is not None
            return int(row[0])

        return with_retry(insert, what="publishing a turn event")

    def prune(self, session_id: str) -> None:
        """Keep only the session's latest turn (the one a reconnecting client can still be reading);
        called as a new turn starts, so the table holds at most two turns per session."""
        def delete() -> None:
            with self._pool.connection() as conn:
                conn.execute(
                    "DELETE FROM nova_events WHERE session_id = %s AND turn_id <> (SELECT turn_id FROM nova_events"
                    " WHERE session_id = %s ORDER BY id DESC LIMIT 1)", (session_id, session_id))

        with_retry(delete, what="pruning turn events")

    def _after(self, session_id: str, after: int | None) -> list[tuple[int, str, bool]]:
        with self._pool.connection() as conn:
            if after is None:  # from the start of the session's latest turn
                rows = conn.execute(
                    "SELECT id, data, last FROM nova_events WHERE session_id = %s AND turn_id = ("
                    " SELECT turn_id FROM nova_events WHERE session_id = %s ORDER BY id DESC LIMIT 1) ORDER BY id",
                    (session_id, session_id)).fetchall()
            else:
                rows = conn.execute("SELECT id, data, last FROM nova_events WHERE session_id = %s AND id > %s"
                                    " ORDER BY id LIMIT 500", (session_id, after)).fetchall()
        return [(int(r[0]), str(r[1]), bool(r[2])) for r in rows]

    async def follow(self, session_id: str, after: int | None, *, idle_timeout_s: float = 600.0
                     ) -> AsyncIterator[bytes]:
        """The events after `after` (None: the latest turn from its start), as they are published, until
        a turn's last event; gives up after `idle_timeout_s` without one."""
        quiet_since = time.monotonic()
        while True:
            rows = await asyncio.to_thread(with_retry, functools.partial(self._after, session_id, after),
                                           what="reading turn events")
            for event_id, data, last in rows:
                yield with_id(data.encode("utf-8"), event_id)
                after = event_id
                if last:
                    return
            if rows:
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since > idle_timeout_s or after is None:
                return
            await asyncio.sleep(POLL_S)
