"""One suite every `SessionStore` backend must pass: SQLite (a file and in memory) and PostgreSQL.

A backend is added by extending `BACKENDS` with a factory; nothing else in this file changes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nova.errors import StorageError
from nova.messages import Message, TextPart, ThinkingPart, to_dict
from nova.sessions.sqlite import MIGRATIONS, SQLiteSessionStore
from nova.sessions.store import SessionRecord, SessionStore, StoredTaskState, TaskStateConflict

from ..postgres_db import fresh_schema
from .conftest import assistant_call, results, user

Factory = Callable[[Path], SessionStore]


def _sqlite_file(tmp: Path) -> SessionStore:
    return SQLiteSessionStore(tmp / "nova.db")


def _sqlite_memory(tmp: Path) -> SessionStore:
    return SQLiteSessionStore(":memory:")


def _postgres(tmp: Path) -> SessionStore:
    from nova.sessions.postgres import PostgresSessionStore

    return PostgresSessionStore(_PG_URL[0])


# PostgreSQL runs against the server .ci/postgres starts (NOVA_TEST_DATABASE_URL), each test in a fresh
# schema; without one its cases skip and say why.
BACKENDS: dict[str, Factory] = {"sqlite-file": _sqlite_file, "sqlite-memory": _sqlite_memory,
                                "postgres": _postgres}
_PG_URL: list[str] = []


# The PostgreSQL cases are in the slow tier, with the other tests that need a real PostgreSQL.
@pytest.fixture(params=[pytest.param(name, marks=pytest.mark.slow) if name == "postgres" else name
                        for name in BACKENDS])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SessionStore]:
    if request.param == "postgres":
        schema = fresh_schema()
        _PG_URL[:] = [next(schema)]
        backend = BACKENDS[request.param](tmp_path)
        yield backend
        backend.close()
        schema.close()
        return
    backend = BACKENDS[request.param](tmp_path)
    yield backend
    backend.close()


def _session(id: str = "s1", updated: float = 10.0) -> SessionRecord:
    return SessionRecord(
        id=id, title="t", cwd="/w", provider="anthropic", model="m", created_at=1.0, updated_at=updated,
        meta={"message_count": 2, "usage": {"input_tokens": 5}},
    )


def test_implements_the_protocol(store: SessionStore) -> None:
    assert isinstance(store, SessionStore)


def test_session_rows_round_trip_and_list_newest_first(store: SessionStore) -> None:
    store.save_session(_session("old", 1.0))
    store.save_session(_session("new", 5.0))
    assert store.get_session("old") == _session("old", 1.0)
    assert [s.id for s in store.list_sessions()] == ["new", "old"]
    assert store.get_session("missing") is None
    store.save_session(SessionRecord(id="old", title="renamed", created_at=1.0, updated_at=9.0, compacted_at=8.5))
    got = store.get_session("old")
    assert got is not None and got.title == "renamed" and got.compacted_at == 8.5


def test_messages_keep_order_and_ignore_repeated_ids(store: SessionStore) -> None:
    store.save_session(_session())
    batch = [user("hi", "m1"), assistant_call("m2", "c1"), results("m3", "c1")]
    store.append_messages("s1", batch[:2])
    store.append_messages("s1", batch[1:])  # m2 again: a re-record after a crash must not duplicate
    stored = store.get_messages("s1")
    assert [s.message for s in stored] == batch
    assert [s.seq for s in stored] == sorted(s.seq for s in stored)
    assert store.get_messages("other") == []


def test_thinking_is_never_stored(store: SessionStore) -> None:
    store.save_session(_session())
    store.append_messages("s1", [assistant_call("m1", "c1", thinking=True)])
    (stored,) = store.get_messages("s1")
    assert not any(isinstance(p, ThinkingPart) for p in stored.message.parts)


def test_compacted_flag(store: SessionStore) -> None:
    store.save_session(_session())
    store.append_messages("s1", [user(str(i), f"m{i}") for i in range(5)])
    assert store.mark_compacted("s1", ["m0", "m1", "nope"]) == 2
    assert store.mark_compacted("s1", ["m0"]) == 0
    assert [s.message.id for s in store.get_messages("s1")] == ["m2", "m3", "m4"]
    everything = store.get_messages("s1", include_compacted=True)
    assert [(s.message.id, s.compacted) for s in everything][:3] == [("m0", True), ("m1", True), ("m2", False)]


def test_mark_compacted_many_ids(store: SessionStore) -> None:
    store.save_session(_session())
    store.append_messages("s1", [user(str(i), f"m{i}") for i in range(1200)])
    assert store.mark_compacted("s1", [f"m{i}" for i in range(1100)]) == 1100
    assert len(store.get_messages("s1")) == 100


def test_update_message_content(store: SessionStore) -> None:
    store.save_session(_session())
    store.append_messages("s1", [results("m1", "c1")])
    snipped = Message(role="user", parts=(TextPart("[... snipped ...]"),), id="m1", created_at=3.0)
    store.update_message_content("s1", "m1", snipped)
    assert store.get_messages("s1")[0].message == snipped
    with pytest.raises(StorageError, match="no message"):
        store.update_message_content("s1", "missing", snipped)


def test_rewritten_messages_are_the_live_snipped_ones(store: SessionStore) -> None:
    store.save_session(_session())
    store.append_messages("s1", [user(str(i), f"m{i}") for i in range(6)])
    assert store.get_rewritten_messages("s1") == []
    snip = {i: Message(role="user", parts=(TextPart(f"[snipped {i}]"),), id=f"m{i}", created_at=1.0) for i in (4, 1, 2)}
    for i, message in snip.items():
        store.update_message_content("s1", f"m{i}", message)
    store.mark_compacted("s1", ["m2"])  # folded away: no longer part of what resume reads
    assert [(s.message, s.compacted) for s in store.get_rewritten_messages("s1")] == [
        (snip[1], False), (snip[4], False)
    ]
    assert store.get_rewritten_messages("other") == []


def test_task_state_writes_compare_and_set_on_the_version(store: SessionStore) -> None:
    store.save_session(_session())
    assert store.get_versioned_task_state("s1") is None
    assert store.put_task_state("s1", {"goal": "a"}, expected_version=0) == 1
    with pytest.raises(TaskStateConflict):  # someone else created it first
        store.put_task_state("s1", {"goal": "b"}, expected_version=0)
    assert store.put_task_state("s1", {"goal": "c"}, expected_version=1) == 2
    with pytest.raises(TaskStateConflict):  # based on version 1, which is gone
        store.put_task_state("s1", {"goal": "stale"}, expected_version=1)
    assert store.get_versioned_task_state("s1") == StoredTaskState(state={"goal": "c"}, version=2)
    assert store.put_task_state("s1", {"goal": "d"}) == 3  # an unconditional write still bumps the version
    assert store.get_task_state("s1") == {"goal": "d"}
    with pytest.raises(TaskStateConflict):
        store.put_task_state("new", {"goal": "x"}, expected_version=4)  # no such state at all
    assert store.get_versioned_task_state("new") is None


def test_task_state_has_its_own_lifecycle(store: SessionStore) -> None:
    store.save_session(_session())
    store.append_messages("s1", [user("hi", "m1")])
    assert store.get_task_state("s1") is None
    store.put_task_state("s1", {"goal": "fix", "constraints": ["no network"]})
    store.put_task_state("s1", {"goal": "fix it", "open": [1, 2]})
    assert store.get_task_state("s1") == {"goal": "fix it", "open": [1, 2]}
    store.delete_session("s1")
    assert store.get_session("s1") is None and store.get_messages("s1", include_compacted=True) == []
    assert store.get_task_state("s1") == {"goal": "fix it", "open": [1, 2]}  # SES-6
    with pytest.raises(StorageError):
        store.put_task_state("s1", {"bad": object()})


def test_sqlite_persists_and_uses_wal(tmp_path: Path) -> None:
    first = SQLiteSessionStore(tmp_path / "nova.db")
    first.save_session(_session())
    first.append_messages("s1", [user("hi", "m1")])
    first.close()
    again = SQLiteSessionStore(tmp_path / "nova.db")
    assert again.get_messages("s1")[0].message.text == "hi"
    assert again._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    applied = [r[0] for r in again._db.execute("SELECT id FROM _migrations ORDER BY id")]
    assert applied == [n for n, _, _ in MIGRATIONS]
    again.close()


def test_sqlite_refuses_a_database_from_a_newer_nova(tmp_path: Path) -> None:
    db = SQLiteSessionStore(tmp_path / "nova.db")
    db._db.execute("INSERT INTO _migrations VALUES (999, 'future', 0)")
    db.close()
    with pytest.raises(StorageError, match="newer Nova"):
        SQLiteSessionStore(tmp_path / "nova.db")


def test_a_store_is_usable_from_several_threads(tmp_path: Path) -> None:
    """The server and the TUI reach one session from request threads and the agent's worker thread."""
    import threading

    store = SQLiteSessionStore(tmp_path / "nova.db")
    store.save_session(_session("s1"))
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(20):
                store.append_messages("s1", [user(f"t{n}-{i}", f"m{n}-{i}")])
                store.get_messages("s1")
                store.put_task_state("s1", {"n": n, "i": i})
        except BaseException as exc:  # collected: a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(store.get_messages("s1")) == 80
    store.close()


def test_sqlite_resume_query_reads_only_the_rewritten_index(tmp_path: Path) -> None:
    """What resume asks the store costs what the snips cost, not the length of the session: SQLite
    answers it from the partial index alone, never from a scan of the session's messages."""
    store = SQLiteSessionStore(tmp_path / "nova.db")
    plan = store._db.execute(
        "EXPLAIN QUERY PLAN SELECT content, seq FROM messages WHERE session_id = ? AND rewritten = 1 AND"
        " compacted = 0 ORDER BY seq", ("s1",)
    ).fetchall()
    assert any("USING INDEX messages_rewritten" in row[-1] for row in plan), plan
    store.close()


def test_a_database_from_before_the_rewritten_flag_keeps_its_snips(tmp_path: Path) -> None:
    """Rows snipped before migration 2 cannot be told apart: every live row counts as rewritten, so
    resume still prefers the store's copy."""
    import sqlite3

    db = sqlite3.connect(tmp_path / "nova.db")
    db.executescript(MIGRATIONS[0][2])
    db.execute("CREATE TABLE _migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL)")
    db.execute("INSERT INTO _migrations VALUES (1, 'sessions, messages, task state', 0)")
    snipped = Message(role="user", parts=(TextPart("[snipped]"),), id="m1", created_at=1.0)
    rows = [("m0", 1, user("kept", "m0"), 0), ("m1", 2, snipped, 0), ("m2", 3, user("old", "m2"), 1)]
    for id_, seq, message, compacted in rows:
        db.execute("INSERT INTO messages VALUES ('s1', ?, ?, 'user', ?, 1.0, ?)",
                   (id_, seq, json.dumps(to_dict(message)), compacted))
    db.commit()
    db.close()
    store = SQLiteSessionStore(tmp_path / "nova.db")
    assert [s.message.id for s in store.get_rewritten_messages("s1")] == ["m0", "m1"]
    assert store.get_rewritten_messages("s1")[1].message == snipped
    store.close()


def test_a_database_from_before_sub_agents_gains_the_parent_id(tmp_path: Path) -> None:
    """Migration 3: sessions recorded before it are top-level; a child names its parent and is found by it."""
    import sqlite3

    db = sqlite3.connect(tmp_path / "nova.db")
    db.execute("CREATE TABLE _migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL)")
    for number, name, sql in MIGRATIONS[:2]:
        db.executescript(sql)
        db.execute("INSERT INTO _migrations VALUES (?, ?, 0)", (number, name))
    db.execute("INSERT INTO sessions (id, created_at, updated_at) VALUES ('old', 1.0, 1.0)")
    db.commit()
    db.close()
    store = SQLiteSessionStore(tmp_path / "nova.db")
    old = store.get_session("old")
    assert old is not None and old.parent_id == ""
    store.save_session(SessionRecord(id="kid", created_at=2.0, updated_at=2.0, parent_id="old"))
    store.save_session(SessionRecord(id="other", created_at=3.0, updated_at=3.0))
    assert [r.id for r in store.list_children("old")] == ["kid"]
    assert store.list_children("other") == []
    plan = store._db.execute("EXPLAIN QUERY PLAN SELECT id FROM sessions WHERE parent_id = ? AND parent_id != ''",
                             ("old",)).fetchall()
    assert any("sessions_parent" in row[-1] for row in plan), plan
    store.close()
