"""The session record (SPEC SES-1..6): the JSONL raw log, the session store, resume, repair and import.

    from nova.sessions import Session, read_session_file, repair_history

Names load from their modules on first use, so a command that needs one piece (`nova sessions list`
reads only the metadata) does not import the importers, the transcript reader and the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nova.lazy import lazy_exports

if TYPE_CHECKING:
    from nova.sessions.importers import ImportedSession, SessionImportError, detect_format, read_session_file
    from nova.sessions.meta import SessionMeta, new_session_id, validate_session_id
    from nova.sessions.repair import RepairReport, repair_history
    from nova.sessions.schema import SCHEMA_VERSION, SchemaVersionError
    from nova.sessions.session import Session, delete_session, list_sessions
    from nova.sessions.sqlite import SQLiteSessionStore
    from nova.sessions.store import SessionRecord, SessionStore, StoredMessage
    from nova.sessions.transcript import TailRead, TornTail, Transcript

_HOMES = {
    "nova.sessions.importers": ("ImportedSession", "SessionImportError", "detect_format", "read_session_file"),
    "nova.sessions.meta": ("SessionMeta", "new_session_id", "validate_session_id"),
    "nova.sessions.repair": ("RepairReport", "repair_history"),
    "nova.sessions.schema": ("SCHEMA_VERSION", "SchemaVersionError"),
    "nova.sessions.session": ("Session", "delete_session", "list_sessions"),
    "nova.sessions.sqlite": ("SQLiteSessionStore",),
    "nova.sessions.store": ("SessionRecord", "SessionStore", "StoredMessage"),
    "nova.sessions.transcript": ("TailRead", "TornTail", "Transcript"),
}

__all__ = [
    "SCHEMA_VERSION",
    "ImportedSession",
    "RepairReport",
    "SQLiteSessionStore",
    "SchemaVersionError",
    "Session",
    "SessionImportError",
    "SessionMeta",
    "SessionRecord",
    "SessionStore",
    "StoredMessage",
    "TailRead",
    "TornTail",
    "Transcript",
    "delete_session",
    "detect_format",
    "list_sessions",
    "new_session_id",
    "read_session_file",
    "repair_history",
    "validate_session_id",
]

__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__)
