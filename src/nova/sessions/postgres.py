"""The PostgreSQL `SessionStore`: sessions, working messages, task state, the transcript's records and the
server's event log in one database that several Nova workers (processes, hosts) share.

Selected by `store.url` in the config or `NOVA_DATABASE_URL` (`nova.sessions.backend`). Needs the
`postgres` extra (psycopg 3 and psycopg-pool).

Tables are prefixed `nova_` so the database can be shared with other applications. Schema changes are
numbered, forward-only migrations recorded in `nova_migrations`, applied under a transaction-scoped
advisory lock so workers starting together apply each one once; a database migrated by a newer Nova is
refused. JSON that must come back byte for byte (message content, transcript records) is stored as
`json` (kept as written, and unlike `jsonb` it accepts the `\\u0000` escape a tool's output can
contain); small structured values (session meta, task state) are `jsonb`.

Connections come from one pool per database URL and process, shared by every store object (the host
opens one store per open session). A connection lost mid-call (the database restarting, a network
blip) is retried with backoff for `RETRY_WINDOW_S` and logged as a warning each time; only then does
the call fail, with a `StorageError`. Every write is idempotent under such a retry: messages and records
carry their own keys and a repeated insert of one is ignored.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from nova.errors import MissingDependency, StorageError
from nova.messages import Message, from_dict
from nova.sessions.schema import json_text, message_json, write_task_state
from nova.sessions.store import (
    SESSION_COLUMNS,
    ConcurrentWrites,
    RecordStore,
    SessionRecord,
    SessionStore,
    StoredMessage,
    StoredTaskState,
)
from nova.version import install_line

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg_pool import ConnectionPool

__all__ = ["MIGRATIONS", "RETRY_WINDOW_S", "SESSION_VERSION", "PostgresSessionStore", "check_if_idle",
           "is_postgres_url", "note_returned", "shared_pool", "version_from_row"]

log = logging.getLogger(__name__)

RETRY_WINDOW_S = float(os.environ.get("NOVA_DATABASE_RETRY_S", "30"))
"""How long a call keeps retrying while the database cannot be reached."""
POOL_SIZE = int(os.environ.get("NOVA_DATABASE_POOL_SIZE", "16"))
_MIGRATION_LOCK = 0x4E4F5641  # "NOVA": the advisory lock key migrations run under

# Append only. Never edit a migration that has shipped: add the next number instead.
MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    (
        1,
        "sessions, messages, task state, transcript records",
        """
        CREATE TABLE nova_sessions (
            id TEXT PRIMARY KEY,
            title TEXT NOT NULL DEFAULT '',
            cwd TEXT NOT NULL DEFAULT '',
            provider TEXT NOT NULL DEFAULT '',
            model TEXT NOT NULL DEFAULT '',
            created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL,
            compacted_at DOUBLE PRECISION,
            meta JSONB NOT NULL DEFAULT '{}'
        );
        CREATE INDEX nova_sessions_updated ON nova_sessions (updated_at DESC);
        CREATE TABLE nova_messages (
            session_id TEXT NOT NULL,
            id TEXT NOT NULL,
            seq BIGINT NOT NULL,
            role TEXT NOT NULL,
            content JSON NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            compacted BOOLEAN NOT NULL DEFAULT FALSE,
            rewritten BOOLEAN NOT NULL DEFAULT FALSE,
            PRIMARY KEY (session_id, id)
        );
        CREATE INDEX nova_messages_seq ON nova_messages (session_id, seq);
        CREATE INDEX nova_messages_rewritten ON nova_messages (session_id, seq)
            WHERE rewritten AND NOT compacted;
        CREATE TABLE nova_task_state (
            session_id TEXT PRIMARY KEY,
            state JSONB NOT NULL,
            version INTEGER NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL
        );
        CREATE TABLE nova_records (
            seq BIGSERIAL PRIMARY KEY,
            session_id TEXT NOT NULL,
            rid TEXT NOT NULL UNIQUE,
            record JSON NOT NULL,
            written_at DOUBLE PRECISION NOT NULL
        );
        CREATE INDEX nova_records_session ON nova_records (session_id, seq);
        """,
    ),
    (
        2,
        "turn events for clients on any worker; server tokens",
        """
        CREATE TABLE nova_events (
            id BIGSERIAL PRIMARY KEY,
            session_id TEXT NOT NULL,
            turn_id TEXT NOT NULL,
            data TEXT NOT NULL,
            last BOOLEAN NOT NULL DEFAULT FALSE,
            created_at DOUBLE PRECISION NOT NULL
        );
        CREATE INDEX nova_events_session ON nova_events (session_id, id);
        CREATE TABLE nova_server_tokens (
            name TEXT PRIMARY KEY,
            token TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL
        );
        """,
    ),
    (
        3,
        "sessions started as sub-agents name their parent",
        """
        ALTER TABLE nova_sessions ADD COLUMN parent_id TEXT NOT NULL DEFAULT '';
        CREATE INDEX nova_sessions_parent ON nova_sessions (parent_id) WHERE parent_id != '';
        """,
    ),
    (
        4,
        "a record and its messages appended, a session claimed with its version, each in one statement",
        # One call, one statement: a wait on the connection costs a worker far more than the statement
        # (measured, one thread: ~50 us of client CPU for one statement, ~250 us for the same writes as a
        # transaction of four statements in a pipeline, seven waits). The lock serialises appends to one
        # session (two would read the same MAX(seq)) until commit; in a function each statement reads a
        # fresh snapshot, so each message is numbered after the lock was granted, after the rows before
        # it. Returns the record's sequence number (NULL without a record).
        """
        CREATE FUNCTION nova_append(p_session TEXT, p_rid TEXT, p_record TEXT, p_written DOUBLE PRECISION,
                                    p_ids TEXT[], p_roles TEXT[], p_contents TEXT[], p_created DOUBLE PRECISION[])
        RETURNS BIGINT LANGUAGE plpgsql AS $$
        DECLARE
            v_seq BIGINT;
        BEGIN
            IF p_record IS NOT NULL THEN
                INSERT INTO nova_records (session_id, rid, record, written_at)
                    VALUES (p_session, p_rid, p_record::json, p_written)
                    ON CONFLICT (rid) DO NOTHING RETURNING seq INTO v_seq;
                IF v_seq IS NULL THEN  -- a retry of an append that had committed
                    SELECT seq INTO v_seq FROM nova_records WHERE rid = p_rid;
                END IF;
            END IF;
            IF cardinality(p_ids) > 0 THEN
                PERFORM pg_advisory_xact_lock(hashtextextended('messages:' || p_session, 1));
                FOR i IN 1 .. cardinality(p_ids) LOOP
                    INSERT INTO nova_messages (session_id, id, seq, role, content, created_at)
                        SELECT p_session, p_ids[i], COALESCE(MAX(seq), 0) + 1, p_roles[i], p_contents[i]::json,
                               p_created[i]
                        FROM nova_messages WHERE session_id = p_session
                        ON CONFLICT (session_id, id) DO NOTHING;
                END LOOP;
            END IF;
            RETURN v_seq;
        END $$;
        -- A turn's claim: the session's lock and, once it is granted, the session's version (as
        -- `SESSION_VERSION` reads it, NULLs when the session is not recorded), in one call. Its own
        -- statement, so a fresh snapshot: it sees what the lock's last holder committed.
        CREATE FUNCTION nova_claim(p_key BIGINT, p_session TEXT, OUT locked BOOLEAN,
                                   OUT updated_at DOUBLE PRECISION, OUT last_record BIGINT, OUT task_version INTEGER)
        LANGUAGE plpgsql AS $$
        BEGIN
            locked := pg_try_advisory_lock(p_key);
            IF locked THEN
                SELECT s.updated_at, (SELECT MAX(seq) FROM nova_records WHERE session_id = s.id),
                       (SELECT version FROM nova_task_state WHERE session_id = s.id)
                    INTO updated_at, last_record, task_version FROM nova_sessions s WHERE s.id = p_session;
            END IF;
        END $$;
        """,
    ),
)


T = TypeVar("T")


def is_postgres_url(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


_pools: dict[str, ConnectionPool[Any]] = {}
_pools_lock = threading.Lock()
_migrated: set[str] = set()


def shared_pool(url: str) -> ConnectionPool[Any]:
    """This process's pool for `url`, opened (and the schema migrated) on first use."""
    with _pools_lock:
        pool = _pools.get(url)
        if pool is None:
            try:
                from psycopg_pool import ConnectionPool
            except ImportError:
                raise MissingDependency(
                    f"the PostgreSQL store needs its extra: {install_line('postgres')}"
                ) from None
            from nova.sessions.round_trips import CountingConnection

            # Autocommit: most calls are one statement, which then costs one round trip instead of three
            # (BEGIN, the statement, COMMIT); the calls of several statements open a transaction.
            pool = ConnectionPool(url, min_size=1, max_size=POOL_SIZE, open=False, timeout=5.0,
                                  check=check_if_idle, reset=note_returned, name="nova",
                                  connection_class=CountingConnection,
                                  kwargs={"application_name": worker_name(), "autocommit": True})
            pool.open(wait=False)
            if not _pools:
                atexit.register(close_pools)
            _pools[url] = pool
    if url not in _migrated:
        with _pools_lock:
            if url not in _migrated:
                with_retry(lambda: _migrate(pool), what=f"migrating {redact(url)}")
                _migrated.add(url)
    return pool


IDLE_CHECK_S = 5.0
"""A pooled connection idle for longer than this is checked (one empty query) before it is handed out:
the server or a network device may have dropped it meanwhile. One in use moments ago is handed out as
is, which saves a round trip on every call of a busy worker; if it did break, the call's retry covers it."""
_returned_at: dict[int, float] = {}


def note_returned(conn: Connection[Any]) -> None:
    """A pool's `reset`: the connection was in use until now (see `check_if_idle`)."""
    _returned_at[id(conn)] = time.monotonic()


def check_if_idle(conn: Connection[Any]) -> None:
    """A pool's `check`: one empty query, only for a connection idle longer than `IDLE_CHECK_S`."""
    from psycopg_pool import ConnectionPool

    returned = _returned_at.pop(id(conn), None)
    if returned is None or time.monotonic() - returned > IDLE_CHECK_S:
        ConnectionPool.check_connection(conn)


class TurnReleased(Exception):
    """A held turn lock was let go: its connection is no longer the turn's to use."""


_turn_connections: dict[tuple[str, str], Callable[[Callable[[Connection[Any]], Any]], Any]] = {}
"""The connection of each turn lock this process holds, by (url, session): a turn's writes to its own
session go over it (it idles for the turn) rather than queueing for the pool with every other turn."""


def lend_turn_connection(url: str, session_id: str, run: Callable[[Callable[[Connection[Any]], Any]], Any]) -> None:
    """`run(fn)` calls `fn` on the held lock's connection, or raises when the lock was let go."""
    _turn_connections[(url, session_id)] = run


def take_back_turn_connection(url: str, session_id: str) -> None:
    _turn_connections.pop((url, session_id), None)


def close_pools() -> None:
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
        _migrated.clear()
    for pool in pools:
        pool.close(timeout=2.0)


def worker_name() -> str:
    """How this process names itself to the database (shown as the holder of a busy session)."""
    import socket

    return f"nova {socket.gethostname()}:{os.getpid()}"


def redact(url: str) -> str:
    """The URL without its password, for messages."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def with_retry(fn: Callable[[], T], *, what: str, window_s: float | None = None) -> T:
    """`fn()`, again with backoff (0.1 s doubling to 2 s) while the database cannot be reached, for up to
    `window_s`; each retry is logged. Other database errors are not retried."""
    import psycopg

    window = RETRY_WINDOW_S if window_s is None else window_s
    deadline = time.monotonic() + window
    delay = 0.1
    attempt = 0
    while True:
        try:
            return fn()
        except psycopg.OperationalError as exc:
            attempt += 1
            if time.monotonic() + delay > deadline:
                raise StorageError(f"the database is unreachable ({what}): {_first_line(exc)}; gave up after "
                                   f"{attempt} attempt(s) over {window:.0f} s") from None
            log.warning("the database is unreachable (%s): %s; retry %d in %.1f s", what, _first_line(exc),
                        attempt, delay)
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
        except psycopg.Error as exc:
            raise StorageError(f"database error ({what}): {_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _migrate(pool: ConnectionPool[Any]) -> None:
    with pool.connection() as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        conn.execute("CREATE TABLE IF NOT EXISTS nova_migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL,"
                     " applied_at DOUBLE PRECISION)")
        applied = {int(row[0]) for row in conn.execute("SELECT id FROM nova_migrations")}
        known = {number for number, _, _ in MIGRATIONS}
        if applied - known:
            raise StorageError(f"the database was migrated by a newer Nova (migration {max(applied)}); "
                               "upgrade Nova to use it")
        for number, name, sql in MIGRATIONS:
            if number in applied:
                continue
            conn.execute(sql.encode())  # several statements: sent as one simple query
            conn.execute("INSERT INTO nova_migrations VALUES (%s, %s, %s)", (number, name, time.time()))


class PostgresSessionStore(SessionStore, RecordStore, ConcurrentWrites):
    """A `SessionStore` on PostgreSQL that keeps the transcript's records too. Thread-safe: each call
    takes a pooled connection for one statement, or one transaction when it needs several. `close()` leaves the shared pool open for the
    process's other stores."""

    concurrent_writes: Literal[True] = True
    """Writers on many connections at once are what the server is for (the host queues SQLite's)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._pool = shared_pool(url)

    def _run(self, what: str, fn: Callable[[Connection[Any]], T]) -> T:
        def attempt() -> T:
            with self._pool.connection() as conn:
                return fn(conn)

        return with_retry(attempt, what=what)

    def _run_for(self, session_id: str, what: str, fn: Callable[[Connection[Any]], T]) -> T:
        """`_run`, over the session's held turn lock connection when this process holds one."""
        import psycopg

        def attempt() -> T:
            run = _turn_connections.get((self.url, session_id))
            if run is not None:
                try:
                    result: T = run(fn)
                    return result
                except (TurnReleased, psycopg.OperationalError):  # let go, or its connection broke: the pool
                    pass
            with self._pool.connection() as conn:
                return fn(conn)

        return with_retry(attempt, what=what)

    # -- sessions -----------------------------------------------------------------------------------
    def save_session(self, record: SessionRecord) -> None:
        self._run("saving a session", lambda conn: conn.execute(
            f"INSERT INTO nova_sessions ({SESSION_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s)"
            " ON CONFLICT (id) DO UPDATE SET title = EXCLUDED.title, cwd = EXCLUDED.cwd,"
            " provider = EXCLUDED.provider, model = EXCLUDED.model, created_at = EXCLUDED.created_at,"
            " updated_at = EXCLUDED.updated_at, compacted_at = EXCLUDED.compacted_at, meta = EXCLUDED.meta,"
            " parent_id = EXCLUDED.parent_id",
            (record.id, record.title, record.cwd, record.provider, record.model, record.created_at,
             record.updated_at, record.compacted_at, json_text(dict(record.meta)), record.parent_id),
        ))

    def get_session(self, session_id: str) -> SessionRecord | None:
        row = self._run("reading a session", lambda conn: conn.execute(
            f"SELECT {SESSION_COLUMNS} FROM nova_sessions WHERE id = %s", (session_id,)).fetchone())
        return SessionRecord.from_row(row) if row else None

    def list_sessions(self) -> list[SessionRecord]:
        rows = self._run("listing sessions", lambda conn: conn.execute(
            f"SELECT {SESSION_COLUMNS} FROM nova_sessions ORDER BY updated_at DESC, id").fetchall())
        return [SessionRecord.from_row(r) for r in rows]

    def list_children(self, parent_id: str) -> list[SessionRecord]:
        rows = self._run("listing sub-agent sessions", lambda conn: conn.execute(
            f"SELECT {SESSION_COLUMNS} FROM nova_sessions WHERE parent_id = %s AND parent_id != ''"
            " ORDER BY created_at, id", (parent_id,)).fetchall())
        return [SessionRecord.from_row(r) for r in rows]

    def delete_session(self, session_id: str) -> None:
        def delete(conn: Connection[Any]) -> None:
            with conn.transaction(), conn.pipeline():  # one sync for the four
                conn.execute("DELETE FROM nova_messages WHERE session_id = %s", (session_id,))
                conn.execute("DELETE FROM nova_records WHERE session_id = %s", (session_id,))
                conn.execute("DELETE FROM nova_events WHERE session_id = %s", (session_id,))
                conn.execute("DELETE FROM nova_sessions WHERE id = %s", (session_id,))

        self._run("deleting a session", delete)

    # -- messages -----------------------------------------------------------------------------------
    def append_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        if not messages:
            return

        params = _append_params(session_id, None, None, messages)
        self._run_for(session_id, "appending messages", lambda conn: conn.execute(_APPEND, params))

    def get_messages(self, session_id: str, *, include_compacted: bool = False) -> list[StoredMessage]:
        sql = "SELECT content::text, seq, compacted FROM nova_messages WHERE session_id = %s"
        if not include_compacted:
            sql += " AND NOT compacted"
        rows = self._run("reading messages", lambda conn: conn.execute(sql + " ORDER BY seq",
                                                                       (session_id,)).fetchall())
        return [StoredMessage(from_dict(json.loads(c)), int(seq), bool(flag)) for c, seq, flag in rows]

    def get_rewritten_messages(self, session_id: str) -> list[StoredMessage]:
        rows = self._run("reading rewritten messages", lambda conn: conn.execute(
            "SELECT content::text, seq FROM nova_messages WHERE session_id = %s AND rewritten AND NOT compacted"
            " ORDER BY seq", (session_id,)).fetchall())
        return [StoredMessage(from_dict(json.loads(c)), int(seq), False) for c, seq in rows]

    def update_message_content(self, session_id: str, message_id: str, message: Message) -> None:
        if message.id != message_id:
            message = Message(message.role, message.parts, message_id, message.created_at, message.metadata)
        changed = self._run("rewriting a message", lambda conn: conn.execute(
            "UPDATE nova_messages SET content = %s::json, role = %s, rewritten = TRUE"
            " WHERE session_id = %s AND id = %s", (message_json(message), message.role, session_id, message_id)).rowcount)
        if changed == 0:
            raise StorageError(f"session {session_id} has no message {message_id}")

    def mark_compacted(self, session_id: str, message_ids: Iterable[str]) -> int:
        ids = list(message_ids)
        if not ids:
            return 0
        return int(self._run("marking messages compacted", lambda conn: conn.execute(
            "UPDATE nova_messages SET compacted = TRUE WHERE session_id = %s AND NOT compacted AND id = ANY(%s)",
            (session_id, ids)).rowcount))

    # -- task state ---------------------------------------------------------------------------------
    def get_task_state(self, session_id: str) -> dict[str, Any] | None:
        stored = self.get_versioned_task_state(session_id)
        return stored.state if stored is not None else None

    def get_versioned_task_state(self, session_id: str) -> StoredTaskState | None:
        row = self._run("reading task state", lambda conn: conn.execute(
            "SELECT state::text, version FROM nova_task_state WHERE session_id = %s", (session_id,)).fetchone())
        return None if row is None else StoredTaskState.from_row(row[0], row[1])

    def put_task_state(
        self, session_id: str, state: Mapping[str, Any], *, expected_version: int | None = None
    ) -> int:
        def upsert(text: str, now: float) -> int:
            row = self._run("writing task state", lambda conn: conn.execute(
                "INSERT INTO nova_task_state (session_id, state, version, updated_at) VALUES (%s, %s::jsonb, 1, %s)"
                " ON CONFLICT (session_id) DO UPDATE SET state = EXCLUDED.state,"
                " version = nova_task_state.version + 1, updated_at = EXCLUDED.updated_at RETURNING version",
                (session_id, text, now)).fetchone())
            assert row is not None
            return int(row[0])

        def insert_new(text: str, now: float) -> int:
            return self._run("writing task state", lambda conn: conn.execute(
                "INSERT INTO nova_task_state (session_id, state, version, updated_at) VALUES (%s, %s::jsonb, 1, %s)"
                " ON CONFLICT (session_id) DO NOTHING", (session_id, text, now)).rowcount)

        def update_at(text: str, now: float, version: int) -> int:
            return self._run("writing task state", lambda conn: conn.execute(
                "UPDATE nova_task_state SET state = %s::jsonb, version = version + 1, updated_at = %s"
                " WHERE session_id = %s AND version = %s", (text, now, session_id, version)).rowcount)

        return write_task_state(session_id, state, expected_version, upsert=upsert, insert_new=insert_new,
                                update_at=update_at)

    # -- transcript records (append-only; see `nova.sessions.db_transcript`) -------------------------
    def append_record(self, session_id: str, record_json: str, *, rid: str | None = None,
                      messages: Sequence[Message] = ()) -> int:
        """Store one transcript record (its JSON text, as the JSONL line holds it); returns its sequence
        number. `rid` makes a retried append a no-op. `messages` (the record's message) are appended to
        the working messages in the same transaction; either way the append costs one round trip."""
        key = rid or uuid.uuid4().hex

        def append(conn: Connection[Any]) -> int:
            if messages:  # `nova_append` finds the sequence number of a retried record itself
                row = conn.execute(_APPEND, _append_params(session_id, key, record_json, messages)).fetchone()
            else:
                row = conn.execute(_INSERT_RECORD, (session_id, key, record_json, time.time())).fetchone()
            if row is None:  # a retry of an append that had committed
                row = conn.execute("SELECT seq FROM nova_records WHERE rid = %s", (key,)).fetchone()
            assert row is not None
            return int(row[0])

        return self._run_for(session_id, "appending a transcript record", append)

    def read_records(self, session_id: str, *, skip: int = 0) -> list[str]:
        """The session's transcript records in order, each as its JSON text; `skip` leaves out that many
        from the start (a copy that has them already)."""
        rows = self._run("reading transcript records", lambda conn: conn.execute(
            "SELECT record::text FROM nova_records WHERE session_id = %s ORDER BY seq OFFSET %s",
            (session_id, skip)).fetchall())
        return [str(r[0]) for r in rows]

    def record_count(self, session_id: str) -> int:
        row = self._run("counting transcript records", lambda conn: conn.execute(
            "SELECT COUNT(*) FROM nova_records WHERE session_id = %s", (session_id,)).fetchone())
        return int(row[0]) if row else 0

    def session_version(self, session_id: str) -> tuple[int, float, int] | None:
        """What every write of the session moves, in one query: its last record's sequence number (a
        turn, a compaction, a snip all append records), its row's `updated_at` (a meta change) and its
        task state's version. Equal versions: nothing was written between them. None when the session is
        not recorded."""
        row = self._run_for(session_id, "reading a session's version", lambda conn: conn.execute(
            SESSION_VERSION, (session_id,)).fetchone())
        return version_from_row(row)

    def close(self) -> None:
        """Nothing to release: the pool is the process's, shared with its other stores."""


SESSION_VERSION = ("SELECT s.updated_at, (SELECT MAX(seq) FROM nova_records WHERE session_id = s.id),"
                   " (SELECT version FROM nova_task_state WHERE session_id = s.id) FROM nova_sessions s WHERE s.id = %s")
"""`PostgresSessionStore.session_version`'s query (one parameter, the session's id), for a caller that sends
it along with another statement; `version_from_row` reads its row."""


def version_from_row(row: Sequence[Any] | None) -> tuple[int, float, int] | None:
    """(updated_at, last record, task state version) as `SESSION_VERSION` and `nova_claim` read them;
    None when the session is not recorded."""
    if row is None or row[0] is None:
        return None
    updated_at, last_record, task_version = row
    return int(last_record or 0), float(updated_at), int(task_version or 0)


_INSERT_RECORD = ("INSERT INTO nova_records (session_id, rid, record, written_at) VALUES (%s, %s, %s::json, %s)"
                  " ON CONFLICT (rid) DO NOTHING RETURNING seq")


_APPEND = "SELECT nova_append(%s, %s::text, %s::text, %s, %s::text[], %s::text[], %s::text[], %s::float8[])"
"""Migration 4's function: a record (or none) and the messages that go with it, in one statement."""


def _append_params(session_id: str, rid: str | None, record_json: str | None,
                   messages: Sequence[Message]) -> tuple[Any, ...]:
    """`_APPEND`'s parameters: the messages as four arrays, so the statement is the same whatever their
    number (the server plans it once)."""
    return (session_id, rid, record_json, time.time(), [m.id for m in messages], [m.role for m in messages],
            [message_json(m) for m in messages], [m.created_at for m in messages])
