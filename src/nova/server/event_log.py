"""A turn's stream, shared by every worker: each batch of server-sent events a worker sends its client is
first a row of `nova_events`, and its SSE id is that row's id.

A turn's batches are written by `TurnStream`, off the turn's thread, several to an INSERT when they come
faster than one round trip.

A polled table, not LISTEN/NOTIFY: a client that reconnects (to any worker, after any worker died)
resumes from the last id it saw, which needs the events to be kept; a notification is gone if nobody was
listening at that moment and carries at most 8000 bytes. A follower polls every `POLL_S` on the
`(session_id, id)` index, which costs one cheap query per follower, and stops at the turn's last row.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import queue
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, TypeVar

from nova.sessions.postgres import shared_pool, with_retry
from nova.sessions.turn_lock import HeldTurn, Released

__all__ = ["POLL_S", "EventLog", "TurnStream", "with_id"]

log = logging.getLogger(__name__)
T = TypeVar("T")

POLL_S = 0.1


def with_id(data: bytes, event_id: int) -> bytes:
    """`data` (one or more SSE events) with `id:` on its last event, so a client's Last-Event-ID moves
    only once it has had the whole batch."""
    body = data.rstrip(b"\n")
    cut = body.rfind(b"\n\n")
    head, last = (body[: cut + 2], body[cut + 2 :]) if cut >= 0 else (b"", body)
    return head + b"id: " + str(event_id).encode() + b"\n" + last + b"\n\n"


_INSERT = ("INSERT INTO nova_events (session_id, turn_id, data, last, created_at)"
           " SELECT %s, %s, b.data, b.last, %s FROM unnest(%s::text[], %s::boolean[]) WITH ORDINALITY"
           " AS b(data, last, n) ORDER BY b.n RETURNING id")
"""One statement whatever the batch's size (its rows are two arrays): the driver parses it once and the
server prepares it, where a VALUES list of as many rows as the batch was parsed and planned anew each
time (measured: a few per cent of a busy worker's time)."""

_PRUNE = ("WITH older AS (DELETE FROM nova_events WHERE session_id = %s AND turn_id <> (SELECT turn_id FROM"
          " nova_events WHERE session_id = %s ORDER BY id DESC LIMIT 1)) ")
"""Put before `_INSERT` for a new turn's first rows: every turn of the session but the latest one goes. One
statement, one snapshot: the latest turn it keeps is the one before the rows being inserted."""

WRITERS = 8
"""Threads writing turn streams for the whole worker; each turn has at most one write in flight."""
MAX_ROWS = 1000
"""Rows one INSERT takes at most: a bound on one statement's size, so a flood is written in parts."""


class EventLog:
    """`held(session_id)` is the session's turn lock when this worker holds it: a turn's stream goes over
    the lock's idle connection, which spares each write a wait for the shared pool (measured: most of a
    busy worker's turn time). Without it, or once the lock is let go, the pool."""

    def __init__(self, url: str, held: Callable[[str], HeldTurn | None] | None = None) -> None:
        self._pool = shared_pool(url)
        self._held = held
        # A queue the writers wait on, not a ThreadPoolExecutor: every `submit` of an executor takes two
        # locks, one of them shared by every executor of the process (the sessions' own threads, asyncio's),
        # and with a turn handing its stream over a few times a turn, hundreds of session threads queued on
        # them (measured: the most common place a PostgreSQL worker's session threads were found waiting).
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._closed = False
        self._writers = [threading.Thread(target=self._write, name=f"nova-events-{n}", daemon=True)
                         for n in range(WRITERS)]
        for writer in self._writers:
            writer.start()

    def stream(self, session_id: str, turn_id: str, deliver: Callable[[bytes], None],
               end: Callable[[], None]) -> TurnStream:
        """The publisher of one turn's stream: each batch is stored, then handed to `deliver` with its id;
        `end` runs after the last batch was delivered."""
        return TurnStream(self, session_id, turn_id, deliver, end)

    def submit(self, job: Callable[[], None]) -> None:
        """Run `job` on a writer thread; `RuntimeError` once the log is closed (the caller runs it)."""
        if self._closed:
            raise RuntimeError("the event log is closed")
        self._jobs.put(job)
        if self._closed:  # closed meanwhile: its writers may be gone, so run what is left here
            self._run_left()

    def _write(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                job()
            except Exception:  # a writer outlives one bad job (`TurnStream._drain` logs its own failures)
                log.exception("writing turn events")

    def _run_left(self) -> None:
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                return
            if job is not None:
                job()

    def publish(self, session_id: str, turn_id: str, batches: Sequence[tuple[bytes, bool]], *,
                first: bool = False) -> list[int]:
        """Store `batches` (data, last) of a turn as rows in one statement; returns their ids in order.
        The `first` write of a turn also drops the session's turns before the latest one (the one a
        reconnecting client can still be reading), in the same statement, so the table holds at most
        two turns per session."""
        if not batches:
            return []
        now = time.time()
        params = (session_id, turn_id, now, [data.decode("utf-8") for data, _ in batches],
                  [last for _, last in batches])

        sql, args = (_PRUNE + _INSERT, (session_id, session_id, *params)) if first else (_INSERT, params)

        def insert() -> list[int]:
            rows = self._on_turn_connection(session_id, lambda conn: conn.execute(sql, args).fetchall())
            # The ids come from the sequence row by row in the arrays' order (ORDER BY n), so sorted they
            # are that order whatever order RETURNING lists them in.
            return sorted(int(r[0]) for r in rows)

        return with_retry(insert, what="publishing turn events")

    def _on_turn_connection(self, session_id: str, fn: Callable[[Any], T]) -> T:
        """`fn(connection)` over the session's held turn lock connection, else a pooled one."""
        import psycopg

        turn = self._held(session_id) if self._held is not None else None
        if turn is not None:
            try:
                return turn.run(fn)
            except (Released, psycopg.OperationalError):  # let go, or its connection broke: the pool
                pass
        with self._pool.connection() as conn:
            return fn(conn)

    def close(self) -> None:
        """Write what is queued, then stop the writers."""
        self._closed = True
        for _ in self._writers:
            self._jobs.put(None)  # after every job queued so far
        for writer in self._writers:
            writer.join()
        self._run_left()  # queued by a `submit` that raced the close

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


class TurnStream:
    """One turn's stream on its way to the client through the event log, without making the turn wait for
    the database: `publish` queues a batch and returns; one write at a time per turn takes everything
    queued so far into one INSERT, then delivers each batch with its row's id. While a write is in flight
    the turn's next batches gather, so a fast stream costs a few round trips a turn instead of one per
    batch (measured: ~41 a turn with the demo provider, most of a worker's database time), and a slow one
    is written as it comes. A batch reaches the client only once it is stored: what a client
    was sent, a follower on any worker can read. What a crash loses is only what no client was sent."""

    def __init__(self, log: EventLog, session_id: str, turn_id: str, deliver: Callable[[bytes], None],
                 end: Callable[[], None]) -> None:
        self._log = log
        self._session_id = session_id
        self._turn_id = turn_id
        self._deliver = deliver
        self._end = end
        self._lock = threading.Lock()
        self._queued: list[tuple[bytes, bool]] = []
        self._writing = False
        self._written = False
        """Whether a write of this turn's was stored: the first one drops the session's older turns."""

    def publish(self, data: bytes, last: bool = False) -> None:
        with self._lock:
            self._queued.append((data, last))
            if self._writing:
                return  # the write in flight takes it next
            self._writing = True
        try:
            self._log.submit(self._drain)
        except RuntimeError:  # the writers were shut down (the server is stopping): write it here
            self._drain()

    def _drain(self) -> None:
        while True:
            with self._lock:
                batch, self._queued = self._queued[:MAX_ROWS], self._queued[MAX_ROWS:]
                if not batch:
                    self._writing = False
                    return
            try:  # one drain at a time touches `_written`
                ids: list[int | None] = list(self._log.publish(self._session_id, self._turn_id, batch,
                                                               first=not self._written))
                self._written = True
            except Exception as exc:
                # The database stayed away for the retry window: the turn's own client still gets its
                # stream (without ids, so it cannot resume it elsewhere); followers miss these batches.
                log.warning("turn %s of session %s: %s; its stream goes to its client unstored", self._turn_id,
                            self._session_id, exc)
                ids = [None] * len(batch)
            for (data, last), event_id in zip(batch, ids, strict=True):
                self._deliver(data if event_id is None else with_id(data, event_id))
                if last:
                    self._end()
