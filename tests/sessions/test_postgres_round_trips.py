"""What the steps of a turn on PostgreSQL cost in waits on the database (`nova.sessions.round_trips` counts
them on the calling thread): a record with its message is one statement, and stays atomic; the turn
lock's claim reads the session's version in the lock's statement, after the lock was granted. Waits,
not time: each is a thread giving up the GIL and taking it back, which is what a busy worker's turns
cost more on PostgreSQL than on SQLite."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from nova.errors import SessionBusy, StorageError
from nova.sessions import postgres
from nova.sessions.postgres import PostgresSessionStore
from nova.sessions.round_trips import round_trips
from nova.sessions.schema import encode, message_record
from nova.sessions.store import SessionRecord
from nova.sessions.turn_lock import TurnLocks

from ..postgres_db import fresh_schema
from .conftest import user

pytestmark = pytest.mark.slow


@pytest.fixture
def pg_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    # Every connection counts as just handed back, so the pools never check one first: that empty query
    # (for a connection new to the pool, or idle) is the pool's, not the step's being counted.
    class JustReturned:
        def pop(self, key: int, default: object = None) -> float:
            return time.monotonic()

        def __setitem__(self, key: int, value: float) -> None:
            pass

    monkeypatch.setattr(postgres, "_returned_at", JustReturned())
    schema = fresh_schema()
    yield next(schema)
    schema.close()


def _line(message_id: str) -> str:
    return encode(message_record(user("hi", message_id))).decode().rstrip("\n")


def _costs(fn: object) -> int:
    assert callable(fn)
    before = round_trips()
    fn()
    return round_trips() - before


def test_a_record_with_its_message_costs_one_wait(pg_url: str) -> None:
    store = PostgresSessionStore(pg_url)
    store.save_session(SessionRecord(id="s1", created_at=1.0, updated_at=1.0))
    assert _costs(lambda: store.append_record("s1", _line("m1"), rid="r1", messages=[user("hi", "m1")])) == 1
    assert _costs(lambda: store.append_record("s1", '{"v":1,"type":"event"}', rid="r2")) == 1
    assert _costs(lambda: store.append_messages("s1", [user("a", "m2"), user("b", "m3")])) == 1
    assert [m.message.id for m in store.get_messages("s1")] == ["m1", "m2", "m3"]


def test_a_failed_record_write_leaves_neither_row_and_the_connection_usable(pg_url: str) -> None:
    store = PostgresSessionStore(pg_url)
    store.save_session(SessionRecord(id="s1", created_at=1.0, updated_at=1.0))
    with pytest.raises(StorageError):  # the record is not JSON: its insert fails inside the pipeline
        store.append_record("s1", "not json", rid="r1", messages=[user("hi", "m1")])
    assert store.read_records("s1") == []
    assert store.get_messages("s1") == []  # the message went with its record: rolled back too
    locks = TurnLocks(pg_url)
    held = locks.try_acquire("s1")
    try:  # the same failure on a held lock's connection, which no pool resets
        with pytest.raises(StorageError):
            store.append_record("s1", "not json", rid="r1", messages=[user("hi", "m1")])
        store.append_record("s1", _line("m1"), rid="r1", messages=[user("hi", "m1")])
    finally:
        held.release()
        locks.close()
    assert [m.message.id for m in store.get_messages("s1")] == ["m1"]


def test_the_claim_reads_the_version_in_the_locks_statement(pg_url: str) -> None:
    store = PostgresSessionStore(pg_url)
    store.save_session(SessionRecord(id="s1", created_at=1.0, updated_at=2.0))
    store.append_record("s1", _line("m1"), rid="r1", messages=[user("hi", "m1")])
    locks = TurnLocks(pg_url)
    held = None

    def claim() -> None:
        nonlocal held
        held = locks.try_acquire("s1", read_version=True)

    try:
        assert _costs(claim) == 1
        assert held is not None
        assert held.version == store.session_version("s1") == (1, 2.0, 0)
        other = TurnLocks(pg_url)
        try:
            with pytest.raises(SessionBusy):  # still a lock: another claimant is refused
                other.try_acquire("s1", read_version=True)
        finally:
            other.close()
    finally:
        if held is not None:
            held.release()
        locks.close()


def test_a_claim_of_a_session_not_recorded_has_no_version(pg_url: str) -> None:
    PostgresSessionStore(pg_url)  # migrated
    locks = TurnLocks(pg_url)
    try:
        held = locks.try_acquire("nobody", read_version=True)
        assert held.version is None
        held.release()
    finally:
        locks.close()
