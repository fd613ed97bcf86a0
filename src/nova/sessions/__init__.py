"""The session record (SPEC SES-1..6): the JSONL raw log, the session store, resume, repair and import.

    from nova.sessions import Session, read_session_file, repair_history
"""

from __future__ import annotations

from nova.sessions.importers import ImportedSession, SessionImportError, detect_format, read_session_file
from nova.sessions.meta import SessionMeta, new_session_id, validate_session_id
from nova.sessions.repair import RepairReport, repair_history
from nova.sessions.schema import SCHEMA_VERSION, SchemaVersionError
from nova.sessions.session import Session, delete_session, list_sessions
from nova.sessions.sqlite import SQLiteSessionStore
from nova.sessions.store import SessionRecord, SessionStore, StoredMessage
from nova.sessions.transcript import TailRead, TornTail, Transcript

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
