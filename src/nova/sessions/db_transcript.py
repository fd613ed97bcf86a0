"""The transcript when the session store is a shared database: every record is a row first, then the
local JSONL line.

The rows (`nova_records`, one per record, the record's JSON exactly as the line holds it) are the
record of the session; the JSONL file in the session directory is this worker's copy of them, which the
readers (resume, export, doctor) keep using unchanged. A worker that is about to run a turn on a session
rewrites its copy from the rows first (`materialize`), so a session written by another worker, on this
host or another one, resumes from everything that worker stored, including the records of a turn it
never finished. An append returns only once its row is committed: whatever a client was sent had been
stored before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from nova.errors import StorageError
from nova.fs.private import FOLDER_MODE, private_dir, replace_private_file
from nova.messages import Message
from nova.model import Usage
from nova.sessions.meta import ARTIFACT_DIRS, SessionMeta, session_dir, write_meta
from nova.sessions.schema import encode, message_record
from nova.sessions.store import RecordStore, SessionRecord, SessionStore
from nova.sessions.transcript import TRANSCRIPT_NAME, Transcript

__all__ = ["DatabaseTranscript", "materialize", "open_transcript"]


class DatabaseTranscript(Transcript):
    def __init__(self, path: Path, store: RecordStore, session_id: str) -> None:
        super().__init__(path)
        self._records = store
        self._session_id = session_id

    stores_messages = True

    def append(self, record: Mapping[str, Any]) -> None:
        self._append(record, ())

    def append_message(self, message: Message, usage: Usage | None = None) -> None:
        """The record's row and the message's row of the store, in one transaction."""
        self._append(message_record(message, usage), (message,))

    def _append(self, record: Mapping[str, Any], messages: Sequence[Message]) -> None:
        line = encode(record)
        self._records.append_record(self._session_id, line.decode("utf-8").rstrip("\n"), messages=messages)
        super().append(record)

    def append_messages(self, entries: Iterable[tuple[Message, Usage | None]]) -> None:
        # Each record is a row of its own: one at a time, as `append` writes them.
        for message, usage in entries:
            self.append_message(message, usage)


def open_transcript(path: Path, store: SessionStore, session_id: str) -> Transcript:
    """The transcript a session writes: rows and a local copy with a `RecordStore`, else the file alone."""
    if isinstance(store, RecordStore):
        return DatabaseTranscript(path, store, session_id)
    return Transcript(path)


def materialize(home: Path, session_id: str, store: SessionStore) -> bool:
    """Write the session directory of `session_id` from the database (meta.json from its row, the
    transcript from its records), creating it if this worker never saw the session. False when the
    database does not know the session. Call it only while holding the session's turn lock."""
    if not isinstance(store, RecordStore):
        return session_dir(home, session_id).is_dir()
    row = store.get_session(session_id)
    if row is None:
        return False
    directory = session_dir(home, session_id)
    try:
        private_dir(home)
        private_dir(directory.parent)
        directory.mkdir(mode=FOLDER_MODE, exist_ok=True)
        for path in (directory, *(directory / name for name in ARTIFACT_DIRS)):
            private_dir(path)
        _sync_copy(directory / TRANSCRIPT_NAME, store, session_id)
        write_meta(directory, meta_from_row(row))
    except OSError as exc:
        raise StorageError(f"cannot write session directory {directory}: {exc.strerror}") from None
    return True


def _sync_copy(target: Path, store: RecordStore, session_id: str) -> None:
    """Bring this worker's copy of the transcript up to the rows: append the records it lacks when its
    last line is the row of the same position (the usual case: it only missed the turns other workers
    ran), else write it anew. Costs what the missing records cost, not the whole session."""
    try:
        have = target.read_bytes()
    except FileNotFoundError:
        have = b""
    lines = have.count(b"\n")
    if lines and have.endswith(b"\n"):
        last = have[have.rfind(b"\n", 0, len(have) - 1) + 1 : -1].decode("utf-8", errors="replace")
        rows = store.read_records(session_id, skip=lines - 1)
        if rows and rows[0] == last:
            if len(rows) > 1:
                with target.open("ab") as f:
                    f.write("".join(line + "\n" for line in rows[1:]).encode("utf-8"))
            return
    data = "".join(line + "\n" for line in store.read_records(session_id)).encode("utf-8")
    replace_private_file(target, data)


def meta_from_row(row: SessionRecord) -> SessionMeta:
    extra = dict(row.meta)
    usage = extra.get("usage")
    return SessionMeta(
        id=row.id, title=row.title, cwd=row.cwd, git_root=str(extra.get("git_root") or ""), provider=row.provider,
        model=row.model, created_at=row.created_at, updated_at=row.updated_at,
        message_count=int(extra.get("message_count") or 0),
        usage=Usage.from_dict(usage) if isinstance(usage, dict) else Usage(),
        cost_usd=float(extra.get("cost_usd") or 0.0), compacted_at=row.compacted_at,
        extra=dict(nested) if isinstance(nested := extra.get("extra"), dict) else {},
    )
