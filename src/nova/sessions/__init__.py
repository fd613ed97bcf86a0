"""The session record (SPEC SES-1..6): the JSONL raw log, the session store, resume, repair and import.

    from nova.sessions import Session, read_session_file, repair_history

Names load from their modules on first use, so a command that needs one piece (`nova sessions list`
reads only the metadata) does not import the importers, the transcript reader and the store.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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
    "importers": ("ImportedSession", "SessionImportError", "detect_format", "read_session_file"),
    "meta": ("SessionMeta", "new_session_id", "validate_session_id"),
    "repair": ("RepairReport", "repair_history"),
    "schema": ("SCHEMA_VERSION", "SchemaVersionError"),
    "session": ("Session", "delete_session", "list_sessions"),
    "sqlite": ("SQLiteSessionStore",),
    "store": ("SessionRecord", "SessionStore", "StoredMessage"),
    "transcript": ("TailRead", "TornTail", "Transcript"),
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}

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


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'nova.sessions' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"nova.sessions.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return list(__all__)
