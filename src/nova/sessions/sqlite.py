"""The default `SessionStore`: one SQLite file, `<home>/nova.db`, in WAL mode.

WAL lets a reader (`nova sessions list`, the server) run while an agent writes. Schema changes are
numbered, forward-only migrations recorded in `_migrations`; a database whose newest migration is
unknown to this code was written by a newer Nova and is refused rather than guessed at.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

from nova.errors import StorageError
from nova.fs.private import create_private_file
from nova.messages import Message, from_dict
from nova.sessions.schema import json_text, message_json, write_task_state
from nova.sessions.store import (
    SESSION_COLUMNS,
    SessionRecord,
    SessionStore,
    SetAsideReport,
    StoredMessage,
    StoredTaskState,
)

__all__ = ["MIGRATIONS", "SQLiteSessionStore"]

# Append only. Never edit a migration that has shipped: add the next number instead.
MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    (
        1,
        "sessions, messages, task state",
        """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            title TEXT NOT NULL DEFAULT '',
            cwd TEXT NOT NULL DEFAULT '',
            provider TEXT NOT NULL DEFAULT '',
            model TEXT NOT NULL DEFAULT '',
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            compacted_at REAL,
            meta TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX sessions_updated ON sessions(updated_at DESC);
        CREATE TABLE messages (
            session_id TEXT NOT NULL,
            id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            created_at REAL NOT NULL,
            compacted INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (session_id, id)
        );
        CREATE INDEX messages_seq ON messages(session_id, seq);
        CREATE TABLE task_state (
            session_id TEXT PRIMARY KEY,
            state TEXT NOT NULL,
            version INTEGER NOT NULL,
            updated_at REAL NOT NULL
        );
        """,
    ),
    # Resume asks the store only for live rows whose content was rewritten (a snip), so its cost follows
    # the snips, not the session length. A row rewritten before this column existed cannot be told from
    # an untouched one, so every live row counts as rewritten (correct, as slow as before) until a
    # compaction retires it.
    (
        2,
        "messages: rewritten flag and index for resume",
        """
        ALTER TABLE messages ADD COLUMN rewritten INTEGER NOT NULL DEFAULT 0;
        UPDATE messages SET rewritten = 1 WHERE compacted = 0;
        CREATE INDEX messages_rewritten ON messages(session_id, seq) WHERE rewritten = 1 AND compacted = 0;
        """,
    ),
    # Sub-agents: a child session names its parent, so `nova sessions show` lists a session's children
    # without reading every session. Existing sessions are top-level ('').
    (
        3,
        "sessions: parent id of a sub-agent's session",
        """
        ALTER TABLE sessions ADD COLUMN parent_id TEXT NOT NULL DEFAULT '';
        CREATE INDEX sessions_parent ON sessions(parent_id) WHERE parent_id != '';
        """,
    ),
)


F = TypeVar("F", bound=Callable[..., Any])


def _serialized(method: F) -> F:
    """One call at a time on the shared connection: the server and the TUI reach a session from their
    request threads and the agent's worker thread alike."""

    @functools.wraps(method)
    def wrapper(self: SQLiteSessionStore, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)

    return cast(F, wrapper)


class SQLiteSessionStore(SessionStore, SetAsideReport):
    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        self.set_aside: Path | None = None
        """Where an unreadable database found at `path` was moved (this store then started empty)."""
        self.set_aside_reason = ""
        try:
            self._connect(path)
        except sqlite3.DatabaseError as exc:
            if str(path) == ":memory:" or not _is_damage(exc):
                raise StorageError(f"cannot open the session store {path}: {exc}") from None
            db = getattr(self, "_db", None)
            if db is not None:
                db.close()
            self.set_aside_reason = str(exc)
            self.set_aside = self._move_damaged_aside()
            try:
                self._connect(path)
            except sqlite3.Error as again:
                raise StorageError(f"cannot open the session store {path}: {again}") from None
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open the session store {path}: {exc}") from None

    def _connect(self, path: Path | str) -> None:
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Created private before SQLite opens it; its -wal and -shm files take the same mode.
            create_private_file(self.path)
        # isolation_level=None: explicit BEGIN/COMMIT, so each public call is one transaction.
        # check_same_thread=False is safe here because every public method holds `_lock`.
        self._db = sqlite3.connect(str(path), isolation_level=None, timeout=10.0, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode: a power cut can lose the last commits, never corrupt the file; the
        # transcript, fsynced at turn end, is the durable record.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=10000")
        self._migrate()

    def _move_damaged_aside(self) -> Path | None:
        """Rename the unreadable database (and its -wal/-shm) to `nova.db.corrupt-<time>`. Several
        processes can find the same damage at once: an exclusive flock on the damaged file makes one of
        them move it; the others find a different file at the path by then and just open that (SQLite
        takes POSIX record locks, which do not interact with flock)."""
        import fcntl

        from nova.sessions.rebuild import set_aside

        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StorageError(f"cannot open the session store {self.path}: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                return None  # another process moved it while we waited
            target = set_aside(self.path)
            for suffix in ("-wal", "-shm"):
                side = self.path.with_name(self.path.name + suffix)
                if side.exists():
                    os.replace(side, target.with_name(target.name.replace(".corrupt-", suffix + ".corrupt-", 1)))
            return target
        finally:
            os.close(fd)

    @_serialized
    def quick_check(self) -> str:
        """"" when SQLite finds the database sound, else what it found (for `nova sessions doctor`)."""
        try:
            rows = self._db.execute("PRAGMA quick_check").fetchall()
        except sqlite3.DatabaseError as exc:
            return str(exc)
        found = "; ".join(str(r[0]) for r in rows)
        return "" if found == "ok" else found

    def describe_set_aside(self) -> str:
        """The one warning to give when this store replaced a damaged database, else ""."""
        if self.set_aside is None:
            return ""
        return (f"the session store {self.path} was unreadable ({self.set_aside_reason}); it was moved to "
                f"{self.set_aside} and a new one started. Sessions are indexed again from their transcripts "
                "as they are opened (`nova sessions doctor --all` does all of them now)")

    # -- migrations ---------------------------------------------------------------------------------
    def _migrate(self) -> None:
        db = self._db
        db.execute(
            "CREATE TABLE IF NOT EXISTS _migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL)"
        )
        applied = {row[0] for row in db.execute("SELECT id FROM _migrations")}
        known = {number for number, _, _ in MIGRATIONS}
        if applied - known:
            raise StorageError(
                f"{self.path} was migrated by a newer Nova (migration {max(applied)}); upgrade Nova to use it"
            )
        for number, name, sql in MIGRATIONS:
            if number in applied:
                continue
            db.execute("BEGIN IMMEDIATE")
            try:
                # Another process may have applied it while we waited for the write lock.
                if db.execute("SELECT 1 FROM _migrations WHERE id = ?", (number,)).fetchone() is None:
                    for statement in sql.split(";"):
                        if statement.strip():
                            db.execute(statement)
                    db.execute("INSERT INTO _migrations VALUES (?, ?, ?)", (number, name, time.time()))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def _write(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        try:
            return self._db.execute(sql, params)
        except sqlite3.Error as exc:
            raise StorageError(f"session store {self.path}: {exc}") from None

    # -- sessions -----------------------------------------------------------------------------------
    @_serialized
    def save_session(self, record: SessionRecord) -> None:
        self._write(
            "INSERT OR REPLACE INTO sessions (id, title, cwd, provider, model, created_at, updated_at,"
            " compacted_at, meta, parent_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                record.id,
                record.title,
                record.cwd,
                record.provider,
                record.model,
                record.created_at,
                record.updated_at,
                record.compacted_at,
                json_text(dict(record.meta)),
                record.parent_id,
            ),
        )

    @_serialized
    def get_session(self, session_id: str) -> SessionRecord | None:
        row = self._write(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return SessionRecord.from_row(row) if row else None

    @_serialized
    def list_sessions(self) -> list[SessionRecord]:
        rows = self._write(f"SELECT {SESSION_COLUMNS} FROM sessions ORDER BY updated_at DESC, id").fetchall()
        return [SessionRecord.from_row(r) for r in rows]

    @_serialized
    def list_children(self, parent_id: str) -> list[SessionRecord]:
        # `!= ''` lets SQLite use the partial index (it cannot know the parameter is not empty).
        rows = self._write(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE parent_id = ? AND parent_id != ''"
                           " ORDER BY created_at, id", (parent_id,)).fetchall()
        return [SessionRecord.from_row(r) for r in rows]

    @_serialized
    def delete_session(self, session_id: str) -> None:
        with self._transaction() as db:
            db.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
            db.execute("DELETE FROM sessions WHERE id = ?", (session_id,))

    # -- messages -----------------------------------------------------------------------------------
    @_serialized
    def append_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        if not messages:
            return
        with self._transaction() as db:
            (last,) = db.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = ?", (session_id,)
            ).fetchone()
            for offset, message in enumerate(messages, start=1):
                db.execute(
                    "INSERT OR IGNORE INTO messages (session_id, id, seq, role, content, created_at)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    (session_id, message.id, last + offset, message.role, message_json(message), message.created_at),
                )

    @_serialized
    def get_messages(self, session_id: str, *, include_compacted: bool = False) -> list[StoredMessage]:
        sql = "SELECT content, seq, compacted FROM messages WHERE session_id = ?"
        if not include_compacted:
            sql += " AND compacted = 0"
        rows = self._write(sql + " ORDER BY seq", (session_id,)).fetchall()
        return [StoredMessage(from_dict(json.loads(c)), seq, bool(flag)) for c, seq, flag in rows]

    @_serialized
    def get_rewritten_messages(self, session_id: str) -> list[StoredMessage]:
        # Served by the partial index `messages_rewritten`: no row outside it is read.
        rows = self._write(
            "SELECT content, seq FROM messages WHERE session_id = ? AND rewritten = 1 AND compacted = 0 ORDER BY seq",
            (session_id,),
        ).fetchall()
        return [StoredMessage(from_dict(json.loads(c)), seq, False) for c, seq in rows]

    @_serialized
    def update_message_content(self, session_id: str, message_id: str, message: Message) -> None:
        if message.id != message_id:
            message = Message(message.role, message.parts, message_id, message.created_at, message.metadata)
        cursor = self._write(
            "UPDATE messages SET content = ?, role = ?, rewritten = 1 WHERE session_id = ? AND id = ?",
            (message_json(message), message.role, session_id, message_id),
        )
        if cursor.rowcount == 0:
            raise StorageError(f"session {session_id} has no message {message_id}")

    @_serialized
    def mark_compacted(self, session_id: str, message_ids: Iterable[str]) -> int:
        ids = list(message_ids)
        changed = 0
        for start in range(0, len(ids), 500):  # stay under SQLite's bound-parameter limit
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            cursor = self._write(
                f"UPDATE messages SET compacted = 1 WHERE session_id = ? AND compacted = 0 AND id IN ({marks})",
                (session_id, *chunk),
            )
            changed += cursor.rowcount
        return changed

    # -- task state ---------------------------------------------------------------------------------
    @_serialized
    def get_task_state(self, session_id: str) -> dict[str, Any] | None:
        stored = self._read_task_state(session_id)
        return stored.state if stored is not None else None

    @_serialized
    def get_versioned_task_state(self, session_id: str) -> StoredTaskState | None:
        return self._read_task_state(session_id)

    def _read_task_state(self, session_id: str) -> StoredTaskState | None:
        row = self._write("SELECT state, version FROM task_state WHERE session_id = ?", (session_id,)).fetchone()
        return None if row is None else StoredTaskState.from_row(row[0], row[1])

    @_serialized
    def put_task_state(
        self, session_id: str, state: Mapping[str, Any], *, expected_version: int | None = None
    ) -> int:
        def upsert(text: str, now: float) -> int:
            rows = self._write(
                "INSERT INTO task_state (session_id, state, version, updated_at) VALUES (?, ?, 1, ?)"
                " ON CONFLICT(session_id) DO UPDATE SET state = excluded.state,"
                " version = task_state.version + 1, updated_at = excluded.updated_at RETURNING version",
                (session_id, text, now),
            ).fetchall()  # read to the end: the statement (and its write lock) finishes only then
            return int(rows[0][0])

        def insert_new(text: str, now: float) -> int:
            return self._write(
                "INSERT INTO task_state (session_id, state, version, updated_at) VALUES (?, ?, 1, ?)"
                " ON CONFLICT(session_id) DO NOTHING",
                (session_id, text, now),
            ).rowcount

        def update_at(text: str, now: float, version: int) -> int:
            return self._write(
                "UPDATE task_state SET state = ?, version = version + 1, updated_at = ?"
                " WHERE session_id = ? AND version = ?",
                (text, now, session_id, version),
            ).rowcount

        return write_task_state(session_id, state, expected_version, upsert=upsert, insert_new=insert_new,
                                update_at=update_at)

    @_serialized
    def close(self) -> None:
        self._db.close()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE … COMMIT, rolled back on any error); a SQLite error
        becomes a StorageError naming the store."""
        db = self._db
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise StorageError(f"session store {self.path}: {exc}") from None


def _is_damage(exc: sqlite3.DatabaseError) -> bool:
    """A file SQLite cannot read as a database (garbage, a damaged header or page), as opposed to one it
    cannot get at right now (locked, busy, a full disk, no permission): only the first is moved aside."""
    if isinstance(exc, sqlite3.OperationalError):
        return False
    text = str(exc).lower()
    return "not a database" in text or "malformed" in text or "corrupt" in text
