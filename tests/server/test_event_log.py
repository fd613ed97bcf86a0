"""A turn's stream through the shared event log (`nova.server.event_log`), on a real PostgreSQL: batches
published faster than the database answers are stored several to a write, yet every one is its own row,
reaches the client in order with its row's id, only after it was stored, and the stream ends once, after
its last batch. Skips without the test database of `.ci/postgres`."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator

import pytest

from nova.server.event_log import EventLog

from ..postgres_db import fresh_schema

pytestmark = pytest.mark.slow


@pytest.fixture
def pg_url() -> Iterator[str]:
    schema = fresh_schema()
    yield next(schema)
    schema.close()


def _rows(url: str) -> list[tuple[int, str, bool]]:
    import psycopg

    with psycopg.connect(url) as conn:
        return [(int(r[0]), str(r[1]), bool(r[2])) for r in
                conn.execute("SELECT id, data, last FROM nova_events WHERE session_id = 's1' ORDER BY id")]


def test_a_fast_stream_is_stored_in_few_writes_and_delivered_in_order_after_storing(pg_url: str) -> None:
    log = EventLog(pg_url)
    delivered: list[bytes] = []
    stored_when_delivered: list[int] = []
    ended = threading.Event()
    writes = 0
    real_publish = log.publish

    def counting_publish(session_id: str, turn_id: str, batches: list[tuple[bytes, bool]], *,
                         first: bool = False) -> list[int]:
        nonlocal writes
        writes += 1
        return real_publish(session_id, turn_id, batches, first=first)

    log.publish = counting_publish  # type: ignore[method-assign]

    def deliver(data: bytes) -> None:
        delivered.append(data)
        stored_when_delivered.append(len(_rows(pg_url)))

    def end() -> None:
        assert not ended.is_set(), "the stream ended twice"
        ended.set()

    stream = log.stream("s1", "turn-1", deliver, end)
    batches = [f"data: {{\"n\":{n}}}\n\n".encode() for n in range(200)]
    for n, data in enumerate(batches):
        stream.publish(data, last=n == len(batches) - 1)
    assert ended.wait(30)
    log.close()

    rows = _rows(pg_url)
    assert [data for _, data, _ in rows] == [b.decode() for b in batches]  # one row per batch, in order
    assert [last for _, _, last in rows] == [False] * 199 + [True]
    assert writes < len(batches) / 4  # batches gathered while a write was in flight went together
    ids = [int(d.split(b"id: ")[1].split(b"\n")[0]) for d in delivered]
    assert ids == [row_id for row_id, _, _ in rows]  # each sent with its own row's id
    assert all(n <= seen for n, seen in enumerate(stored_when_delivered, start=1))  # stored before sent


def test_followers_read_the_stream_a_client_was_sent(pg_url: str) -> None:
    import asyncio

    log = EventLog(pg_url)
    delivered: list[bytes] = []
    ended = threading.Event()
    stream = log.stream("s1", "turn-1", delivered.append, ended.set)
    for n in range(5):
        stream.publish(f"data: {n}\n\n".encode(), last=n == 4)
    assert ended.wait(30)

    async def follow() -> list[bytes]:
        return [chunk async for chunk in log.follow("s1", None)]

    assert asyncio.run(follow()) == delivered
    log.close()


def test_a_turns_first_write_drops_the_sessions_turns_before_the_latest(pg_url: str) -> None:
    log = EventLog(pg_url)
    for turn in ("turn-1", "turn-2", "turn-3"):
        ended = threading.Event()
        stream = log.stream("s1", turn, lambda data: None, ended.set)
        stream.publish(b"data: {}\n\n")
        stream.publish(b"data: {}\n\n", last=True)
        assert ended.wait(30)
    log.close()
    import psycopg

    with psycopg.connect(pg_url) as conn:
        turns = [str(r[0]) for r in conn.execute(
            "SELECT turn_id FROM nova_events WHERE session_id = 's1' GROUP BY turn_id ORDER BY MIN(id)")]
    assert turns == ["turn-2", "turn-3"]  # the latest before the new one is kept for a reconnecting reader


def test_a_closed_log_writes_what_was_queued_and_refuses_more(pg_url: str) -> None:
    log = EventLog(pg_url)
    ran: list[int] = []
    for n in range(20):
        log.submit(functools.partial(ran.append, n))
    log.close()
    assert sorted(ran) == list(range(20))
    with pytest.raises(RuntimeError):
        log.submit(lambda: None)
