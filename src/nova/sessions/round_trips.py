"""Counting the round trips to PostgreSQL: each time a thread waits for the database's answer.

A turn on the PostgreSQL store is paid for mostly in round trips: each one is a system call and a
thread giving up the GIL and waiting to take it back, which is where a busy worker's time went
(measured: ~1000 thread switches a turn against ~200 on SQLite). The pools' connections count their
waits per thread, so a test can hold a write to the round trips it should cost. Imports psycopg: load it
only once the `postgres` extra is known to be installed.
"""

from __future__ import annotations

import threading
from typing import Any, TypeVar

import psycopg
from psycopg.abc import PQGen

__all__ = ["CountingConnection", "round_trips"]

RV = TypeVar("RV")
_local = threading.local()


def round_trips() -> int:
    """How many times this thread has waited on a pooled connection's socket so far: one per statement,
    and in a pipeline one per statement queued as well as one for its sync (measured: a transaction of
    three statements in a pipeline, seven). A call that needs nothing from the server (a COMMIT with no
    transaction open) is not one."""
    count: int = getattr(_local, "count", 0)
    return count


class CountingConnection(psycopg.Connection[Any]):
    """A connection that counts, for the calling thread, every wait on its socket (`round_trips`)."""

    def wait(self, gen: PQGen[RV], *args: Any, **kwargs: Any) -> RV:
        return super().wait(_counted(gen), *args, **kwargs)


def _counted(gen: PQGen[RV]) -> PQGen[RV]:
    """`gen`, counted once if it waits on the socket at all (it yields what to wait for)."""
    try:
        wanted = next(gen)
    except StopIteration as done:
        result: RV = done.value
        return result
    _local.count = getattr(_local, "count", 0) + 1
    while True:
        ready = yield wanted
        try:
            wanted = gen.send(ready)
        except StopIteration as done:
            result = done.value
            return result
