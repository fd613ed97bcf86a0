"""Sessions on the PostgreSQL backend: the transcript's records are rows, a session written by one worker
resumes on another home from the database alone, and the backend is chosen by config or environment."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from nova.errors import ConfigError
from nova.sessions.backend import database_url, open_store
from nova.sessions.db_transcript import DatabaseTranscript, materialize
from nova.sessions.export import resume
from nova.sessions.session import Session
from nova.sessions.sqlite import SQLiteSessionStore

from ..postgres_db import fresh_schema
from .conftest import assistant_call, results, user

# Slow tier: a real PostgreSQL.
pytestmark = pytest.mark.slow


@pytest.fixture
def pg_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    schema = fresh_schema()
    url = next(schema)
    monkeypatch.setenv("NOVA_DATABASE_URL", url)
    yield url
    schema.close()


def test_sqlite_stays_the_default(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    assert isinstance(store, SQLiteSessionStore)
    store.close()
    assert database_url(tmp_path, {}) is None


def test_the_url_comes_from_the_environment_or_the_config(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"store": {"url": "postgresql://a@h/db"}}))
    assert database_url(tmp_path, {}) == "postgresql://a@h/db"
    assert database_url(tmp_path, {"NOVA_DATABASE_URL": "postgresql://b@h/db"}) == "postgresql://b@h/db"
    (tmp_path / "config.json").write_text(json.dumps({"store": {"url": "mysql://a@h/db"}}))
    with pytest.raises(ConfigError, match=r"config.json \[store\] url: 'mysql' is not a database"):
        database_url(tmp_path, {})


def test_records_are_rows_and_another_home_resumes_from_them(pg_url: str, tmp_path: Path) -> None:
    first_home, second_home = tmp_path / "a", tmp_path / "b"
    session = Session.create(first_home, title="shared", cwd=tmp_path)
    assert isinstance(session.transcript, DatabaseTranscript)
    session.record_message(user("hi", "m1"))
    session.record_message(assistant_call("m2", "c1"))  # the turn dies here: its call has no result
    session.transcript.close()
    session._lock.release()  # type: ignore[union-attr]  # a killed worker lets go of nothing else
    rows = session.store.read_records(session.id)  # type: ignore[attr-defined]
    lines = (first_home / "sessions" / session.id / "transcript.jsonl").read_text().splitlines()
    assert rows == lines and len(rows) == 2
    # Each record's message went to the working messages in the same transaction.
    assert [m.message.id for m in session.store.get_messages(session.id)] == ["m1", "m2"]

    store = open_store(second_home)
    assert materialize(second_home, session.id, store)
    resumed = resume(session.id, home=second_home, store=store)
    history = resumed.history
    # The dangling call is repaired as on any resume: paired with a synthetic result, never left open.
    assert [m.id for m in history][:2] == ["m1", "m2"]
    assert any(p.tool_use_id == "c1" for m in history for p in m.parts if hasattr(p, "tool_use_id"))
    resumed.session.record_message(results("m3", "c9"))
    resumed.session.close()
    assert len(store.read_records(session.id)) > 2  # type: ignore[attr-defined]


def test_materialize_says_when_the_database_has_no_such_session(pg_url: str, tmp_path: Path) -> None:
    assert not materialize(tmp_path, "s-unknown", open_store(tmp_path))


def test_a_copy_catches_up_by_appending_and_a_diverged_one_is_rewritten(pg_url: str, tmp_path: Path) -> None:
    from nova.sessions.postgres import PostgresSessionStore

    session = Session.create(tmp_path / "a", title="t", cwd=tmp_path)
    session.record_message(user("one", "m1"))
    session.close()
    other = tmp_path / "b"
    store = PostgresSessionStore(pg_url)
    assert materialize(other, session.id, store)
    copy = other / "sessions" / session.id / "transcript.jsonl"
    first_inode = copy.stat().st_ino
    with Session.open(tmp_path / "a", session.id) as again:
        again.record_message(user("two", "m2"))
    assert materialize(other, session.id, store)
    assert copy.read_text().splitlines() == store.read_records(session.id)
    assert copy.stat().st_ino == first_inode  # appended in place, not written anew
    copy.write_text('{"not": "the same"}\n')
    assert materialize(other, session.id, store)
    assert copy.read_text().splitlines() == store.read_records(session.id)


def test_a_record_and_its_message_are_one_idempotent_write(pg_url: str, tmp_path: Path) -> None:
    from nova.sessions.postgres import PostgresSessionStore
    from nova.sessions.schema import encode, message_record
    from nova.sessions.store import SessionRecord

    store = PostgresSessionStore(pg_url)
    store.save_session(SessionRecord(id="s1", created_at=1.0, updated_at=1.0))
    store.append_messages("s1", [user("before", "m0")])
    message = user("hi", "m1")
    line = encode(message_record(message)).decode().rstrip("\n")
    first = store.append_record("s1", line, rid="r1", messages=[message])
    again = store.append_record("s1", line, rid="r1", messages=[message])  # a retry after a lost reply
    assert first == again
    assert store.read_records("s1") == [line]
    stored = store.get_messages("s1")
    assert [(m.message.id, m.seq) for m in stored] == [("m0", 1), ("m1", 2)]  # numbered after the rows before
