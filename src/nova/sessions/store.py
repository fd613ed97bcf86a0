"""`SessionStore`: the queryable side of the session record (sessions, the working messages, task state).

The transcript is the raw, append-only log (audit and resume source). The store holds what other
components query and rewrite: the session index, the working messages with their `compacted` flag and
their snipped content (CMP-3 writes back through `update_message_content`), and canonical task state
(CTX-6), which has its own lifecycle: deleting a session's messages never deletes it (SES-6).

The protocol is deliberately small and uses only JSON-able values and plain SQL-shaped operations
(insert, upsert, update by key, select ordered by a sequence number), so the PostgreSQL backend is the
same statements with `%s` placeholders. Backends raise `StorageError` for anything the caller did wrong
(unknown session, unknown message) and translate their driver errors into it.

Two backends implement it and pass one conformance suite (`tests/sessions/test_store_conformance.py`):
`nova.sessions.sqlite` (the default, `<home>/nova.db`) and `nova.sessions.postgres` (several workers over
one database; `nova.sessions.backend` picks it when a database URL is configured). The PostgreSQL tables
map one to one:
    nova_sessions(id text pk, ..., meta jsonb), nova_messages(session_id, id, seq bigint, role, content
    json, compacted bool, primary key (session_id, id)), nova_task_state(session_id pk, state jsonb,
    version int); each backend keeps its own numbered, forward-only migrations; `put_task_state` is
    `insert ... on conflict do update`, and with an expected version `update ... where version = %s` (or
    `insert ... on conflict do nothing` for version 0), refused when no row changed.

Task state is written from several threads (the session's worker, the TUI, the server's request pool)
and could be from several processes, so its writes are compare-and-set on the row's version: a writer
says which version it read, and a write based on an older one is refused with `TaskStateConflict`
instead of silently replacing a change it never saw.

Beyond the protocol a backend may have one of three declared capabilities, each a protocol of its own
that the backend names among its bases, so callers ask `isinstance` of a declared type instead of
probing for a method: `SetAsideReport` (it replaced an unreadable database as it opened: SQLite),
`RecordStore` (it keeps the transcript's records too: PostgreSQL, see `db_transcript`) and
`ConcurrentWrites` (its connections write at once without queueing: PostgreSQL).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from nova.errors import TaskStateConflict
from nova.messages import Message

__all__ = [
    "SESSION_COLUMNS",
    "ConcurrentWrites",
    "RecordStore",
    "SessionRecord",
    "SessionStore",
    "SetAsideReport",
    "StoredMessage",
    "StoredTaskState",
    "TaskStateConflict",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionRecord:
    """One row of the session index. Totals mirror the session's `meta.json`."""

    id: str
    title: str = ""
    cwd: str = ""
    provider: str = ""
    model: str = ""
    created_at: float = 0.0
    updated_at: float = 0.0
    compacted_at: float | None = None
    parent_id: str = ""
    """The session whose sub-agent this is ("" for none): `list_children` finds them by it."""
    meta: Mapping[str, Any] = field(default_factory=dict)
    """Everything else (git root, token and cost totals, message count) as one JSON object."""

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> SessionRecord:
        """A session read back from a store's row of `SESSION_COLUMNS`. `meta` is the JSON text SQLite
        keeps or the object PostgreSQL's jsonb column is read as."""
        id_, title, cwd, provider, model, created_at, updated_at, compacted_at, meta, parent_id = row
        return cls(id=id_, title=title, cwd=cwd, provider=provider, model=model, created_at=created_at,
                   updated_at=updated_at, compacted_at=compacted_at,
                   meta=json.loads(meta) if isinstance(meta, str) else meta, parent_id=parent_id or "")


# Named, not `*`: a later migration that adds a column must not shift what `SessionRecord.from_row` reads.
SESSION_COLUMNS = "id, title, cwd, provider, model, created_at, updated_at, compacted_at, meta, parent_id"


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A message as the store keeps it: `seq` orders messages within a session."""

    message: Message
    seq: int
    compacted: bool = False


@dataclass(frozen=True, slots=True)
class StoredTaskState:
    """A session's task state as stored, with the version the store gave it (0 means never written)."""

    state: dict[str, Any]
    version: int

    @classmethod
    def from_row(cls, state_json: str, version: int) -> StoredTaskState:
        """A task state read back from a store's row: the JSON text it was written as, and its version."""
        state: dict[str, Any] = json.loads(state_json)
        return cls(state=state, version=int(version))


@runtime_checkable
class SessionStore(Protocol):
    """What every backend implements. Convenience lives in `Session`, not here."""

    # sessions
    def save_session(self, record: SessionRecord) -> None:
        """Insert or replace the session row."""

    def get_session(self, session_id: str) -> SessionRecord | None: ...

    def list_sessions(self) -> list[SessionRecord]:
        """Most recently updated first."""
        ...

    def list_children(self, parent_id: str) -> list[SessionRecord]:
        """The sessions started as sub-agents of `parent_id`, oldest first."""
        ...

    def delete_session(self, session_id: str) -> None:
        """Remove the session row and its messages. Task state is kept (SES-6)."""

    # messages
    def append_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        """Append in order. A message id already stored for the session is ignored (idempotent
        re-recording after a crash between transcript and store)."""

    def get_messages(self, session_id: str, *, include_compacted: bool = False) -> list[StoredMessage]: ...

    def get_rewritten_messages(self, session_id: str) -> list[StoredMessage]:
        """Live (not compacted) messages whose content `update_message_content` replaced, in order.
        Resume lays these over the transcript's copies; the backend must answer from an index, so the
        cost follows the number of rewritten messages, not the length of the session."""
        ...

    def update_message_content(self, session_id: str, message_id: str, message: Message) -> None:
        """Replace a stored message's content (a snip, CMP-3). Unknown id → `StorageError`."""

    def mark_compacted(self, session_id: str, message_ids: Iterable[str]) -> int:
        """Flag messages as folded into a summary; returns how many changed."""
        ...

    # canonical task state (written only by deterministic code, CTX-6)
    def get_task_state(self, session_id: str) -> dict[str, Any] | None: ...

    def get_versioned_task_state(self, session_id: str) -> StoredTaskState | None:
        """The state and its version, read together."""
        ...

    def put_task_state(
        self, session_id: str, state: Mapping[str, Any], *, expected_version: int | None = None
    ) -> int:
        """Write the state; returns its new version (the previous one plus 1). With `expected_version`
        (0: no state yet) the write happens only if that is still the stored version, atomically, else
        `TaskStateConflict` and nothing changes. Without it the write is unconditional."""
        ...

    def close(self) -> None: ...


# -- optional capabilities (see the module docstring) ---------------------------------------------------
@runtime_checkable
class SetAsideReport(Protocol):
    """A store that may have found its database unreadable on opening, moved it aside and started anew."""

    def describe_set_aside(self) -> str:
        """The one warning to give the user when that happened, else "" (sessions are indexed again
        from their transcripts as they are opened)."""
        ...


@runtime_checkable
class RecordStore(Protocol):
    """A store that also keeps the transcript's records, one row each, the record of a session that
    several workers share (`nova.sessions.db_transcript`)."""

    def append_record(self, session_id: str, record_json: str, *, rid: str | None = None,
                      messages: Sequence[Message] = ()) -> int:
        """Store one record (its JSON text as the JSONL line holds it); returns its sequence number.
        `rid` makes a retried append a no-op. `messages` (the record's own message) are appended to the
        session's messages too, as `SessionStore.append_messages` does, in the same transaction: a
        recorded message costs one round trip, not two."""
        ...

    def read_records(self, session_id: str, *, skip: int = 0) -> list[str]:
        """The session's records in order, each as its JSON text, the first `skip` left out."""
        ...


@runtime_checkable
class ConcurrentWrites(Protocol):
    """A store whose connections write at the same time without contending for one lock (a database
    server). A host holding many connections queues the writes of any other store (SQLite's writers
    poll its file lock): see `nova.host.hub`."""

    concurrent_writes: Literal[True]
